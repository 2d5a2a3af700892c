#include "gpuexpand/view/rollback_view.hpp"

namespace gpuexpand {

std::string nothing_to_roll_back_line(const std::string& node, const std::string& to_phase) {
  return node + "  nothing to roll back after " + to_phase + "\n";
}

std::string checkpoint_restored_line(const CheckpointRecord& checkpoint) {
  return checkpoint.node + "  " + checkpoint.phase + "  restored (checkpoint of run " + std::to_string(checkpoint.run_id) +
         ")\n";
}

RollbackReport rollback_report(const std::vector<NodeRollbackResult>& results, const std::string& to_phase) {
  RollbackReport report;
  for (const auto& r : results) {
    if (r.failure.empty()) continue;
    ++report.failed;
    report.failures += "gpuexpand: error: " + r.node + ": " + r.failure + "\n";
  }
  report.summary = "\n" + std::to_string(results.size()) + (results.size() == 1 ? " node" : " nodes") +
                   " rolled back to " + to_phase + ", " + std::to_string(report.failed) + " failed\n";
  return report;
}

}  // namespace gpuexpand
