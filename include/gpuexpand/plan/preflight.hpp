#pragma once
// apply's preflight: what a later phase will need on the operator's machine,
// checked before any node is touched. Without it a missing munge key is
// found in the scheduler phase, after the driver was installed and the node
// rebooted.

#include <string>
#include <vector>

#include "gpuexpand/spec/cluster_spec.hpp"

namespace gpuexpand {

// One line per problem, every problem at once: "scheduler.slurm.munge_key_file:
// cannot read /x/munge.key: No such file or directory (node-[01-03])".
// Empty when everything is in place.
std::vector<std::string> preflight_problems(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes);

// The message apply exits with (also for exec's unreachable_controllers).
std::string preflight_message(const std::vector<std::string>& problems);

}  // namespace gpuexpand
