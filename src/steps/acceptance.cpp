// acceptance: the node passed its acceptance checks with its current
// settings (the record in kAcceptanceRecordPath says so). The checks
// themselves are accept/'s; the executor runs them.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/accept/acceptance.hpp"

namespace gpuexpand::steps {
namespace {

class Acceptance final : public StepKind {
 public:
  // Which checks exist is the playbook's (`checks`); what they expect and
  // their thresholds come from the node's spec.
  Acceptance() : StepKind("acceptance", {}, {"checks"}) {}

  Result<void> check_rendered(const json& params) const override {
    return check_declared_checks(params.value("checks", json()));
  }

  // The declared checks go into the settings (and the record) and leave
  // the parameters: one place says what acceptance runs.
  void add_from_variables(json& params, const json& vars) const override {
    params["settings"] = acceptance_settings(vars, params.value("checks", json()));
    params.erase("checks");
  }

  void request_facts(const ResolvedStep&, FactsRequest& request) const override {
    request.files.insert(kAcceptanceRecordPath);
  }

  // Passed with the node's current acceptance settings, or not (yet).
  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const json* files = member(facts, "files");
    const json* f = files ? member(*files, kAcceptanceRecordPath) : nullptr;
    const std::string wanted = acceptance_record(step.params.value("settings", json::object()));
    if (!f) {
      d.add(ChangeAction::Unknown, "acceptance", "record not in the facts; decided on the node");
    } else if (!f->value("exists", false)) {
      d.add(ChangeAction::Create, "acceptance", "not passed yet");
    } else if (param_text(*f, "content") != wanted) {
      d.add(ChangeAction::Update, "acceptance", "passed with other settings; checked again");
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    json& entry = file_entry(facts, kAcceptanceRecordPath);
    entry["exists"] = true;
    entry["content"] = acceptance_record(step.params.value("settings", json::object()));
    entry.erase("sha256");
  }

  void touch(const ResolvedStep&, PhaseTouch& touch) const override { touch.files.insert(kAcceptanceRecordPath); }

  StepExecution execution(const ResolvedStep&) const override { return StepExecution::Acceptance; }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    return make_error("step '" + step.key + "': acceptance is run by the executor");
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(acceptance, Acceptance)

}  // namespace gpuexpand::steps
