// kernel_module: modules loaded now (modules-load.d is a file step).

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

#include <algorithm>

namespace gpuexpand::steps {
namespace {

class KernelModule final : public StepKind {
 public:
  KernelModule() : StepKind("kernel_module", {"names"}) {}

  Result<void> check_rendered(const json& params) const override { return need_names(params); }

  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const json* modules = member(facts, "kernel_modules");
    for (const auto& name : param_names(step.params["names"])) {
      const std::string target = "module " + name;
      if (!modules || !member(*modules, "loaded")) {
        d.add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
        continue;
      }
      const auto loaded = param_names((*modules)["loaded"]);
      // The kernel reports modules with '_' where names may use '-'.
      std::string canonical = name;
      std::replace(canonical.begin(), canonical.end(), '-', '_');
      if (std::find(loaded.begin(), loaded.end(), canonical) == loaded.end()) {
        d.add(ChangeAction::Update, target, "not loaded");
      }
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    json& loaded = facts["kernel_modules"]["loaded"];
    if (!loaded.is_array()) loaded = json::array();
    for (std::string name : param_names(step.params.value("names", json()))) {
      std::replace(name.begin(), name.end(), '-', '_');
      if (std::find(loaded.begin(), loaded.end(), name) == loaded.end()) loaded.push_back(name);
    }
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    std::string command;
    for (const auto& name : param_names(step.params.value("names", json()))) {
      command += (command.empty() ? "" : " && ") + std::string("modprobe ") + shell_quote(name);
    }
    return ActionCommand{command.empty() ? "true" : command, ""};
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(kernel_module, KernelModule)

}  // namespace gpuexpand::steps
