#include <iostream>
#include <map>

#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/spec/spec_loader.hpp"

namespace gpuexpand::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> specs;
  std::string output = "text";
};

std::string describe(const ClusterSpec& spec) {
  std::map<std::string, size_t> racks;
  for (const auto& node : spec.nodes) {
    if (!node.rack.empty()) ++racks[node.rack];
  }
  std::string text = std::to_string(spec.nodes.size()) + (spec.nodes.size() == 1 ? " node" : " nodes");
  if (!racks.empty()) text += " in " + std::to_string(racks.size()) + (racks.size() == 1 ? " rack" : " racks");
  return text;
}

int run_validate(Context& context, const ValidateOptions& options) {
  int exit_code = kExitOk;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& path : options.specs) {
    SpecLoadResult result = load_spec_file(path, context.schema("cluster"));
    if (options.output == "json") {
      nlohmann::json entry = {{"file", path}, {"valid", result.spec.has_value()}, {"errors", nlohmann::json::array()}};
      for (const auto& d : result.diagnostics) {
        entry["errors"].push_back({{"file", d.where.file}, {"line", d.where.line}, {"column", d.where.column},
                                   {"message", d.message}});
      }
      if (result.spec) entry["nodes"] = result.spec->nodes.size();
      report.push_back(std::move(entry));
    } else if (result.spec) {
      std::cout << path << ": valid (" << describe(*result.spec) << ")\n";
    } else {
      print_diagnostics(result.diagnostics, result.source_text);
      const size_t n = result.diagnostics.size();
      std::cerr << path << ": " << n << (n == 1 ? " error" : " errors") << "\n";
    }
    if (!result.spec) exit_code = kExitError;
  }
  if (options.output == "json") std::cout << report.dump(2) << "\n";
  return exit_code;
}

}  // namespace

void add_validate_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Check specs for errors (no network): YAML, schema, host lists, references");
  cmd->add_option("SPEC", options->specs, "Spec files")->required()->check(CLI::ExistingFile);
  add_output_option(*cmd, options->output, {"text", "json"});
  cmd->footer("Example:\n  gpuexpand validate examples/h200-expansion.yaml\n\n"
              "Every error is reported at once as FILE:LINE:COL: message; exit 0 when all specs are valid, 1 otherwise.");
  set_action(*cmd, action, options, run_validate);
}

}  // namespace gpuexpand::cli
