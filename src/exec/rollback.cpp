#include "gpuexpand/exec/rollback.hpp"

#include <algorithm>

#include "gpuexpand/exec/checkpoint.hpp"
#include "gpuexpand/playbook/playbook.hpp"

namespace gpuexpand {
namespace {

size_t order_of(const std::string& phase) {
  const auto& order = phase_order();
  return static_cast<size_t>(std::find(order.begin(), order.end(), phase) - order.begin());
}

}  // namespace

std::vector<CheckpointRecord> checkpoints_after(const std::vector<CheckpointRecord>& newest_first,
                                                const std::string& to_phase) {
  std::vector<CheckpointRecord> out;
  const size_t limit = order_of(to_phase);
  for (const auto& c : newest_first) {
    if (!c.restored && order_of(c.phase) > limit) out.push_back(c);
  }
  return out;
}

std::vector<NodeRollbackResult> roll_back(const std::vector<NodeRollback>& nodes, CommandRunner& runner,
                                          const std::function<void(const CheckpointRecord&)>& restored) {
  std::vector<NodeRollbackResult> results(nodes.size());
  // Each node restores its checkpoints one after another: the next restore
  // is queued from the previous one's callback.
  std::function<void(size_t, size_t)> restore_next = [&](size_t i, size_t k) {
    const NodeRollback& node = nodes[i];
    if (k >= node.checkpoints.size()) return;
    const CheckpointRecord& c = node.checkpoints[k];
    CommandRequest request{"sh -s", restore_script(c.run_id, c.phase, PhaseTouch::from_json(c.manifest)), {}, false};
    runner.submit(i, std::move(request), [&, i, k](const CommandOutcome& outcome) {
      const CheckpointRecord& done = nodes[i].checkpoints[k];
      if (!outcome.ok()) {
        results[i].failure = "restoring " + done.phase + " (run " + std::to_string(done.run_id) + "): " + outcome.message;
        return;
      }
      results[i].restored.push_back(done.phase + " (run " + std::to_string(done.run_id) + ")");
      if (restored) restored(done);
      restore_next(i, k + 1);
    });
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    results[i].node = nodes[i].node;
    restore_next(i, 0);
  }
  runner.run();
  return results;
}

}  // namespace gpuexpand
