#pragma once
// What `apply` shows, apart from what it decides (exec/): the console lines
// of a run as it goes, one per finished phase and node, and the summary
// after it. Plain text: readable in a terminal, greppable in CI logs.
// Tested by exact text (tests/unit/views_test.cpp).

#include <memory>
#include <ostream>
#include <string>

#include "gpuexpand/exec/executor.hpp"

namespace gpuexpand {

// A RunJournal that prints to `out` (the state store's journal forwards to it).
// `quiet` (-q): only what failed: failed phases and checks, unreachable
// nodes, a stopped rollout.
std::unique_ptr<RunJournal> make_apply_console(std::ostream& out, bool quiet = false);

// "4 nodes: 3 changed, 0 unchanged, 1 failed, 0 unreachable[, N not started][, N interrupted] (12.3 s)\n"
std::string apply_summary_line(const ExecutionReport& report, size_t nodes, double seconds);

// Ansible's recap, for a run that left nodes unfinished ("" when every node
// changed or had nothing to change): each outcome with its nodes folded,
// then the failures grouped by reason (the node's own name and address
// taken out of the message, so one reason shared by 40 nodes is one line),
// then `retry_command`, which runs again on exactly the unfinished nodes.
//
//   Recap:
//     changed      node-[01-02]
//     failed       node-03
//     unreachable  node-[05-06]
//   Failures by reason:
//     node-03: phase os-init, step base-packages: `apt-get …` exited 100: E: …
//     node-[05-06]: connection refused
//   Retry only the nodes that did not finish:
//     gpuexpand apply spec.yaml --limit @failed
std::string apply_recap(const ExecutionReport& report, const std::string& retry_command);

// The lines `verify` prints for one node's results:
// "NODE  pass|FAIL|skip  CHECK (1.5 s): DETAIL", one per check.
std::string check_result_lines(const std::string& node, const std::vector<CheckResult>& results);

// "node-03  UNREACHABLE: REASON\n"
std::string unreachable_node_line(const std::string& node, const std::string& reason);

// "4 nodes: 3 passed, 1 failed, 0 unreachable (3.3 s)\n"
std::string verify_summary_line(size_t nodes, size_t passed, size_t failed, size_t unreachable, double seconds);

}  // namespace gpuexpand
