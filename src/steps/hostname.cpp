// hostname: the node's name, in /etc/hostname and in the running kernel.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

class Hostname final : public StepKind {
 public:
  Hostname() : StepKind("hostname", {"name"}) {}

  void decide(const StepInstance&, const json&, Decision& d) const override { d.compare_scalar("hostname", "name"); }

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

GPUEXPAND_STEP_KIND(hostname, Hostname)

}  // namespace gpuexpand::steps
