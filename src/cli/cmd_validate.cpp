#include <iostream>

#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/spec/spec_loader.hpp"
#include "gpuexpand/view/inventory_view.hpp"

namespace gpuexpand::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> specs;
  std::string output = "text";
};

int run_validate(Context& context, const ValidateOptions& options) {
  int exit_code = kExitOk;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& path : options.specs) {
    SpecLoadResult result = load_spec_file(path, context.schema("cluster"));
    if (options.output == "json") {
      report.push_back(validate_json_entry(path, result));
    } else if (result.spec) {
      std::cout << valid_spec_line(path, *result.spec);
    } else {
      print_diagnostics(result.diagnostics, result.source_text);
      std::cerr << spec_errors_line(path, result.diagnostics.size());
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
  cmd->footer("Examples:\n  gpuexpand validate examples/h200-expansion.yaml\n  gpuexpand validate specs/*.yaml --output json\n\n"
              "Every error is reported at once as FILE:LINE:COL: message; exit 0 when all specs are valid, 1 otherwise.");
  set_action(*cmd, action, options, run_validate);
}

}  // namespace gpuexpand::cli
