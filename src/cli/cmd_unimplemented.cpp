#include "commands.hpp"
#include "gpuexpand/cli/exit_codes.hpp"

namespace gpuexpand::cli {

// Commands whose engine does not exist yet. They parse their arguments
// (so --help documents them) and then fail loudly: never a fake success.
void add_unimplemented_commands(CLI::App& app, Action& action) {
  struct Pending {
    const char* name;
    const char* summary;
    const char* needs;
  };
  static const Pending pending[] = {
      {"verify", "Run the acceptance checks on demand", "the acceptance phase"},
  };
  for (const auto& p : pending) {
    CLI::App* cmd = app.add_subcommand(p.name, std::string(p.summary) + " (not implemented yet)");
    cmd->allow_extras();
    const std::string message = std::string(p.name) + ": not implemented yet (needs " + p.needs + ")";
    cmd->callback([&action, message] {
      action = [message](Context&) -> int { throw CommandFailed{kExitError, message}; };
    });
  }
}

}  // namespace gpuexpand::cli
