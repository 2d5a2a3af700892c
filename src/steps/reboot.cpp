// reboot: the node restarted when a step it names in reboot_on changes;
// the executor waits for a new boot id.

#include "decision.hpp"
#include "kinds.hpp"

namespace gpuexpand::steps {
namespace {

using nlohmann::json;

class Reboot final : public StepKind {
 public:
  std::string_view name() const override { return "reboot"; }
  std::vector<std::string_view> required_parameters() const override { return {"reboot_on"}; }

  void decide(const StepInstance& step, const json& facts, const ChangedSteps& changed,
              std::vector<PlannedChange>& out) const override {
    Decision d(step, facts, changed, out);
    if (auto why = d.trigger(step.reboot_on)) {
      d.add(*why, "reboot",
            std::string(*why == ChangeAction::Update ? "" : "if ") + d.changed_list(step.reboot_on) + " changes");
    }
  }

  // The node comes back with the same facts plus what the driver steps
  // predicted; nothing of its own to record.

  StepExecution execution(const ResolvedStep&) const override { return StepExecution::Reboot; }

  Result<ActionCommand> action(const ResolvedStep&, const ActionContext&) const override {
    return ActionCommand{"systemctl --no-block reboot", ""};  // the executor also waits for the node
  }
};

}  // namespace

const StepKind& reboot_kind() {
  static const Reboot kind;
  return kind;
}

}  // namespace gpuexpand::steps
