#include "audited_run.hpp"

#include <iostream>

#include "context.hpp"

namespace gpuexpand::cli {

AuditedRun::AuditedRun(const std::string& state_path, const std::string& command, const std::string& spec_file) {
  auto store = StateStore::open(state_path);
  if (!store) {
    std::cerr << "gpuexpand: warning: the remote commands of this " << command << " are not recorded: "
              << store.error().message << "\n";
    return;
  }
  RunRecord record;
  record.command = command;
  record.spec_file = spec_file;
  record.started_at = utc_now_rfc3339();
  auto begun = (*store)->begin_run(record);  // no nodes: no locks
  if (!begun || !std::holds_alternative<int64_t>(begun.value())) {
    std::cerr << "gpuexpand: warning: the remote commands of this " << command << " are not recorded: "
              << (begun ? std::string("unexpected lock conflict") : begun.error().message) << "\n";
    return;
  }
  run_id_ = std::get<int64_t>(begun.value());
  store_ = std::move(store.value());
  journal_ = std::make_unique<StoreJournal>(*store_, run_id_, nullptr, &utc_now_rfc3339);
}

AuditedRun::~AuditedRun() {
  // An exception on the way out: the run still ends, as failed.
  if (!finished_) finish(1);
}

void warn_if_unkept(const Result<void>& flushed) {
  if (!flushed) {
    std::cerr << "gpuexpand: warning: the nodes' package answers are not kept for the next run (it will ask dpkg and "
                 "apt again): "
              << flushed.error().message << "\n";
  }
}

void AuditedRun::audit(const AuditRecord& record) {
  if (journal_) journal_->audit(record);
}

PackageAnswers* AuditedRun::package_answers(const std::vector<std::string>& nodes) {
  if (!store_) return nullptr;
  if (!answers_) answers_ = std::make_unique<StoredPackageAnswers>(*store_, nodes, &utc_now_rfc3339);
  return answers_.get();
}

void AuditedRun::finish(int exit_code) {
  if (finished_ || !store_) {
    finished_ = true;
    return;
  }
  finished_ = true;
  journal_->flush_audit();
  for (const auto& problem : journal_->errors()) std::cerr << "gpuexpand: warning: " << problem << "\n";
  if (answers_) warn_if_unkept(answers_->flush());
  (void)store_->finish_run(run_id_, exit_code == 0 ? RunStatus::Succeeded : RunStatus::Failed, exit_code,
                           utc_now_rfc3339());
}

}  // namespace gpuexpand::cli
