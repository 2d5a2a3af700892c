#pragma once
// The plan: per node, per phase, what would change and why. Made by a
// pure function of (node spec, playbooks, facts): no I/O at all, so CI can
// plan against recorded facts and `apply` decides with the same code.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/steps/step.hpp"

namespace gpuexpand {

struct PhasePlan {
  std::string phase;
  std::vector<PlannedChange> changes;  // empty: the phase is converged
  std::vector<ResolvedStep> steps;     // the steps behind the changes, in order
};

enum class NodeStatus { Changes, Unchanged, Unreachable, Error };
std::string status_name(NodeStatus status);

struct NodePlan {
  std::string node;
  std::string address;
  std::string rack;                 // from the spec, for readers of the plan document
  std::vector<std::string> groups;
  // Other values that are the node's own, as the text plan names them when
  // it folds nodes together: {"{ib0.address}", "10.100.1.1/16"}.
  std::vector<std::pair<std::string, std::string>> own_values;
  NodeStatus status = NodeStatus::Unchanged;
  std::string message;       // why unreachable, or the planning error
  std::string facts_sha256;  // apply refuses a saved plan when facts moved
  std::vector<PhasePlan> phases;  // only phases with changes
  // The facts as the planner predicts them after apply (the consistency
  // report compares them with reference nodes); null when not planned.
  std::shared_ptr<const nlohmann::json> predicted_facts;
  size_t change_count() const;
};

struct PlanSummary {
  size_t nodes = 0, to_change = 0, unchanged = 0, unreachable = 0, errors = 0, changes = 0;
  size_t reboots = 0;  // nodes the plan reboots
};

struct Plan {
  // 2: nodes with the same phases share one entry of "plans" (per-node
  // values as {node.name}, {node.address}, {IF.address}); nodes carry rack
  // and groups. docs/plan-format.md.
  static constexpr int kFormatVersion = 2;
  std::string cluster;
  std::string spec_file;
  std::string spec_sha256;
  std::string playbooks_sha256;
  std::string created_at;  // RFC 3339, UTC
  std::vector<NodePlan> nodes;
  PlanSummary summary() const;
  bool has_changes() const;
};

// The plan of a run that stops after `last_phase` (apply --until): the
// later phases' changes dropped, and a node left without any is unchanged.
// An unknown phase name leaves the plan as it is.
void keep_phases_until(Plan& plan, const std::string& last_phase);

// The plan document `plan -o json` prints and `plan --out` saves
// (schemas/plan.schema.json, docs/plan-format.md): 1,000 nodes of one
// build are one entry of "plans", not 1,000 copies of every file.
nlohmann::json plan_to_json(const Plan& plan);
// One node's phases as the document has them before folding: what a
// reader gets back by expanding its entry of "plans" with its values.
nlohmann::json node_phases_json(const NodePlan& node);

// Node name -> facts document (facts.schema.json). A node missing from the
// map, or whose document has "unreachable", is planned as unreachable.
using FactsByNode = std::map<std::string, nlohmann::json>;

// Plans one node. Template or condition errors make the node an Error
// with the playbook location in its message; other nodes are unaffected.
NodePlan plan_node(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                   const nlohmann::json* facts);

Plan make_plan(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes, const PlaybookSet& playbooks,
               const FactsByNode& facts, const std::string& created_at);

// SHA-256 over the parts of a facts document that decisions read (not the
// collection time, free space, temperatures or clock state, which move on
// their own): a saved plan is applied only to nodes whose digest still
// matches.
std::string decision_facts_digest(const nlohmann::json& facts);

// Every step instance of every phase rendered against the node's spec (and
// `facts` once gathered) whose `when` can still hold: a condition is
// evaluated with the facts not gathered yet treated as unknown, and only a
// step whose condition is false whatever they turn out to be is skipped.
// What the facts probe must look at. A parameter that
// cannot be rendered yet is left out and its name listed under
// kProbePending. Steps for the controller are rendered again with the
// node's facts before the controller is asked (facts/gather.hpp).
// `last_phase` (apply --until): the steps of later phases are not probed,
// as that run neither runs nor verifies them; unless a phase has a
// condition, parameter or label that reads a section only steps ask for
// (facts.packages, facts.files, facts.checks, ...), which another phase's
// step may be the one to ask.
std::vector<ResolvedStep> steps_to_probe(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                                         const nlohmann::json* facts = nullptr, const std::string& last_phase = "");

// Whether any phase's condition, parameter or label reads the facts only
// `facts` and `doctor` show and a deciding probe may leave out
// (facts/gather.hpp): facts.network beyond its interfaces (the RDMA ports),
// facts.disk_free_bytes.
bool playbooks_read_shown_facts(const PlaybookSet& playbooks);

// The acceptance settings of `node` as its acceptance step renders them
// (the playbook's declared checks, the spec's expectations): what `verify`
// checks, the same as apply's acceptance phase. Without an acceptance step
// in the playbooks, every builtin check. `facts`: for templates that read them.
nlohmann::json node_acceptance_settings(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                                        const nlohmann::json* facts = nullptr);

}  // namespace gpuexpand
