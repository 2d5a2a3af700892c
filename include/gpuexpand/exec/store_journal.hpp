#pragma once
// The executor's journal written to the state store, in step with the
// console: each phase start/end, checkpoint, restore and node's batch of
// acceptance check results is one transaction, so a controller killed at any
// moment leaves a consistent record that the next `apply` resumes from.
// Every event and remote command also goes to the run's per-node log files
// beside the store (run_log.hpp), as it happens, for `gpuexpand logs`.

#include <string>
#include <vector>

#include "gpuexpand/exec/executor.hpp"
#include "gpuexpand/exec/run_log.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand {

class StoreJournal final : public RunJournal {
 public:
  // `also` (may be null) receives every event too: the console reporter.
  StoreJournal(StateStore& store, int64_t run_id, RunJournal* also, std::string (*now)());

  void phase_started(const std::string& node, const std::string& phase) override;
  void phase_finished(const PhaseRecord& record) override;
  void checkpoint_taken(const std::string& node, const std::string& phase, const std::string& remote_path,
                        const nlohmann::json& manifest) override;
  void checkpoint_restored(const std::string& node, const std::string& phase) override;
  // Files every result under this run and `node`; an empty recorded_at becomes now.
  void checks_recorded(const std::string& node, const std::vector<CheckResult>& results) override;
  void node_finished(const std::string& node, NodeResult result, const std::string& message) override;
  void batch_stopped(const std::string& reason) override;

  // Audit of every remote command, buffered and written in batches.
  void audit(const AuditRecord& record);
  void flush_audit();

  // State store errors are reported once and do not stop the run: the
  // nodes' safety does not depend on the record.
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void check(const Result<void>& written);
  void check_log();

  StateStore& store_;
  int64_t run_id_;
  RunJournal* also_;
  std::string (*now_)();
  std::map<std::pair<std::string, std::string>, std::string> started_at_;
  std::vector<AuditEntry> pending_audit_;
  std::vector<std::string> errors_;
  RunLog log_;
  bool log_error_reported_ = false;
};

}  // namespace gpuexpand
