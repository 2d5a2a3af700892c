#pragma once
// What each builtin step type would change on a node, decided from facts
// alone (no round trip). Shared by `plan` and `apply`: a step that plans a
// change is a step that applies one, and the other way round.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"

namespace gpuexpand {

struct StepInstance {
  const Step* step = nullptr;
  std::string key;         // "mount[shared]" for for_each steps, else the id
  nlohmann::json params;   // rendered: no templates left
};

// `changed_steps`: ids of earlier steps of the same phase that plan
// changes (for restart_on / reboot_on).
std::vector<PlannedChange> decide_step(const StepInstance& instance, const nlohmann::json& facts,
                                       const std::set<std::string>& changed_steps);

// Whether an installed package version satisfies a wanted one: equal, or
// equal up to the distribution's epoch ("1:") and revision ("-1", "+deb12").
bool package_version_matches(const std::string& installed, const std::string& wanted);

// "+2 -1 lines" between two texts (line-based LCS).
std::string line_change_summary(const std::string& current, const std::string& wanted);

}  // namespace gpuexpand
