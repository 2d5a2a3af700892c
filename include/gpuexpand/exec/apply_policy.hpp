#pragma once
// What `apply` decides around the executor, apart from how it is shown
// (cli/cmd_apply.cpp prints): what a saved plan allows, whether its nodes
// moved since it was made, taking over the locks of a run whose process
// died, the multi-node check over the nodes that passed, and the run's
// outcome as an exit code and a run status.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/exec/executor.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/plan/saved_plan.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/transport/runner.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// apply's preflight over the network: each Slurm controller the selected
// nodes name runs `true` once, before any node is touched. A controller
// that cannot be reached would otherwise fail the scheduler phase after
// the driver was installed and the node rebooted. One line per controller
// that did not answer, naming the nodes that need it; empty when all did.
std::vector<std::string> unreachable_controllers(const std::vector<const NodeSpec*>& nodes, CommandRunner& runner);

// (What a saved plan allows: plan/saved_plan.hpp.)

// The nodes whose decision facts differ now from the plan's (or that
// cannot be reached), in the order of `nodes`.
std::vector<std::string> drifted_since_plan(const std::vector<const NodeSpec*>& nodes, const FactsByNode& now,
                                            const std::map<std::string, std::string>& facts_digests);

// Begins the run with its node locks. A holder on this host whose process
// is gone (SIGKILL, power loss) is taken over once, and `on_takeover`
// hears of it first: that is the resume (recorded at `now`, RFC 3339). A
// live holder: the conflict.
struct RunStart {
  int64_t run_id = 0;                     // 0 when `conflict` is set
  std::optional<LockConflict> conflict;   // a live run holds some of the nodes
};
Result<RunStart> begin_run_resuming(StateStore& store, const RunRecord& record, const std::string& now,
                                    const std::function<void(const LockConflict&)>& on_takeover);

// After the nodes: the multi-node check (exec/multinode.hpp's policy) over
// the nodes that passed acceptance in this run and converged, results to
// the journal. A failure fails the run but drains nobody: it does not say
// which node is at fault.
bool apply_multinode_check(const ExecutionReport& report, CommandRunner& runner,
                           const std::vector<const NodeSpec*>& nodes, RunJournal& journal);

// kExitOk: every node converged; kExitInterrupted: stopped by a signal;
// kExitPartial: a node failed, was unreachable or not started, or the
// multi-node check failed.
int apply_exit_code(const ExecutionReport& report, bool stop_requested, bool multinode_ok);
RunStatus run_status_for(int exit_code);

}  // namespace gpuexpand
