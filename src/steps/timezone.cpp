// timezone: /etc/localtime and /etc/timezone name one zone of tzdata.

#include "decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

using nlohmann::json;

class Timezone final : public StepKind {
 public:
  std::string_view name() const override { return "timezone"; }
  std::vector<std::string_view> required_parameters() const override { return {"zone"}; }

  void decide(const StepInstance& step, const json& facts, const ChangedSteps& changed,
              std::vector<PlannedChange>& out) const override {
    Decision d(step, facts, changed, out);
    const std::string wanted = d.param("zone");
    if (d.unknown("timezone", "timezone")) return;
    const std::string current = facts["timezone"].get<std::string>();
    if (current != wanted) d.add(ChangeAction::Update, "timezone", "is " + quoted(current) + ", wanted " + quoted(wanted));
  }

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

const StepKind& timezone_kind() {
  static const Timezone kind;
  return kind;
}

}  // namespace gpuexpand::steps
