#pragma once
// One function per subcommand; each registers its options on the CLI11
// app and returns the action to run after parsing.

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "context.hpp"
#include "gpuexpand/util/exit_codes.hpp"

namespace gpuexpand::cli {

using Action = std::function<int(Context&)>;

// The store a command that only reads it (status, unlock, audit, report)
// looks at: one that is not there is a wrong path, not an empty history.
std::unique_ptr<StateStore> open_existing_store(const std::string& path);

// A store query's value, or CommandFailed with its message.
template <class T>
T checked(Result<T> result) {
  if (!result) throw CommandFailed{kExitError, result.error().message};
  return std::move(result.value());
}

// Once the command line parsed: `run(context, *options)` is the action.
template <class Options>
void set_action(CLI::App& command, Action& action, std::shared_ptr<Options> options, int (*run)(Context&, const Options&)) {
  command.callback([&action, options, run] { action = [options, run](Context& c) { return run(c, *options); }; });
}

// What the commands that act on a spec's nodes (plan, facts, apply,
// rollback, verify) share: the base of their options.
struct NodeCommandOptions {
  std::string spec;
  std::vector<std::string> limits;
  std::string state;  // "": default_state_path(the spec)
  SshOverrides ssh;
};

// The store a spec's runs share: .gpuexpand/state.db in the spec's own
// directory, not the shell's, so the same spec applied from anywhere has
// one history and one lock table (docs/architecture.md, "State store").
std::string default_state_path(const std::string& spec_path);
// --state when given, else the default beside `spec_path`.
std::string state_path(const std::string& state_option, const std::string& spec_path);
// For the commands whose SPEC is optional (status, unlock, logs): --state,
// else the store beside SPEC, else ./.gpuexpand/state.db (a spec here).
std::string store_to_read(const std::string& state_option, const std::string& spec_path);
// `@failed` (and `!@failed`) in --limit terms replaced by the nodes the
// newest apply in the store at `store_path` did not finish; the limits
// unchanged when no term names it. No store or no apply yet: CommandFailed.
// When only @failed was asked for and nothing is left to retry, prints so
// and throws CommandFailed{kExitOk}: nothing to do is a success.
std::vector<std::string> expand_failed_limits(const std::vector<std::string>& limits, const std::string& store_path,
                                              const ClusterSpec& spec);
struct NodeCommandHelp {
  std::string state = "State store (SQLite; default .gpuexpand/state.db beside the spec)";
  std::string spec = "Spec file";
  std::string limit_names = "-l,--limit";
};
inline NodeCommandHelp node_help(std::string state, std::string spec = "Spec file",
                                 std::string limit_names = "-l,--limit") {
  NodeCommandHelp help;
  help.state = std::move(state);
  help.spec = std::move(spec);
  help.limit_names = std::move(limit_names);
  return help;
}
// SPEC, --limit, --state and the SSH overrides, in that order in --help.
void add_node_options(CLI::App& command, NodeCommandOptions& options, const NodeCommandHelp& help);

// The subcommand `name` with the shared node options and its action.
template <class Options>
CLI::App* add_node_command(CLI::App& app, Action& action, const std::string& name, const std::string& description,
                           std::shared_ptr<Options> options, int (*run)(Context&, const Options&),
                           const NodeCommandHelp& help = {}) {
  CLI::App* command = app.add_subcommand(name, description);
  add_node_options(*command, *options, help);
  set_action(*command, action, options, run);
  return command;
}

// -o,--output with its choices ("text or json").
// -o/--output with one vocabulary across commands (text, json, …);
// `aliases` maps a word an older release accepted to its current one.
void add_output_option(CLI::App& command, std::string& output, const std::vector<std::string>& choices,
                       const std::map<std::string, std::string>& aliases = {});

// A phase name (--until, logs --phase): an unknown one is refused with
// "did you mean" and the list of phases.
CLI::Validator phase_name_check();

void add_validate_command(CLI::App& app, Action& action);
void add_inventory_command(CLI::App& app, Action& action);
void add_plan_command(CLI::App& app, Action& action);
void add_facts_command(CLI::App& app, Action& action);
void add_apply_command(CLI::App& app, Action& action);
void add_status_command(CLI::App& app, Action& action);
void add_rollback_command(CLI::App& app, Action& action);
void add_verify_command(CLI::App& app, Action& action);
void add_logs_command(CLI::App& app, Action& action);
void add_audit_command(CLI::App& app, Action& action);
void add_init_command(CLI::App& app, Action& action);
void add_doctor_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);
// `completion bash|zsh` and `man`, generated from `app` (after every other command is added).
void add_completion_commands(CLI::App& app, Action& action);

// The exit codes in one sentence: the top-level --help and the manual page.
extern const char* const kExitCodesText;

}  // namespace gpuexpand::cli
