// reboot: the node restarted when a step it names in reboot_on changes;
// the executor waits for a new boot id.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"

namespace gpuexpand::steps {
namespace {

class Reboot final : public StepKind {
 public:
  Reboot() : StepKind("reboot", {"reboot_on"}) {}

  void decide(const StepInstance& step, const json&, Decision& d) const override {
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

GPUEXPAND_STEP_KIND(reboot, Reboot)

}  // namespace gpuexpand::steps
