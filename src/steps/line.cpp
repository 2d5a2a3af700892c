// line: one line present in a file, the rest of the file left as it is.

#include "decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

#include <algorithm>

namespace gpuexpand::steps {
namespace {

using nlohmann::json;

class Line final : public StepKind {
 public:
  std::string_view name() const override { return "line"; }
  std::vector<std::string_view> required_parameters() const override { return {"path", "line"}; }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    const std::string path = string_param(step.params, "path");
    if (!path.empty() && path.front() == '/') request.files.insert(path);
  }

  void decide(const StepInstance& step, const json& facts, const ChangedSteps& changed,
              std::vector<PlannedChange>& out) const override {
    Decision d(step, facts, changed, out);
    const std::string path = d.param("path");
    const std::string wanted = d.param("line");
    const json* f = d.existing_file(path);
    if (!f) return;
    if (!member(*f, "content")) {
      d.add(ChangeAction::Unknown, path, "content not in the facts; decided on the node");
      return;
    }
    const auto lines = split_lines(param_text(*f, "content"));
    if (std::find(lines.begin(), lines.end(), wanted) == lines.end()) {
      d.add(ChangeAction::Update, path, "line " + quoted(wanted) + " missing");
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    json& entry = file_entry(facts, param_text(step.params, "path"));
    std::string content = entry.value("content", std::string());
    if (!content.empty() && content.back() != '\n') content += '\n';
    entry["exists"] = true;
    entry["content"] = content + param_text(step.params, "line") + "\n";
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    touch.files.insert(string_param(step.params, "path"));
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    const std::string path = shell_quote(param_text(step.params, "path"));
    const std::string line = shell_quote(param_text(step.params, "line"));
    return ActionCommand{"touch " + path + " && { grep -qxF -- " + line + " " + path + " || printf '%s\\n' " + line +
                             " >> " + path + "; }",
                         ""};
  }
};

}  // namespace

const StepKind& line_kind() {
  static const Line kind;
  return kind;
}

}  // namespace gpuexpand::steps
