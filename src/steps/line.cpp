// line: one line present in a file, the rest of the file left as it is.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

#include <algorithm>

namespace gpuexpand::steps {
namespace {

class Line final : public StepKind {
 public:
  Line() : StepKind("line", {"path", "line"}) {}

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override { request_path(step, request); }

  void decide(const StepInstance&, const json&, Decision& d) const override {
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

GPUEXPAND_STEP_KIND(line, Line)

}  // namespace gpuexpand::steps
