#pragma once
// Acceptance: is this node fit to be handed jobs? Run as the last phase of
// `apply` and alone as `gpuexpand verify`. Checks that facts can answer
// (GPU count/model/driver/persistence/ECC, interface MTU and state) are
// decided here in C++ from the facts document; checks that must act on the
// node (a test job through Slurm, a ping with the don't-fragment bit at the
// full MTU, a write to each mount, a scrape of each exporter) run in one
// `sh -s` script whose result lines are parsed here. Every value that reaches
// the script is shell-quoted.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/accept/check_result.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// Where a node that passed acceptance records the settings it passed with:
// the acceptance phase plans a change while this file does not hold the
// node's current acceptance settings.
inline constexpr const char* kAcceptanceRecordPath = "/var/lib/gpuexpand/accepted.json";

// The name of the maintenance reservation that holds a node for
// acceptance jobs only, from registration until it passes.
std::string acceptance_reservation(const std::string& node);

// Everything acceptance needs from a node's template variables
// (playbook_variables()): which checks apply, what GPUs, interfaces, mounts,
// exporters and scheduler registration to expect. Part of the plan, so
// `apply plan.json` checks exactly what was reviewed.
//
// `declared`: the checks the acceptance step of playbooks/70-acceptance.yaml
// lists ([{name}, {name, command, timeout}]; null: every builtin check). A
// builtin check runs only when declared there (and, when the spec has
// validation.checks, listed there too); a declared check with a `command`
// is the playbook's own and runs on the node after the builtin ones.
nlohmann::json acceptance_settings(const nlohmann::json& vars, const nlohmann::json& declared = nullptr);

// "scheduler", "gpu", "network", "storage", "monitoring", "multinode".
const std::vector<std::string>& builtin_checks();
// A `checks` list as the playbook may declare it: unique names, a builtin
// name without a command, any other name with one.
Result<void> check_declared_checks(const nlohmann::json& declared);

// The content of kAcceptanceRecordPath after passing with `settings`.
std::string acceptance_record(const nlohmann::json& settings);

// Checks answered from facts alone ("gpu", and the MTU/state part of
// "network"); only those `settings` enables.
std::vector<CheckResult> facts_checks(const nlohmann::json& settings, const nlohmann::json& facts);

enum class AcceptanceMode {
  Apply,   // before the job: resume a node gpuexpand drained for a failed acceptance
  Verify,  // look only
};

// For the ping test: compute interface name -> a peer's IPv4 address on
// the same network (another node of the run), absent when there is none.
using PingPeers = std::map<std::string, std::string>;

// Another node of the run with an IPv4 address on each interface the
// settings name: the first in `others` (facts documents) that has one.
PingPeers ping_peers(const nlohmann::json& settings, const std::vector<const nlohmann::json*>& others);

// For ib_write_bw: pairs of the node's active RDMA ports (facts
// network.rdma) that can reach each other: of one link layer (an
// InfiniBand HCA is not paired with a RoCE NIC), InfiniBand ports under one
// subnet manager (sm_lid), RoCE ports whose netdevs share an IPv4 subnet
// (rail-optimized fabrics put each rail on its own); sorted: (p0,p1),
// (p2,p3), …, an odd last one with p0. Each pair runs
// RDMA writes from one HCA to the other, through the fabric (the HCAs are
// separate ports on the switch); no other node is involved.
struct RdmaPort {
  std::string device;
  long port = 1;
  bool operator==(const RdmaPort&) const = default;
};
using RdmaPairs = std::vector<std::pair<RdmaPort, RdmaPort>>;
RdmaPairs rdma_pairs(const nlohmann::json& facts);

// What the node-side script needs from the node's facts.
struct NodeHardware {
  RdmaPairs rdma;  // rdma_pairs(facts)
  long gpus = 0;   // GPUs found: with two or more, all_reduce_perf (nccl-tests) runs over them where installed
};
NodeHardware node_hardware(const nlohmann::json& facts);

// The node-side checks as one POSIX sh script; it prints one line per
// result, "@@check NAME pass|fail|skip SECONDS DETAIL", "@@held RESERVATION"
// when the scheduler's test job ran in the node's acceptance reservation,
// and "@@end" last.
std::string acceptance_script(const nlohmann::json& settings, const PingPeers& peers, AcceptanceMode mode,
                              const NodeHardware& hardware = {});

// The script's result lines, one result per check (several lines of one
// check merge: any fail fails it, all skipped skips it, details joined).
std::vector<CheckResult> parse_acceptance_output(std::string_view output);

// Facts results and script results together, one per check, in the order
// of settings["checks"]; a check that produced no line at all fails
// ("no result: the script stopped early").
// `script_finished` false (no end marker: the connection dropped, the
// shell died): every check with node-side work fails instead of passing on
// facts alone.
std::vector<CheckResult> merge_check_results(const nlohmann::json& settings, std::vector<CheckResult> from_facts,
                                             std::vector<CheckResult> from_script, bool script_finished = true);
bool acceptance_script_finished(std::string_view output);

bool all_passed(const std::vector<CheckResult>& results);  // no "fail"

// "gpu: 7 GPUs, expected 8; storage: /mnt/shared not mounted"
std::string failure_summary(const std::vector<CheckResult>& results);

// After a pass: release the hold and write the record. After a failure:
// drain the node with the failed checks as the reason (Slurm only; the
// reservation stays, so the node takes no user job either way).
struct AcceptanceCommand {
  std::string command;
  std::string stdin_data;
};
AcceptanceCommand release_command(const nlohmann::json& settings);
std::string drain_command(const nlohmann::json& settings, const std::string& reason);

// The multi-node check's jobs: `count` nodes split into jobs of `per_job`
// nodes (validation.multinode_nodes; below 2 = one job over all of them),
// as indexes. A last job that would hold one node joins the one before: no
// job runs on a single node, every node is in exactly one job.
std::vector<std::vector<size_t>> multinode_groups(size_t count, long per_job);

// The multi-node check: one job spanning `nodes`, run from the first.
std::string multinode_command(const std::vector<std::string>& nodes, int job_timeout_seconds);
CheckResult multinode_result(const std::vector<std::string>& nodes, int exit_code, const std::string& output,
                             double seconds);

}  // namespace gpuexpand
