// sysctl: kernel parameters set now (the file that keeps them is a file step).

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

#include <sstream>

namespace gpuexpand::steps {
namespace {

class Sysctl final : public StepKind {
 public:
  Sysctl() : StepKind("sysctl", {"values"}) {}

  Result<void> check_rendered(const json& params) const override {
    return need_shape(params, "values", params.contains("values") && params["values"].is_object(), "a mapping");
  }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    const json& p = step.params;
    if (p.contains("values") && p["values"].is_object()) {
      for (const auto& [key, _] : p["values"].items()) request.sysctl_keys.insert(key);
    }
  }

  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const json& values = step.params["values"];
    const json* live = member(facts, "sysctl");
    if (!values.is_object()) return;
    for (const auto& [key, value] : values.items()) {
      const std::string wanted = value.is_string() ? value.get<std::string>() : value.dump();
      const std::string target = "sysctl " + key;
      const json* current = live ? member(*live, key) : nullptr;
      if (!current) {
        d.add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
      } else if (current->is_null()) {
        d.add(ChangeAction::Update, target, "not known to this kernel (no /proc/sys entry)");
      } else if (normalized(current->get<std::string>()) != normalized(wanted)) {
        d.add(ChangeAction::Update, target, normalized(current->get<std::string>()) + ", wanted " + wanted);
      }
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    const json& p = step.params;
    if (p.contains("values") && p["values"].is_object()) {
      for (const auto& [key, value] : p["values"].items()) {
        facts["sysctl"][key] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    const json values = step.params.value("values", json::object());  // a temporary's items() would dangle
    for (const auto& [key, _] : values.items()) touch.sysctl_keys.insert(key);
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    std::string command;
    for (const auto& [key, value] : step.params["values"].items()) {
      if (!command.empty()) command += " && ";
      command += "sysctl -q -w " + shell_quote(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
    }
    return ActionCommand{command.empty() ? "true" : command, ""};
  }

 private:
  // Values compare by their whitespace-separated fields:
  // "4096 87380 6291456" equals the kernel's "4096\t87380\t6291456".
  static std::string normalized(const std::string& value) {
    std::istringstream in(value);
    std::string out, field;
    while (in >> field) out += (out.empty() ? "" : " ") + field;
    return out;
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(sysctl, Sysctl)

}  // namespace gpuexpand::steps
