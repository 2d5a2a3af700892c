#pragma once
// `rollback --to PHASE`: walks nodes back through their checkpoints, newest
// first, restoring every phase applied after PHASE. Nodes in parallel over
// the runner; a node whose restore fails stops there (its later checkpoints
// stay unrestored and are reported).

#include <functional>
#include <string>
#include <vector>

#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

struct NodeRollback {
  std::string node;
  std::vector<CheckpointRecord> checkpoints;  // in the order to restore them (newest first)
  // Runner endpoint of the node's scheduler controller: where the rollbacks
  // of delegated steps (a checkpoint's controller_rollbacks) run, after the
  // node's restore of that checkpoint.
  std::optional<size_t> controller;
};

struct NodeRollbackResult {
  std::string node;
  std::vector<std::string> restored;  // "rdma (run 12)", in order
  std::string failure;                // empty when every checkpoint was restored
};

// Checkpoints to restore for `node` to get back to the state right after
// `to_phase`: every unrestored checkpoint of a later phase, newest first.
std::vector<CheckpointRecord> checkpoints_after(const std::vector<CheckpointRecord>& newest_first,
                                                const std::string& to_phase);

// After a node's restore: the rollbacks of steps delegated to its
// controller (`newest_first`), one after another on runner endpoint
// `controller`, each with $GPUEXPAND_RUN_ID = run_id. `done` gets the first
// failure, or an ok outcome; after a failure the rest still run unless
// `stop_at_failure`.
void roll_back_on_controller(CommandRunner& runner, size_t controller, int64_t run_id,
                             std::vector<std::string> newest_first, bool stop_at_failure,
                             std::function<void(const CommandOutcome&)> done);

// `restored(record)` is called after each successful restore (the state
// store marks it). `runner` holds one endpoint per entry of `nodes`.
std::vector<NodeRollbackResult> roll_back(const std::vector<NodeRollback>& nodes, CommandRunner& runner,
                                          const std::function<void(const CheckpointRecord&)>& restored);

}  // namespace gpuexpand
