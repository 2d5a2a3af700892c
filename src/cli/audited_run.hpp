#pragma once
// Read-only commands that still run commands on nodes (`facts`, live
// `plan`) keep the audit trail too: a run without node locks (they change
// nothing, so they never wait for an apply) whose remote commands go to the
// state store's audit table. A store that cannot be opened is a warning:
// looking at nodes must not depend on the record.

#include <memory>
#include <string>
#include <vector>

#include "gpuexpand/exec/store_journal.hpp"
#include "gpuexpand/exec/stored_package_answers.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand::cli {

// A warning on stderr where the kept package answers could not be written.
void warn_if_unkept(const Result<void>& flushed);

class AuditedRun {
 public:
  AuditedRun(const std::string& state_path, const std::string& command, const std::string& spec_file);
  ~AuditedRun();
  AuditedRun(const AuditedRun&) = delete;
  AuditedRun& operator=(const AuditedRun&) = delete;

  // For make_ssh_runner's audit callback; does nothing without a store.
  void audit(const AuditRecord& record);
  // The earlier package answers of `nodes`, for gather_facts: null without
  // a store. What the probes keep is written by finish().
  PackageAnswers* package_answers(const std::vector<std::string>& nodes);
  // Writes the audit and the kept package answers, and closes the run with
  // the command's exit code.
  void finish(int exit_code);

 private:
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<StoreJournal> journal_;
  std::unique_ptr<StoredPackageAnswers> answers_;
  int64_t run_id_ = 0;
  bool finished_ = false;
};

}  // namespace gpuexpand::cli
