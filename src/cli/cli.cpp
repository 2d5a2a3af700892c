#include "gpuexpand/cli/cli.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <iostream>

#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand {
namespace {

// Logs go to stderr (warnings by default, -v info, -vv debug); --log-file
// adds a file that always gets debug detail, for the post-mortem.
void configure_logging(const cli::GlobalOptions& options) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_level(options.quiet              ? spdlog::level::err
                     : options.verbosity >= 2   ? spdlog::level::debug
                     : options.verbosity == 1 ? spdlog::level::info
                                              : spdlog::level::warn);
  std::vector<spdlog::sink_ptr> sinks{console};
  if (!options.log_file.empty()) {
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.log_file);
    file->set_level(spdlog::level::debug);
    sinks.push_back(file);
  }
  auto logger = std::make_shared<spdlog::logger>("gpuexpand", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::debug);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
}

// One socket per node: 1,000 nodes need more than the usual soft limit
// of 1,024 descriptors; the hard limit is ours to use.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The first word that is neither an option nor an option's value names
// the command; one that names none gets "did you mean".
std::optional<std::string> unknown_command(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands({})) names.push_back(command->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return std::nullopt;
    if (word.rfind("-", 0) == 0) {
      // A global option that takes a value in the next word.
      if ((word == "--log-file" || word == "--data-dir" || word == "--color") && i + 1 < argc) ++i;
      continue;
    }
    if (std::find(names.begin(), names.end(), word) != names.end()) return std::nullopt;
    std::string message = "unknown command '" + word + "'";
    if (auto suggestion = closest_match(word, names)) message += " (did you mean '" + *suggestion + "'?)";
    return message;
  }
  return std::nullopt;
}

}  // namespace

int run_cli(int argc, char** argv) {
  // A node that drops its connection must not kill us with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  raise_open_file_limit();
  try {
    CLI::App app{"gpuexpand: add GPU nodes to a running training cluster, safely and repeatably"};
    app.require_subcommand(1);
    // Global flags anywhere on the line: `gpuexpand plan spec.yaml -v`.
    app.fallthrough();
    // Set before the commands are added: they copy it when created.
    app.failure_message([](const CLI::App* top, const CLI::Error& e) {
      std::string command;
      for (const CLI::App* sub : top->get_subcommands()) command = sub->get_name() + " ";
      return "gpuexpand: error: " + std::string(e.what()) + "\nRun 'gpuexpand " + command + "--help' for the options.\n";
    });
    app.set_version_flag("--version", std::string("gpuexpand ") + GPUEXPAND_VERSION);
    cli::GlobalOptions options;
    auto* verbose = app.add_flag("-v,--verbose", options.verbosity, "More detail (-vv for debug)");
    app.add_flag("-q,--quiet", options.quiet,
                 "Only errors and results: apply prints what failed and its summary line; logs only errors")
        ->excludes(verbose);
    app.add_option("--log-file", options.log_file, "Also write a debug log to this file");
    app.add_option("--data-dir", options.data_dir,
                   "Read schemas/ and playbooks/ from this directory instead of the built-in copies")
        ->envname("GPUEXPAND_DATA_DIR")
        ->check(CLI::ExistingDirectory);
    app.add_option("--color", options.color, "Colour: auto (on a terminal, unless NO_COLOR is set), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    app.add_flag("--no-color", options.no_color, "The same as --color never (also NO_COLOR)");
    app.footer(std::string("Examples:\n"
                           "  gpuexpand validate spec.yaml                 (no network)\n"
                           "  gpuexpand plan spec.yaml --limit rack=r07    (what apply would change, and why)\n"
                           "  gpuexpand apply spec.yaml                    (shows the plan, asks, then applies)\n"
                           "  gpuexpand doctor spec.yaml --limit @failed   (what is wrong, and what to check next)\n\n") +
               "Exit codes: " + cli::kExitCodesText +
               "\nRun 'gpuexpand COMMAND --help' for a command's options and examples.");

    cli::Action action;
    cli::add_init_command(app, action);
    cli::add_validate_command(app, action);
    cli::add_inventory_command(app, action);
    cli::add_facts_command(app, action);
    cli::add_plan_command(app, action);
    cli::add_apply_command(app, action);
    cli::add_status_command(app, action);
    cli::add_rollback_command(app, action);
    cli::add_verify_command(app, action);
    cli::add_doctor_command(app, action);
    cli::add_logs_command(app, action);
    cli::add_audit_command(app, action);
    cli::add_report_command(app, action);
    cli::add_completion_commands(app, action);

    if (auto unknown = unknown_command(app, argc, argv)) {
      std::cerr << "gpuexpand: error: " << *unknown << "\nRun 'gpuexpand --help' for the commands.\n";
      return kExitError;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --version are "errors" with exit code 0 in CLI11.
      const int code = app.exit(e);
      return code == 0 ? kExitOk : kExitError;
    }

    configure_logging(options);
    cli::Context context(options);
    try {
      return action ? action(context) : kExitError;
    } catch (const cli::CommandFailed& failed) {
      if (!failed.message.empty()) std::cerr << "gpuexpand: error: " << failed.message << "\n";
      return failed.exit_code;
    }
  } catch (const std::exception& e) {
    std::cerr << "gpuexpand: internal error: " << e.what() << "\n";
    return kExitError;
  } catch (...) {
    std::cerr << "gpuexpand: internal error\n";
    return kExitError;
  }
}

}  // namespace gpuexpand
