#pragma once
// The fault drill (`verify --fault-drill NODE`): stop slurmd on one node
// and time what the cluster does about it: the controller marks the node
// not responding, a job submitted meanwhile runs elsewhere; then start
// slurmd again and time the node's return to service. Every step runs on
// the drill node itself (Slurm's client commands keep working there without
// slurmd), and slurmd is started again whatever happened before.

#include <atomic>
#include <ostream>
#include <string>

#include "gpuexpand/accept/check_result.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

// Runs the drill on node `node_index` of `runner` (named `node`), waiting
// at most `step_timeout_s` for each step; prints each step with its timing
// to `out`. The result is check "fault-drill". The drill refuses a node
// that is not idle or runs jobs (stopping slurmd would kill them); before
// stopping slurmd it arms a timer on the node that starts slurmd again even
// if gpuexpand dies; `stop` (SIGINT) skips to the restore.
CheckResult run_fault_drill(CommandRunner& runner, size_t node_index, const std::string& node, int step_timeout_s,
                            std::ostream& out, const std::atomic<bool>* stop = nullptr);

// Exit 0 when the node is idle and runs no job; otherwise prints why.
std::string drill_precondition_command(const std::string& node);

// The node-side commands, for tests and the docs.
std::string wait_for_state_command(const std::string& node, bool want_unresponsive, int timeout_s);
std::string drill_job_command(int timeout_s);

}  // namespace gpuexpand
