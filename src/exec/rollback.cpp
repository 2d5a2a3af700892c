#include "gpuexpand/exec/rollback.hpp"

#include <algorithm>

#include "gpuexpand/exec/checkpoint.hpp"
#include "gpuexpand/plan/controller.hpp"
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
  std::function<void(size_t, size_t, const CommandOutcome&, std::vector<std::string>)> finish_checkpoint;
  std::function<void(size_t, size_t)> restore_next = [&](size_t i, size_t k) {
    const NodeRollback& node = nodes[i];
    if (k >= node.checkpoints.size()) return;
    const CheckpointRecord& c = node.checkpoints[k];
    const PhaseTouch touch = PhaseTouch::from_json(c.manifest);
    CommandRequest request{"sh -s", restore_script(c.run_id, c.phase, touch), {}, false};
    std::vector<std::string> on_controller(touch.controller_rollbacks.rbegin(), touch.controller_rollbacks.rend());
    if (!on_controller.empty() && !node.controller) {
      // Marking it restored would leave the controller's part for ever.
      results[i].failure = "restoring " + c.phase + " (run " + std::to_string(c.run_id) +
                           "): it changed the Slurm controller, and the spec names no scheduler.slurm.controller for " +
                           node.node + " any more";
      return;
    }
    runner.submit(i, std::move(request), [&, i, k, on_controller](const CommandOutcome& outcome) {
      finish_checkpoint(i, k, outcome, on_controller);
    });
  };
  // After the node's restore: the checkpoint's delegated rollbacks on the
  // controller, newest first, with the checkpoint's run id.
  finish_checkpoint = [&](size_t i, size_t k, const CommandOutcome& outcome, std::vector<std::string> on_controller) {
    const CheckpointRecord& done = nodes[i].checkpoints[k];
    if (!outcome.ok()) {
      results[i].failure = "restoring " + done.phase + " (run " + std::to_string(done.run_id) + "): " + outcome.message;
      return;
    }
    if (!on_controller.empty()) {
      CommandRequest request{controller_command(done.run_id, on_controller.front()), "", {}, false};
      on_controller.erase(on_controller.begin());
      runner.submit(*nodes[i].controller, std::move(request),
                    [&, i, k, rest = std::move(on_controller)](const CommandOutcome& next) {
                      finish_checkpoint(i, k, next, rest);
                    });
      return;
    }
    results[i].restored.push_back(done.phase + " (run " + std::to_string(done.run_id) + ")");
    if (restored) restored(done);
    restore_next(i, k + 1);
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    results[i].node = nodes[i].node;
    restore_next(i, 0);
  }
  runner.run();
  return results;
}

}  // namespace gpuexpand
