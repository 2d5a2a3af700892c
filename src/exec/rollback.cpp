#include "gpuexpand/exec/rollback.hpp"

#include <algorithm>
#include <memory>

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

void roll_back_on_controller(CommandRunner& runner, size_t controller, int64_t run_id,
                             std::vector<std::string> newest_first, bool stop_at_failure,
                             std::function<void(const CommandOutcome&)> done) {
  struct Chain {
    CommandRunner& runner;
    size_t controller;
    int64_t run_id;
    std::vector<std::string> left;
    bool stop_at_failure;
    std::function<void(const CommandOutcome&)> done;
    CommandOutcome first;  // ok until a rollback fails

    static void next(std::shared_ptr<Chain> chain) {
      if (chain->left.empty() || (!chain->first.ok() && chain->stop_at_failure)) {
        chain->done(chain->first);
        return;
      }
      CommandRequest request = shell_command(controller_command(chain->run_id, chain->left.front()));
      chain->left.erase(chain->left.begin());
      chain->runner.submit(chain->controller, std::move(request), [chain](const CommandOutcome& outcome) {
        if (chain->first.ok()) chain->first = outcome;
        next(chain);
      });
    }
  };
  Chain::next(std::make_shared<Chain>(
      Chain{runner, controller, run_id, std::move(newest_first), stop_at_failure, std::move(done), {}}));
}

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
    const PhaseTouch touch = PhaseTouch::from_json(c.manifest);
    CommandRequest request = shell_script(restore_script(c.run_id, c.phase, touch));
    std::vector<std::string> on_controller(touch.controller_rollbacks.rbegin(), touch.controller_rollbacks.rend());
    if (!on_controller.empty() && !node.controller) {
      // Marking it restored would leave the controller's part for ever.
      results[i].failure = "restoring " + c.phase + " (run " + std::to_string(c.run_id) +
                           "): it changed the Slurm controller, and the spec names no scheduler.slurm.controller for " +
                           node.node + " any more";
      return;
    }
    // After the node's restore, the checkpoint's delegated rollbacks on the
    // controller, with the checkpoint's run id; then the next checkpoint.
    auto finished = [&, i, k](const CommandOutcome& outcome) {
      const CheckpointRecord& done = nodes[i].checkpoints[k];
      if (!outcome.ok()) {
        results[i].failure = "restoring " + done.phase + " (run " + std::to_string(done.run_id) + "): " + outcome.message;
        return;
      }
      results[i].restored.push_back(done.phase + " (run " + std::to_string(done.run_id) + ")");
      if (restored) restored(done);
      restore_next(i, k + 1);
    };
    runner.submit(i, std::move(request), [&, i, c, on_controller, finished](const CommandOutcome& outcome) {
      if (!outcome.ok() || on_controller.empty()) {
        finished(outcome);
        return;
      }
      roll_back_on_controller(runner, *nodes[i].controller, c.run_id, on_controller, true, finished);
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
