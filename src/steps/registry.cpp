// The registry of step kinds, and the dispatch the rest of gpuexpand uses
// instead of matching type names.

#include <algorithm>

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"

namespace gpuexpand {

const std::vector<const StepKind*>& step_kinds() {
#define GPUEXPAND_KIND_ADDRESS(name) &steps::name##_kind(),
  static const std::vector<const StepKind*> kinds = {GPUEXPAND_STEP_KINDS(GPUEXPAND_KIND_ADDRESS)};
#undef GPUEXPAND_KIND_ADDRESS
  return kinds;
}

const StepKind* find_step_kind(std::string_view name) {
  for (const StepKind* kind : step_kinds()) {
    if (kind->name() == name) return kind;
  }
  return nullptr;
}

std::vector<PlannedChange> decide_step(const StepInstance& instance, const nlohmann::json& facts,
                                       const ChangedSteps& changed_steps) {
  std::vector<PlannedChange> out;
  if (const StepKind* kind = find_step_kind(instance.type)) {
    steps::Decision decision(instance, facts, changed_steps, out);
    kind->decide(instance, facts, decision);
  }
  return out;
}

void predict_facts_after(const ResolvedStep& step, nlohmann::json& facts) {
  if (const StepKind* kind = find_step_kind(step.type)) kind->predict(step, facts);
}

FactsRequest facts_request_for(const std::vector<ResolvedStep>& steps) {
  FactsRequest request;
  for (const auto& step : steps) {
    if (const StepKind* kind = find_step_kind(step.type)) kind->request_facts(step, request);
  }
  request.services.erase("");
  return request;
}

PhaseTouch phase_touch(const std::vector<ResolvedStep>& steps) {
  PhaseTouch touch;
  for (const auto& step : steps) {
    if (const StepKind* kind = find_step_kind(step.type)) kind->touch(step, touch);
  }
  touch.files.erase("");
  touch.directories.erase("");
  return touch;
}

Result<ActionCommand> action_for(const ResolvedStep& step, const ActionContext& context) {
  const StepKind* kind = find_step_kind(step.type);
  if (!kind) return make_error("step '" + step.key + "': no action for type '" + step.type + "'");
  return kind->action(step, context);
}

StepExecution execution_of(const ResolvedStep& step) {
  const StepKind* kind = find_step_kind(step.type);
  return kind ? kind->execution(step) : StepExecution::Command;
}

bool delegated_to_controller(const ResolvedStep& step) {
  const StepKind* kind = find_step_kind(step.type);
  return kind && kind->delegated_to_controller(step);
}

bool needs_controller_facts(const ResolvedStep& step) {
  const StepKind* kind = find_step_kind(step.type);
  return kind && kind->needs_controller_facts(step);
}

bool installs_packages(const ResolvedStep& step) {
  const StepKind* kind = find_step_kind(step.type);
  return kind && kind->installs_packages();
}

bool refreshes_package_index(const ResolvedStep& step) {
  const StepKind* kind = find_step_kind(step.type);
  return kind && kind->refreshes_package_index();
}

}  // namespace gpuexpand
