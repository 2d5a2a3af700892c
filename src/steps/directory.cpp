// directory: a directory that exists, with mode and ownership.

#include "decision.hpp"
#include "kinds.hpp"
#include "file_write.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

using nlohmann::json;

class Directory final : public StepKind {
 public:
  std::string_view name() const override { return "directory"; }
  std::vector<std::string_view> required_parameters() const override { return {"path"}; }
  std::vector<std::string_view> optional_parameters() const override { return {"mode", "owner", "group"}; }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    const std::string path = string_param(step.params, "path");
    if (!path.empty() && path.front() == '/') request.files.insert(path);
  }

  void decide(const StepInstance& step, const json& facts, const ChangedSteps& changed,
              std::vector<PlannedChange>& out) const override {
    Decision d(step, facts, changed, out);
    const std::string path = d.param("path");
    const json* f = d.file_facts(path);
    if (!f) return;
    if (!f->value("exists", false)) {
      d.add(ChangeAction::Create, path, "directory does not exist");
      return;
    }
    d.ownership(*f, path);
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    json& entry = file_entry(facts, param_text(step.params, "path"));
    entry["exists"] = true;
    set_ownership(entry, step.params);
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    touch.directories.insert(string_param(step.params, "path"));
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    const std::string path = shell_quote(param_text(step.params, "path"));
    return ActionCommand{"mkdir -p -- " + path + ownership_commands(step.params, path), ""};
  }
};

}  // namespace

const StepKind& directory_kind() {
  static const Directory kind;
  return kind;
}

}  // namespace gpuexpand::steps
