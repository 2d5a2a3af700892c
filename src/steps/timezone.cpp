// timezone: /etc/localtime and /etc/timezone name one zone of tzdata.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

class Timezone final : public StepKind {
 public:
  Timezone() : StepKind("timezone", {"zone"}) {}

  void decide(const StepInstance&, const json&, Decision& d) const override { d.compare_scalar("timezone", "zone"); }

  void predict(const ResolvedStep& step, json& facts) const override {
    facts["timezone"] = param_text(step.params, "zone");
  }

  void touch(const ResolvedStep&, PhaseTouch& touch) const override {
    touch.files.insert("/etc/localtime");
    touch.files.insert("/etc/timezone");
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    const std::string zone = param_text(step.params, "zone");
    return ActionCommand{"test -e " + shell_quote("/usr/share/zoneinfo/" + zone) + " || { echo " +
                             shell_quote("unknown time zone " + zone + " (is tzdata installed?)") +
                             " >&2; exit 1; }; ln -sfn " + shell_quote("/usr/share/zoneinfo/" + zone) +
                             " /etc/localtime && printf '%s\\n' " + shell_quote(zone) + " > /etc/timezone",
                         ""};
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(timezone, Timezone)

}  // namespace gpuexpand::steps
