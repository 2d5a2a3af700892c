#pragma once
// Rollback checkpoints. Before a phase changes a node, a script run on the
// node saves everything the phase's steps may touch under
// /var/lib/gpuexpand/checkpoints/<run>/<phase>/: files (or the fact that
// they were absent), package versions, service states, sysctl values,
// mount states, the hostname. The restore script puts all of it back.
// Both scripts are generated here with every value shell-quoted.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"

namespace gpuexpand {

inline constexpr const char* kCheckpointRoot = "/var/lib/gpuexpand/checkpoints";

// What one phase's steps may change on a node.
struct PhaseTouch {
  std::set<std::string> files;        // regular files and symlinks
  std::set<std::string> directories;  // created by the phase when absent
  std::set<std::string> packages;
  std::set<std::string> services;
  std::set<std::string> sysctl_keys;
  std::set<std::string> mount_targets;
  bool hostname = false;
  std::vector<std::string> command_rollbacks;  // `rollback` of command steps, in step order
  // `rollback` of command steps delegated to the scheduler's controller
  // (delegate_to: controller), in step order: run there, not on the node,
  // and not part of the node's checkpoint or restore scripts.
  std::vector<std::string> controller_rollbacks;

  nlohmann::json to_json() const;  // the manifest kept in the state store
  static PhaseTouch from_json(const nlohmann::json& manifest);
  bool empty() const;
};

PhaseTouch phase_touch(const std::vector<ResolvedStep>& steps);

std::string checkpoint_dir(int64_t run_id, const std::string& phase, const std::string& root = kCheckpointRoot);

// Saves the phase's state; exits non-zero (and leaves no "complete" marker)
// when it cannot, so a phase never runs without a usable checkpoint.
std::string checkpoint_script(int64_t run_id, const std::string& phase, const PhaseTouch& touch,
                              const std::string& root = kCheckpointRoot);

// Restores a checkpoint: mounts, packages, files, sysctl values, services,
// hostname, then command steps' rollbacks (newest first). Refuses a checkpoint without its
// "complete" marker.
std::string restore_script(int64_t run_id, const std::string& phase, const PhaseTouch& touch,
                           const std::string& root = kCheckpointRoot);

}  // namespace gpuexpand
