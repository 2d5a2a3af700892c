#pragma once
// What every step kind speaks: a step as the playbook wrote it once its
// templates are rendered, and the changes it plans. The planner, the probe
// and the executor pass these between them; each kind (step_kind.hpp)
// interprets them.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuexpand {

enum class ChangeAction {
  Create,   // '+': something that does not exist yet
  Update,   // '~': exists, differs
  Remove,   // '-': exists, must go
  Unknown,  // '?': the facts do not say; the node decides at apply time
};
char action_marker(ChangeAction action);
std::string action_name(ChangeAction action);
std::optional<ChangeAction> parse_action(const std::string& name);

struct PlannedChange {
  std::string step;    // step id, with [label] for for_each steps: "mount[shared]"
  std::string type;    // builtin step type
  ChangeAction action = ChangeAction::Update;
  std::string target;  // what changes: "/etc/chrony/chrony.conf", "package chrony"
  std::string reason;  // why: "535.129.03 installed, 550.90.07 wanted"
  // Whether the change counts as the step having changed for restart_on
  // and reboot_on: a package's hold is bookkeeping, not new software.
  bool triggers = true;
  // A file's content change as a unified diff (current -> wanted), for
  // `plan --diff`; empty when the kind has none to show.
  std::string diff = {};
  // The step's variant ("Debian 13 and later"), when it is one of several.
  std::string variant = {};
};

// A step instance with every template rendered: what apply will act on,
// recorded in the plan so `apply plan.json` does exactly what was reviewed.
struct ResolvedStep {
  std::string key;   // "mount[shared]" for for_each steps, else the id
  std::string id;
  std::string type;
  nlohmann::json params;
};

// A step being decided: rendered parameters, and the ids of earlier steps
// whose changes trigger it (the playbook's restart_on and reboot_on).
struct StepInstance {
  std::string key;  // "mount[shared]" for for_each steps, else the id
  std::string type;
  nlohmann::json params;  // rendered: no templates left
  std::vector<std::string> restart_on;
  std::vector<std::string> reboot_on;
};

// Earlier steps of the same phase that plan changes (for restart_on and
// reboot_on): id -> true when a change is certain, false when only
// unknown ('?') changes were planned.
using ChangedSteps = std::map<std::string, bool>;

// The parameter that lists what a step rendered for the probe could not
// render yet (it needs facts): steps_to_probe (plan/plan.hpp) sets it.
inline constexpr const char* kProbePending = "probe_pending";

}  // namespace gpuexpand
