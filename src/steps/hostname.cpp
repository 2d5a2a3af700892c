// hostname: the node's name, in /etc/hostname and in the running kernel.

#include "decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

using nlohmann::json;

class Hostname final : public StepKind {
 public:
  std::string_view name() const override { return "hostname"; }
  std::vector<std::string_view> required_parameters() const override { return {"name"}; }

  void decide(const StepInstance& step, const json& facts, const ChangedSteps& changed,
              std::vector<PlannedChange>& out) const override {
    Decision d(step, facts, changed, out);
    const std::string wanted = d.param("name");
    if (d.unknown("hostname", "hostname")) return;
    const std::string current = facts["hostname"].get<std::string>();
    if (current != wanted) d.add(ChangeAction::Update, "hostname", "is " + quoted(current) + ", wanted " + quoted(wanted));
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    facts["hostname"] = param_text(step.params, "name");
  }

  void touch(const ResolvedStep&, PhaseTouch& touch) const override {
    touch.hostname = true;
    touch.files.insert("/etc/hostname");
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    const std::string name = shell_quote(param_text(step.params, "name"));
    return ActionCommand{"printf '%s\\n' " + name + " > /etc/hostname && hostname " + name, ""};
  }
};

}  // namespace

const StepKind& hostname_kind() {
  static const Hostname kind;
  return kind;
}

}  // namespace gpuexpand::steps
