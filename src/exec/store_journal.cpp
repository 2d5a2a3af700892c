#include "gpuexpand/exec/store_journal.hpp"

#include "gpuexpand/transport/command.hpp"

namespace gpuexpand {

StoreJournal::StoreJournal(StateStore& store, int64_t run_id, RunJournal* also, std::string (*now)())
    : store_(store), run_id_(run_id), also_(also), now_(now), log_(store.path(), run_id, now) {
  check_log();
}

void StoreJournal::check(const Result<void>& written) {
  if (!written && errors_.size() < 5) errors_.push_back(written.error().message);
}

void StoreJournal::check_log() {
  if (log_error_reported_ || log_.error().empty()) return;
  log_error_reported_ = true;
  errors_.push_back(log_.error());
}

void StoreJournal::phase_started(const std::string& node, const std::string& phase) {
  PhaseResult result;
  result.run_id = run_id_;
  result.node = node;
  result.phase = phase;
  result.status = PhaseStatus::Running;
  result.started_at = now_();
  started_at_[{node, phase}] = result.started_at;
  check(store_.record_phase(result));
  log_.phase_started(node, phase);
  check_log();
  if (also_) also_->phase_started(node, phase);
}

void StoreJournal::phase_finished(const PhaseRecord& record) {
  PhaseResult result;
  result.run_id = run_id_;
  result.node = record.node;
  result.phase = record.phase;
  result.status = record.status;
  result.changes = record.changes;
  result.started_at = started_at_[{record.node, record.phase}];
  result.finished_at = now_();
  result.duration_s = record.seconds;
  result.failed_step = record.failed_step;
  result.message = record.message;
  flush_audit();  // the commands behind this result are on record with it
  check(store_.record_phase(result));
  log_.phase_finished(record);
  check_log();
  if (also_) also_->phase_finished(record);
}

void StoreJournal::checkpoint_taken(const std::string& node, const std::string& phase, const std::string& remote_path,
                                    const nlohmann::json& manifest) {
  CheckpointRecord checkpoint;
  checkpoint.run_id = run_id_;
  checkpoint.node = node;
  checkpoint.phase = phase;
  checkpoint.remote_path = remote_path;
  checkpoint.created_at = now_();
  checkpoint.manifest = manifest;
  check(store_.record_checkpoint(checkpoint));
  if (also_) also_->checkpoint_taken(node, phase, remote_path, manifest);
}

void StoreJournal::checkpoint_restored(const std::string& node, const std::string& phase) {
  check(store_.mark_checkpoint_restored(run_id_, node, phase));
  if (also_) also_->checkpoint_restored(node, phase);
}

void StoreJournal::checks_recorded(const std::string& node, const std::vector<CheckResult>& results) {
  std::vector<CheckResult> filed = results;
  const std::string now = now_();
  for (auto& result : filed) {
    result.run_id = run_id_;
    result.node = node;
    if (result.recorded_at.empty()) result.recorded_at = now;
  }
  flush_audit();  // the commands behind these results are on record with them
  check(store_.record_checks(filed));
  log_.checks(node, filed);
  check_log();
  if (also_) also_->checks_recorded(node, filed);
}

void StoreJournal::node_finished(const std::string& node, NodeResult result, const std::string& message) {
  check(store_.record_node_result(run_id_, node, to_string(result), message));
  log_.node_finished(node, result, message);
  check_log();
  if (also_) also_->node_finished(node, result, message);
}

void StoreJournal::batch_stopped(const std::string& reason) {
  if (also_) also_->batch_stopped(reason);
}

void StoreJournal::audit(const AuditRecord& record) {
  log_.command(record);  // at once: `tail -f` shows a command as it ends
  check_log();
  AuditEntry entry;
  entry.run_id = run_id_;
  entry.node = record.node;
  entry.command = record.command;
  entry.exit_code = record.exit_code;
  entry.failure = failure_name(record.failure);
  entry.duration_ms = record.duration.count();
  entry.at = now_();
  entry.user = record.user;
  entry.sudo = record.sudo;
  entry.stdin_bytes = static_cast<int64_t>(record.stdin_bytes);
  entry.stdin_sha256 = record.stdin_sha256;
  pending_audit_.push_back(std::move(entry));
  if (pending_audit_.size() >= 64) flush_audit();
}

void StoreJournal::flush_audit() {
  if (pending_audit_.empty()) return;
  check(store_.record_audit(pending_audit_));
  pending_audit_.clear();
}

}  // namespace gpuexpand
