#pragma once
// What one phase's steps may change on a node: each step kind adds its
// part (StepKind::touch); exec/checkpoint.hpp saves it before the phase and
// restores it when the phase fails.

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuexpand {

struct PhaseTouch {
  std::set<std::string> files;        // regular files and symlinks
  std::set<std::string> directories;  // created by the phase when absent
  std::set<std::string> packages;
  // Patterns of packages the phase may remove (package steps' `replaces`):
  // the checkpoint saves the installed matches, the restore puts them back.
  std::set<std::string> package_patterns;
  std::set<std::string> services;
  std::set<std::string> sysctl_keys;
  std::set<std::string> mount_targets;
  std::set<std::string> interfaces;  // whose IPv4 addresses the phase sets
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

}  // namespace gpuexpand
