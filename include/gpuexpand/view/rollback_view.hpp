#pragma once
// What `rollback` prints, apart from restoring: a line per node with
// nothing to undo, a line per checkpoint restored, the failures and the
// summary. Tested by exact text (tests/unit/views_test.cpp).

#include <string>
#include <vector>

#include "gpuexpand/exec/rollback.hpp"

namespace gpuexpand {

// "node-03  nothing to roll back after rdma\n"
std::string nothing_to_roll_back_line(const std::string& node, const std::string& to_phase);

// "node-03  storage  restored (checkpoint of run 12)\n"
std::string checkpoint_restored_line(const CheckpointRecord& checkpoint);

// One "NODE: WHY" per node whose restore failed, then
// "\n2 nodes rolled back to rdma, 1 failed\n".
struct RollbackReport {
  std::string failures;  // for stderr
  std::string summary;   // for stdout
  size_t failed = 0;
};
RollbackReport rollback_report(const std::vector<NodeRollbackResult>& results, const std::string& to_phase);

}  // namespace gpuexpand
