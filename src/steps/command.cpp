// command: a shell command with a read-only check that says whether it
// must run, and a rollback; on the node, or on its Slurm controller
// (delegate_to: controller).

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"

#include <algorithm>

namespace gpuexpand::steps {
namespace {

class Command final : public StepKind {
 public:
  Command() : StepKind("command", {"run", "check", "rollback"}, {"delegate_to", "saves"}) {}

  // `saves`: files the command changes (what another tool writes, such as
  // nvidia-ctk): the phase's checkpoint keeps them and its restore puts
  // them back, so `rollback` need only restart what reads them.
  Result<void> check_rendered(const json& params) const override {
    if (!params.contains("saves") || params["saves"].is_null()) return {};
    bool ok = params["saves"].is_array();
    if (ok) {
      for (const auto& p : params["saves"]) ok = ok && p.is_string() && !p.get<std::string>().empty() && p.get<std::string>()[0] == '/';
    }
    if (!ok) return make_error("'saves' must be a list of absolute paths");
    if (params.contains("delegate_to")) return make_error("'saves' names files on the node: not with delegate_to");
    return {};
  }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    const json& p = step.params;
    // A check that needs the node's facts to render: on the node it
    // stays unknown ("?"); the controller is asked once the facts are in.
    const auto pending = p.find(kProbePending);
    const bool check_pending =
        pending != p.end() && std::find(pending->begin(), pending->end(), "check") != pending->end();
    if (delegated_to_controller(step)) {
      (check_pending ? request.controller_unresolved : request.controller_checks)[step.key] =
          string_param(p, "check");
    } else if (!check_pending) {
      request.checks[step.key] = string_param(p, "check");
    }
  }

  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const json* checks = member(facts, "checks");
    const json* code = checks ? member(*checks, step.key) : nullptr;
    const auto delegate = step.params.find("delegate_to");
    const bool on_controller = delegate != step.params.end() && *delegate == "controller";
    const std::string target = "command " + step.key + (on_controller ? " (on the controller)" : "");
    if (!code) {
      d.add(ChangeAction::Unknown, target, "check not run yet; decided on the node");
    } else if (code->get<int>() != 0) {
      // The check's own last line says what is wrong, when it says it.
      const json* outputs = member(facts, "check_output");
      const json* said = outputs ? member(*outputs, step.key) : nullptr;
      d.add(ChangeAction::Update, target,
            said && said->is_string() && !said->get<std::string>().empty()
                ? said->get<std::string>()
                : "check exited " + std::to_string(code->get<int>()));
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    facts["checks"][step.key] = 0;
    if (facts.contains("check_output") && facts["check_output"].is_object()) facts["check_output"].erase(step.key);
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    (delegated_to_controller(step) ? touch.controller_rollbacks : touch.command_rollbacks)
        .push_back(string_param(step.params, "rollback"));
    for (const auto& path : string_names(step.params.value("saves", json()))) touch.files.insert(path);
  }

  bool delegated_to_controller(const ResolvedStep& step) const override {
    auto it = step.params.find("delegate_to");
    return it != step.params.end() && *it == "controller";
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    return ActionCommand{param_text(step.params, "run"), ""};
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(command, Command)

}  // namespace gpuexpand::steps
