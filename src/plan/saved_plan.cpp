#include "gpuexpand/plan/saved_plan.hpp"

#include "gpuexpand/plan/plan.hpp"

namespace gpuexpand {

Result<std::optional<nlohmann::json>> parse_saved_plan(const std::string& text, const std::string& path,
                                                       const JsonSchema& plan_schema) {
  auto document = nlohmann::json::parse(text, nullptr, false);
  // Only a document that calls itself a plan is read as one; any other
  // `kind` (of any type) or none is not a plan.
  if (!document.is_object()) return std::optional<nlohmann::json>{};
  const auto kind = document.find("kind");
  if (kind == document.end() || *kind != "gpuexpand-plan") return std::optional<nlohmann::json>{};
  if (const auto format = document.find("format_version");
      format != document.end() && format->is_number_integer() && *format != Plan::kFormatVersion) {
    return make_error(path + ": a plan of format " + format->dump() + ", and this gpuexpand applies format " +
                      std::to_string(Plan::kFormatVersion) + "; plan again");
  }
  const auto problems = plan_schema.validate_json(document);
  if (!problems.empty()) return make_error(path + ": not a valid plan document: " + problems.front());
  return std::optional<nlohmann::json>{std::move(document)};
}

Result<SavedPlanScope> saved_plan_scope(const nlohmann::json& plan, const ClusterSpec& spec,
                                        const PlaybookSet& playbooks, const std::string& plan_path,
                                        const std::string& spec_path, bool limited) {
  if (limited) return make_error("--limit cannot narrow a saved plan; plan again with --limit");
  // The schema made these present and strings; .at() keeps a document
  // that was not checked from reaching undefined behaviour.
  if (plan.at("spec").at("sha256") != spec_digest(spec)) {
    return make_error("refusing to apply " + plan_path + ": " + spec_path + " changed since the plan was made; plan again");
  }
  if (plan.at("playbooks_sha256") != playbooks.digest) {
    return make_error("refusing to apply " + plan_path + ": the playbooks changed since the plan was made; plan again");
  }
  SavedPlanScope scope;
  for (const auto& node : plan.at("nodes")) {
    if (node.at("status") != "changes") continue;
    const auto name = node.at("name").get<std::string>();
    scope.nodes += (scope.nodes.empty() ? "" : ",") + name;
    const auto digest = node.find("facts_sha256");
    scope.facts_digests[name] = digest != node.end() && digest->is_string() ? digest->get<std::string>() : "";
  }
  return scope;
}

}  // namespace gpuexpand
