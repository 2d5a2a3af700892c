// file: a file's whole content (given in the playbook), mode and ownership.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "file_write.hpp"
#include "gpuexpand/util/digest.hpp"

namespace gpuexpand::steps {
namespace {

class File final : public StepKind {
 public:
  File() : StepKind("file", {"path", "content"}, {"mode", "owner", "group"}) {}

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override { request_path(step, request); }

  void decide(const StepInstance&, const json&, Decision& d) const override {
    const std::string path = d.param("path");
    std::string wanted = d.param("content");
    const json* f = d.file_facts(path);
    if (!f) return;
    if (!f->value("exists", false)) {
      d.add(ChangeAction::Create, path, "does not exist");
      d.attach_diff("", wanted);  // the whole new file
      return;
    }
    if (member(*f, "content")) {
      const std::string current = param_text(*f, "content");
      if (current != wanted) {
        d.add(ChangeAction::Update, path, "content differs (" + line_change_summary(current, wanted) + ")");
        d.attach_diff(current, wanted);
      }
    } else if (member(*f, "sha256")) {
      if (param_text(*f, "sha256") != sha256_hex(wanted)) d.add(ChangeAction::Update, path, "content differs");
    } else {
      d.add(ChangeAction::Unknown, path, "content not in the facts; decided on the node");
    }
    d.ownership(*f, path);
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    json& entry = file_entry(facts, param_text(step.params, "path"));
    entry["exists"] = true;
    entry["content"] = param_text(step.params, "content");
    entry.erase("sha256");
    set_ownership(entry, step.params);
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    touch.files.insert(string_param(step.params, "path"));
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    return write_file_action(step.params);
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(file, File)

}  // namespace gpuexpand::steps
