// file: a file's whole content (given in the playbook), mode and ownership.

#include "decision.hpp"
#include "kinds.hpp"
#include "file_write.hpp"
#include "gpuexpand/util/digest.hpp"

namespace gpuexpand::steps {
namespace {

using nlohmann::json;

class File final : public StepKind {
 public:
  std::string_view name() const override { return "file"; }
  std::vector<std::string_view> required_parameters() const override { return {"path", "content"}; }
  std::vector<std::string_view> optional_parameters() const override { return {"mode", "owner", "group"}; }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    const std::string path = string_param(step.params, "path");
    if (!path.empty() && path.front() == '/') request.files.insert(path);
  }

  void decide(const StepInstance& step, const json& facts, const ChangedSteps& changed,
              std::vector<PlannedChange>& out) const override {
    Decision d(step, facts, changed, out);
    const std::string path = d.param("path");
    const json* f = d.existing_file(path);
    if (!f) return;
    std::string wanted = d.param("content");
    if (member(*f, "content")) {
      const std::string current = param_text(*f, "content");
      if (current != wanted) {
        d.add(ChangeAction::Update, path, "content differs (" + line_change_summary(current, wanted) + ")");
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

const StepKind& file_kind() {
  static const File kind;
  return kind;
}

}  // namespace gpuexpand::steps
