// directory: a directory that exists, with mode and ownership.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "file_write.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

class Directory final : public StepKind {
 public:
  Directory() : StepKind("directory", {"path"}, {"mode", "owner", "group"}) {}

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override { request_path(step, request); }

  void decide(const StepInstance&, const json&, Decision& d) const override {
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

GPUEXPAND_STEP_KIND(directory, Directory)

}  // namespace gpuexpand::steps
