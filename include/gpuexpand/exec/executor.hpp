#pragma once
// The executor: phases in their fixed order on every node, nodes in
// parallel (the runner's --parallel), in rolling batches, stopping new
// batches at --max-fail. Per phase: checkpoint, apply the planned steps,
// verify by planning the phase again from fresh facts (the same decision
// code as `plan`), and roll back to the checkpoint when a step or the
// verification fails. Each node is a small state machine advanced from the
// runner's callbacks, so one thread drives every node.

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpuexpand/exec/checkpoint.hpp"
#include "gpuexpand/facts/package_answers.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

enum class NodeResult { Unchanged, Changed, Failed, Unreachable, NotStarted, Interrupted };
std::string to_string(NodeResult result);

struct PhaseRecord {
  std::string node;
  std::string phase;
  PhaseStatus status = PhaseStatus::Failed;  // Succeeded, Failed (rollback failed too) or RolledBack
  int changes = 0;
  double seconds = 0;
  std::string failed_step;
  std::string message;
};

// Where the executor reports what it did: the state store in production,
// a recording fake in tests, and the console reporter.
class RunJournal {
 public:
  virtual ~RunJournal() = default;
  virtual void phase_started(const std::string& node, const std::string& phase) = 0;
  virtual void phase_finished(const PhaseRecord& record) = 0;
  virtual void checkpoint_taken(const std::string& node, const std::string& phase, const std::string& remote_path,
                                const nlohmann::json& manifest) = 0;
  virtual void checkpoint_restored(const std::string& node, const std::string& phase) = 0;
  // Acceptance check results of one node (the acceptance phase, `verify`), in the order they ran.
  // run_id and recorded_at may be left unset: the state store journal fills them.
  virtual void checks_recorded(const std::string& node, const std::vector<CheckResult>& results) = 0;
  virtual void node_finished(const std::string& node, NodeResult result, const std::string& message) = 0;
  virtual void batch_stopped(const std::string& reason) = 0;
};

struct ExecutorOptions {
  int64_t run_id = 0;
  std::optional<CountOrPercent> batch;     // unset: every node in one batch
  std::optional<CountOrPercent> max_fail;  // unset: never stop early
  const std::atomic<bool>* stop_requested = nullptr;  // SIGINT/SIGTERM: finish the step, roll back, start nothing
  std::string collected_at;                            // timestamp for facts documents
  std::string until_phase;  // stop after this phase (empty: all seven)
  // Where the nodes' earlier package answers are found and new ones kept
  // (facts/package_answers.hpp); null: every probe runs dpkg and apt.
  PackageAnswers* package_answers = nullptr;
  // The executor's clock (phase durations, the reboot deadline); tests
  // inject one that runs faster than the wall.
  std::function<std::chrono::steady_clock::time_point()> clock = [] { return std::chrono::steady_clock::now(); };
};

struct NodeReport {
  std::string node;
  NodeResult result = NodeResult::NotStarted;
  int changes = 0;  // changes applied
  std::string message;
};

struct AcceptedNode {
  std::string node;
  nlohmann::json settings;  // the acceptance settings it passed with
};

struct ExecutionReport {
  std::vector<NodeReport> nodes;
  std::vector<AcceptedNode> accepted;  // passed acceptance in this run, in the order they passed
  std::string stop_reason;  // set when max-fail or an all-failed batch stopped new batches
  bool interrupted = false;
  size_t count(NodeResult result) const;
};

// `runner` holds one endpoint per entry of `nodes`, in order.
ExecutionReport execute(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                        const PlaybookSet& playbooks, CommandRunner& runner, RunJournal& journal,
                        const ExecutorOptions& options);

}  // namespace gpuexpand
