#pragma once
// Read-only commands that still run commands on nodes (`facts`, live
// `plan`) keep the audit trail too: a run without node locks (they change
// nothing, so they never wait for an apply) whose remote commands go to the
// state store's audit table. A store that cannot be opened is a warning:
// looking at nodes must not depend on the record.

#include <memory>
#include <string>

#include "gpuexpand/exec/store_journal.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand::cli {

class AuditedRun {
 public:
  AuditedRun(const std::string& state_path, const std::string& command, const std::string& spec_file);
  ~AuditedRun();
  AuditedRun(const AuditedRun&) = delete;
  AuditedRun& operator=(const AuditedRun&) = delete;

  // For make_ssh_runner's audit callback; does nothing without a store.
  void audit(const AuditRecord& record);
  // Writes the audit and closes the run with the command's exit code.
  void finish(int exit_code);

 private:
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<StoreJournal> journal_;
  int64_t run_id_ = 0;
  bool finished_ = false;
};

}  // namespace gpuexpand::cli
