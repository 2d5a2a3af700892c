// copy: a file from the operator's machine (or the Slurm controller),
// compared by SHA-256 only: its content (a munge key) is never in the facts,
// the plan or a log.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "file_write.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/local_file.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {
namespace {

class Copy final : public StepKind {
 public:
  Copy() : StepKind("copy", {"path", "src"}, {"src_sha256", "src_host", "mode", "owner", "group"}) {}

  // A copy from the controller compares with the digest the facts found
  // there; it is pinned in the plan like a local source's, so apply refuses
  // a file that changed on the controller since.
  void pin_from_facts(json& params, const json& facts) const override {
    if (params.value("src_host", std::string()) != "controller") return;
    const auto files = facts.find("controller_files");
    if (files == facts.end() || !files->is_object()) return;
    const auto digest = files->find(params.value("src", std::string()));
    if (digest != files->end() && digest->is_string()) params["src_sha256"] = *digest;
  }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    const json& p = step.params;
    if (string_param(p, "src_host") == "controller") request.controller_files.insert(string_param(p, "src"));
    const std::string path = string_param(p, "path");
    if (!path.empty() && path.front() == '/') {
      request.files.insert(path);
      request.secret_files.insert(path);
    }
  }

  void decide(const StepInstance&, const json&, Decision& d) const override {
    const std::string path = d.param("path");
    const json* f = d.existing_file(path);
    if (!f) return;
    const std::string wanted = d.param("src_sha256");
    const bool on_controller = d.param("src_host") == "controller";
    if (wanted.empty() && on_controller) {
      d.add(ChangeAction::Unknown, path, d.param("src") + " on the controller: not found or not asked; decided at apply");
    } else if (wanted.empty()) {
      d.add(ChangeAction::Unknown, path, "cannot read " + d.param("src") + " here; decided at apply");
    } else if (!member(*f, "sha256")) {
      d.add(ChangeAction::Unknown, path, "digest not in the facts; decided on the node");
    } else if (param_text(*f, "sha256") != wanted) {
      d.add(ChangeAction::Update, path,
            "content differs from " + d.param("src") + (on_controller ? " on the controller" : ""));
    }
    d.ownership(*f, path);
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    json& entry = file_entry(facts, param_text(step.params, "path"));
    entry["exists"] = true;
    entry.erase("content");
    entry["sha256"] = param_text(step.params, "src_sha256");
    set_ownership(entry, step.params);
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    touch.files.insert(string_param(step.params, "path"));
  }

  StepExecution execution(const ResolvedStep& step) const override {
    return from_controller(step) ? StepExecution::CopyFromController : StepExecution::Command;
  }
  bool needs_controller_facts(const ResolvedStep& step) const override { return from_controller(step); }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    if (param_text(step.params, "src_host") == "controller") {
      return make_error("step '" + step.key + "': its source is on the controller: the executor fetches it");
    }
    // Read now, at apply time, and checked against the digest the plan
    // compared: a source that changed since then is refused, not sent.
    auto data = read_local_file(param_text(step.params, "src"));
    if (!data) return make_error("step '" + step.key + "': " + data.error().message);
    return copy_action(step, std::move(data.value()));
  }

 private:
  static bool from_controller(const ResolvedStep& step) {
    return step.params.value("src_host", std::string()) == "controller";
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(copy, Copy)

}  // namespace gpuexpand::steps

namespace gpuexpand {

using nlohmann::json;

Result<ActionCommand> copy_action(const ResolvedStep& step, std::string content) {
  const json& p = step.params;
  const std::string planned = param_text(p, "src_sha256");
  if (!planned.empty() && sha256_hex(content) != planned) {
    return make_error("step '" + step.key + "': " + param_text(p, "src") +
                      (param_text(p, "src_host") == "controller" ? " on the controller" : "") +
                      " changed since the plan was made");
  }
  json with_content = p;
  with_content["content"] = std::move(content);
  return steps::write_file_action(with_content);
}

std::string controller_source_command(const ResolvedStep& step) {
  return "cat -- " + shell_quote(param_text(step.params, "src"));
}

}  // namespace gpuexpand
