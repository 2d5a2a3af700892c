// service: a systemd unit enabled or not, running or stopped, restarted
// when a step it names in restart_on changes.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

class Service final : public StepKind {
 public:
  Service() : StepKind("service", {"name"}, {"enabled", "state", "restart_on"}) {}

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    request.services.insert(string_param(step.params, "name"));
  }

  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const std::string name = d.param("name");
    const std::string target = "service " + name;
    const json* services = member(facts, "services");
    const json* s = services ? member(*services, name) : nullptr;
    const bool want_enabled = bool_param(step.params, "enabled", true);
    const std::string want_state = d.param("state", "running");
    const auto restart = d.trigger(step.restart_on);
    if (!s) {
      d.add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
      return;
    }
    if (!s->value("exists", false)) {
      d.add(ChangeAction::Create, target,
            std::string("not installed yet; will be ") + (want_enabled ? "enabled and " : "") +
                (want_state == "running" ? "started" : "left stopped"));
      return;
    }
    const bool enabled = s->value("enabled", false);
    const bool active = s->value("active", false);
    if (enabled != want_enabled) {
      d.add(ChangeAction::Update, target,
            std::string(enabled ? "enabled" : "disabled") + ", wanted " + (want_enabled ? "enabled" : "disabled"));
    }
    if (want_state == "running" && !active) {
      d.add(ChangeAction::Update, target, "inactive, wanted running");
    } else if (want_state == "stopped" && active) {
      d.add(ChangeAction::Update, target, "running, wanted stopped");
    } else if (restart && active && want_state == "running") {
      d.add(*restart, target,
            std::string(*restart == ChangeAction::Update ? "restart: " : "restart if ") +
                d.changed_list(step.restart_on) + " changes");
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    json& service = facts["services"][param_text(step.params, "name")];
    service["exists"] = true;
    service["enabled"] = bool_param(step.params, "enabled", true);
    service["active"] = param_text(step.params, "state", "running") == "running";
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    touch.services.insert(string_param(step.params, "name"));
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    const std::string unit = shell_quote(param_text(step.params, "name"));
    const bool enabled = bool_param(step.params, "enabled", true);
    const std::string state = param_text(step.params, "state", "running");
    // daemon-reload first: an earlier step may have written a drop-in.
    std::string command = std::string("systemctl daemon-reload && systemctl ") + (enabled ? "enable " : "disable ") +
                          unit + " -q";
    // `restart` also starts a stopped unit; it is what restart_on asks for.
    command += state == "running" ? " && systemctl restart " + unit : " && systemctl stop " + unit;
    return ActionCommand{command, ""};
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(service, Service)

}  // namespace gpuexpand::steps
