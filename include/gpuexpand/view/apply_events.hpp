#pragma once
// `apply --output jsonl`: the run as a stream of events, one JSON object
// per line on stdout, for machines (a dashboard, a CI step, a chatops
// bot), instead of the console lines. Every event has "v" (the stream's
// version, 1), "event" and "at" (RFC 3339 UTC); docs/events.md lists them:
//   run_started      run, nodes
//   phase_started    node, phase
//   checkpoint       node, phase, path
//   phase_finished   node, phase, status (succeeded|failed|rolled-back), changes, seconds, failed_step, message
//   restored         node, phase
//   checks           node, results [{check, status, detail, seconds}]
//   node_finished    node, result (changed|unchanged|failed|unreachable|not started|interrupted), message
//   batch_stopped    reason
//   run_finished     run, exit_code, seconds, counts {changed, unchanged, …}, unfinished [nodes], retry
// A line is written whole and flushed as the event happens.

#include <memory>
#include <ostream>
#include <string>

#include "gpuexpand/exec/executor.hpp"

namespace gpuexpand {

constexpr int kApplyEventsVersion = 1;

std::unique_ptr<RunJournal> make_apply_events(std::ostream& out, std::string (*now)());

std::string run_started_event(int64_t run_id, size_t nodes, const std::string& at);
// `retry`: the command that retries the unfinished nodes ("" when none is left).
std::string run_finished_event(int64_t run_id, const ExecutionReport& report, int exit_code, double seconds,
                               const std::string& retry, const std::string& at);

}  // namespace gpuexpand
