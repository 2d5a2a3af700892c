#pragma once
// What each builtin step type would change on a node, decided from facts
// alone (no round trip). Shared by `plan` and `apply`: a step that plans a
// change is a step that applies one, and the other way round.

#include <nlohmann/json.hpp>
#include <map>
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

// Earlier steps of the same phase that plan changes (for restart_on and
// reboot_on): id -> true when a change is certain, false when only
// unknown ('?') changes were planned.
using ChangedSteps = std::map<std::string, bool>;

std::vector<PlannedChange> decide_step(const StepInstance& instance, const nlohmann::json& facts,
                                       const ChangedSteps& changed_steps);

// A rendered step parameter as text: strings as they are, other values as
// JSON text, `fallback` when absent or null.
std::string param_text(const nlohmann::json& params, const char* key, const std::string& fallback = "");
// A rendered `names`-style parameter: one string, or a list of them.
std::vector<std::string> param_names(const nlohmann::json& value);

// A boolean parameter that may arrive as a rendered template ("true").
bool bool_param(const nlohmann::json& params, const char* key, bool fallback);

// The fstab fields a mount step wants; decisions and predictions share it.
struct FstabFields {
  std::string source, target, fstype, options;
};
FstabFields mount_fstab_fields(const nlohmann::json& params);

// Whether an installed package version satisfies a wanted one: equal, or
// equal up to the distribution's epoch ("1:") and revision ("-1", "+deb12").
bool package_version_matches(const std::string& installed, const std::string& wanted);

// "+2 -1 lines" between two texts (line-based LCS).
std::string line_change_summary(const std::string& current, const std::string& wanted);

}  // namespace gpuexpand
