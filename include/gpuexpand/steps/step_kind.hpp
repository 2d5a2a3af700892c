#pragma once
// A step kind: everything gpuexpand knows about one builtin step type, in
// one place (src/steps/KIND.cpp): its parameters, what the facts probe
// must look at for it, the decision with its reason, the facts it leaves
// behind, the action, what the phase's checkpoint must save and its own
// rollback. The planner, the probe, the executor and the checkpoint ask the
// kind; none of them matches type names. docs/playbooks.md walks through
// adding one.

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/steps/action.hpp"
#include "gpuexpand/steps/facts_request.hpp"
#include "gpuexpand/steps/phase_touch.hpp"
#include "gpuexpand/steps/step.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

namespace steps {
class Decision;  // steps/decision.hpp
}

// How the executor carries a step out.
enum class StepExecution {
  Command,             // action() on the node (or on the controller when delegated)
  Reboot,              // action() asks for a reboot; the executor waits for a new boot id
  Acceptance,          // the acceptance checks (accept/), run by the executor
  CopyFromController,  // the source is read on the controller, then written like a file
};

class StepKind {
 public:
  virtual ~StepKind() = default;

  std::string_view name() const { return name_; }
  // The playbook loader refuses a missing required or an unknown parameter.
  const std::vector<std::string_view>& required_parameters() const { return required_; }
  const std::vector<std::string_view>& optional_parameters() const { return optional_; }

  // After templates are rendered: shapes a template can get wrong
  // (`names: "{{ x }}"` rendering to a number).
  virtual Result<void> check_rendered(const nlohmann::json& /*params*/) const { return {}; }
  // Parameters that come from the node's template variables rather than
  // the playbook (acceptance settings).
  virtual void add_from_variables(nlohmann::json& /*params*/, const nlohmann::json& /*vars*/) const {}
  // Parameters the plan pins from the facts (the digest of a controller's file).
  virtual void pin_from_facts(nlohmann::json& /*params*/, const nlohmann::json& /*facts*/) const {}

  // What the facts probe must look at so decide() can answer.
  virtual void request_facts(const ResolvedStep& /*step*/, FactsRequest& /*request*/) const {}
  // What would change and why, from facts alone (no round trip), said
  // through `decision` (which also knows the earlier steps that changed).
  virtual void decide(const StepInstance& step, const nlohmann::json& facts, steps::Decision& decision) const = 0;
  // The facts once the step ran: later steps are decided against them.
  virtual void predict(const ResolvedStep& /*step*/, nlohmann::json& /*facts*/) const {}
  // What the phase's checkpoint saves for this step, and its own rollback.
  virtual void touch(const ResolvedStep& /*step*/, PhaseTouch& /*touch*/) const {}

  virtual StepExecution execution(const ResolvedStep& /*step*/) const { return StepExecution::Command; }
  virtual Result<ActionCommand> action(const ResolvedStep& step, const ActionContext& context) const = 0;
  // Runs on the node's Slurm controller instead of the node (delegate_to: controller).
  virtual bool delegated_to_controller(const ResolvedStep& /*step*/) const { return false; }
  // Cannot be decided without the controller's part of the facts.
  virtual bool needs_controller_facts(const ResolvedStep& step) const { return delegated_to_controller(step); }
  // Uses the node's package manager (the first such step refreshes its index).
  virtual bool installs_packages() const { return false; }
  // Refreshes the package index itself (a changed package source), so the
  // run's next package step need not.
  virtual bool refreshes_package_index() const { return false; }

 protected:
  StepKind(std::string_view name, std::vector<std::string_view> required, std::vector<std::string_view> optional = {})
      : name_(name), required_(std::move(required)), optional_(std::move(optional)) {}

 private:
  std::string_view name_;
  std::vector<std::string_view> required_, optional_;
};

// Every builtin kind, in the order src/steps/registry.cpp lists them.
const std::vector<const StepKind*>& step_kinds();
// nullptr for an unknown type (the playbook schema refuses those first).
const StepKind* find_step_kind(std::string_view name);

// The kind's answers for a step of any type; an unknown type plans,
// probes, touches and predicts nothing, and has no action.
std::vector<PlannedChange> decide_step(const StepInstance& instance, const nlohmann::json& facts,
                                       const ChangedSteps& changed_steps);
void predict_facts_after(const ResolvedStep& step, nlohmann::json& facts);
FactsRequest facts_request_for(const std::vector<ResolvedStep>& steps);
PhaseTouch phase_touch(const std::vector<ResolvedStep>& steps);
StepExecution execution_of(const ResolvedStep& step);
bool delegated_to_controller(const ResolvedStep& step);
bool needs_controller_facts(const ResolvedStep& step);
bool installs_packages(const ResolvedStep& step);
bool refreshes_package_index(const ResolvedStep& step);

}  // namespace gpuexpand
