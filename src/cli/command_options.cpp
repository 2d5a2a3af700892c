// The options several commands share, declared once so their names, help
// and checks cannot drift apart between commands.

#include "commands.hpp"

#include <algorithm>
#include <filesystem>

#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand::cli {

std::string default_state_path(const std::string& spec_path) {
  const std::filesystem::path dir = std::filesystem::path(spec_path).parent_path();
  return (dir / ".gpuexpand" / "state.db").string();
}

std::string state_path(const std::string& state_option, const std::string& spec_path) {
  return state_option.empty() ? default_state_path(spec_path) : state_option;
}

std::string store_to_read(const std::string& state_option, const std::string& spec_path) {
  if (!state_option.empty()) return state_option;
  return spec_path.empty() ? ".gpuexpand/state.db" : default_state_path(spec_path);
}

std::unique_ptr<StateStore> open_existing_store(const std::string& path) {
  auto store = StateStore::open_existing(path);
  if (!store) throw CommandFailed{kExitError, store.error().message};
  return std::move(store.value());
}

void add_node_options(CLI::App& command, NodeCommandOptions& options, const NodeCommandHelp& help) {
  command.add_option("SPEC", options.spec, help.spec)->required()->check(CLI::ExistingFile);
  command.add_option(help.limit_names, options.limits, "Select nodes (see inventory --help)")->allow_extra_args(false);
  command.add_option("--state", options.state, help.state);
  add_ssh_options(command, options.ssh);
}

CLI::Validator phase_name_check() {
  return CLI::Validator(
      [](std::string& phase) -> std::string {
        const auto& phases = phase_order();
        if (std::find(phases.begin(), phases.end(), phase) != phases.end()) return "";
        std::string message = "no phase '" + phase + "'";
        if (auto suggestion = closest_match(phase, phases)) message += " (did you mean '" + *suggestion + "'?)";
        std::string all;
        for (const auto& p : phases) all += (all.empty() ? "" : ", ") + p;
        return message + "; the phases: " + all;
      },
      "PHASE");
}

void add_output_option(CLI::App& command, std::string& output, const std::vector<std::string>& choices,
                       const std::map<std::string, std::string>& aliases) {
  std::string words;
  for (size_t i = 0; i < choices.size(); ++i) {
    words += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  }
  CLI::Option* option = command.add_option("-o,--output", output, words);
  if (!aliases.empty()) option->transform(CLI::Transformer(aliases).description(""));
  option->check(CLI::IsMember(choices));
}

}  // namespace gpuexpand::cli
