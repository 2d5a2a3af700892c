#pragma once
// Gathering live facts: one probe per node over the CommandRunner, all
// nodes at once, one round trip each. A node that cannot be reached gets
// a facts document saying why ("unreachable"), and the others are
// unaffected.

#include <string>
#include <vector>

#include "gpuexpand/facts/package_answers.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/steps/facts_request.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

// What a node's probe asks: what its steps need to decide, and with
// reference nodes in the spec also what the consistency set names. A
// reference node (of spec.reference_nodes) runs no step checks and nothing
// is asked of a controller for it: it is only read.
// With `facts` (the node's from its last probe), also what renders only
// with them: the executor's probes after the first. `last_phase`: only
// what phases up to it need (apply --until; steps_to_probe says when not).
FactsRequest node_probe_request(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                                const nlohmann::json* facts = nullptr, const std::string& last_phase = "");
bool is_reference_node(const ClusterSpec& spec, const NodeSpec& node);

// A request cut to what a run that decides (plan, apply, verify) reads:
// no free space (only `doctor` judges it) and no RDMA ports where the
// node's spec wants no RDMA (network.rdma.kind none or unset: nothing then
// reads them, acceptance included), each a program on every node and
// probe. Both stay where a playbook reads them (plan.hpp:
// playbooks_read_shown_facts). `facts` and `doctor` ask them as before.
void keep_what_decisions_read(FactsRequest& request, const NodeSpec& node, const PlaybookSet& playbooks);

// `runner` must have been made with one endpoint per entry of `nodes`, in
// that order (endpoints_for). Returns facts for every node (unreachable ones
// included). `nodes` may hold reference nodes too.
// `gpu_details`: FactsRequest::gpu_details, for what shows facts (`facts`);
// without, what decides (keep_what_decisions_read).
// `sessions`: Close when the caller runs nothing more on the nodes (facts,
// plan): each node's session is closed as soon as its probe is in, so a
// fleet's sessions are not all held to the end; Keep when more follows on
// the same runner (apply of a saved plan, verify).
// `answers`: where the nodes' earlier package answers are found and the
// new ones kept (package_answers.hpp); null: none is reused.
enum class AfterProbe { Keep, Close };
FactsByNode gather_facts(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                         const PlaybookSet& playbooks, CommandRunner& runner, const std::string& collected_at,
                         bool gpu_details = false, AfterProbe sessions = AfterProbe::Keep,
                         PackageAnswers* answers = nullptr);

// One probe of one node with an explicit request (init --from): its facts,
// or {"unreachable": why}.
nlohmann::json probe_node(CommandRunner& runner, size_t endpoint, const std::string& node, const FactsRequest& request,
                          const std::string& collected_at);

// Endpoints for the selected nodes from the spec's ssh settings, then one
// per distinct controller of theirs (plan/controller.hpp).
std::vector<NodeEndpoint> endpoints_for(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes);

}  // namespace gpuexpand
