#pragma once
// What `status` prints, apart from reading the store (cli/cmd_status.cpp):
// one run in detail, and the overview (runs, the latest state per node and
// phase, failures, the latest acceptance checks). Plain aligned tables.
// Tested by exact text (tests/unit/views_test.cpp, tests/cli/cli_test.cpp).

#include <string>
#include <vector>

#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand {

// `status --run N`: the run's line, its phases, its checks, how each node
// ended (an unreachable node with why), and its remote commands in order
// (the first line of each, cut at 120 characters; `logs` has them whole).
std::string run_text(const RunRecord& run, const std::vector<PhaseResult>& phases,
                     const std::vector<CheckResult>& checks, const std::vector<NodeOutcome>& nodes,
                     const std::vector<AuditEntry>& commands);

// `status`: runs newest first, then per node the latest result of each
// phase (in phase_order()), the failures among them, and each node's
// latest acceptance checks (nothing of those when none was recorded).
std::string status_overview_text(const std::vector<RunRecord>& runs, const std::vector<PhaseResult>& latest,
                                 const std::vector<CheckResult>& latest_checks);

// `audit`: one line per remote command, oldest first (run, time, node, who,
// exit or why it did not run, milliseconds, stdin by size and digest, the
// command whole with newlines as \n so each stays one greppable line), then
// a count. A sensitive command reads "<sensitive>" (redacted when recorded).
std::string audit_text(const std::vector<AuditEntry>& commands);

// `unlock --force`: "released: …" per lock, or "No locks held[ on those nodes]".
std::string unlock_text(const std::vector<LockConflict>& released, bool only_some_nodes);

}  // namespace gpuexpand
