#pragma once
// Rollback checkpoints. Before a phase changes a node, a script run on the
// node saves everything the phase's steps may touch under
// /var/lib/gpuexpand/checkpoints/<run>/<phase>/: files (or the fact that
// they were absent), package versions, service states, sysctl values,
// mount states, the hostname. The restore script puts all of it back.
// Both scripts are generated here with every value shell-quoted.

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/steps/phase_touch.hpp"
#include "gpuexpand/steps/step_kind.hpp"  // phase_touch

namespace gpuexpand {

inline constexpr const char* kCheckpointRoot = "/var/lib/gpuexpand/checkpoints";

std::string checkpoint_dir(int64_t run_id, const std::string& phase, const std::string& root = kCheckpointRoot);

// Why a checkpoint of `phase` with `touch` under `root` is refused, or
// nothing: the checkpoint directory is root/RUN/PHASE and everything the
// scripts write goes under it, so a phase name must be one path component
// (letters, digits, '-', '_'), root absolute without '..', and a saved
// interface's file (ipv4.NAME) one component too. The paths saved and
// restored must be absolute, without '..' components or control characters
// (a line feed would split one path into two in the script's lists: the
// restore would remove a path the phase never named). Both scripts below
// check this first: a refused one writes nothing and exits 2 with the reason.
std::optional<std::string> checkpoint_refusal(const std::string& phase, const PhaseTouch& touch,
                                              const std::string& root = kCheckpointRoot);

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
