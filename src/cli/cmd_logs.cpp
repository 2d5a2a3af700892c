// gpuexpand logs [SPEC] NODE: what a run did on one node, command by
// command with its output, from the log files the run wrote beside the
// state store (exec/run_log.hpp). Reads files only: no node is reached.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "gpuexpand/exec/run_log.hpp"
#include "gpuexpand/util/exit_codes.hpp"

namespace gpuexpand::cli {
namespace {
namespace fs = std::filesystem;

struct LogsOptions {
  std::vector<std::string> positionals;  // [SPEC] NODE
  std::string state;
  int64_t run = 0;
  std::string phase;
  bool failed = false;
};

bool is_run_number(const std::string& name) {
  return !name.empty() && name.size() < 19 && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The newest run folder under `runs` that holds a log of `node`; 0: none.
int64_t newest_run_with(const fs::path& runs, const std::string& node) {
  int64_t newest = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(runs, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_run_number(name)) continue;
    const int64_t id = std::stoll(name);
    if (id > newest && fs::exists(entry.path() / (node + ".log"), ec)) newest = id;
  }
  return newest;
}

int run_logs(Context&, const LogsOptions& options) {
  const bool with_spec = options.positionals.size() == 2;
  const std::string spec = with_spec ? options.positionals[0] : "";
  const std::string node = options.positionals.back();
  // A node's name becomes a file name: never a path.
  if (node.empty() || node.find('/') != std::string::npos || node.front() == '.') {
    throw CommandFailed{kExitError, "logs: '" + node + "' is not a node name"};
  }
  if (with_spec && !fs::is_regular_file(spec)) throw CommandFailed{kExitError, "SPEC: file does not exist: " + spec};
  const std::string store = store_to_read(options.state, spec);
  const fs::path runs = RunLog::runs_directory(store);
  const int64_t run = options.run > 0 ? options.run : newest_run_with(runs, node);
  if (run == 0) {
    throw CommandFailed{kExitError, "no run has a log of " + node + " in " + runs.string() +
                                        " (runs keep their logs beside the state store " + store + ")"};
  }
  const fs::path file = fs::path(RunLog::directory(store, run)) / (node + ".log");
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw CommandFailed{kExitError, "run " + std::to_string(run) + " has no log of " + node + " (" + file.string() + ")"};
  }
  std::ostringstream text;
  text << in.rdbuf();
  const std::string shown = filter_run_log(text.str(), options.phase, options.failed);
  std::cout << "run " << run << ", " << node << ": " << file.string() << "\n";
  if (shown.empty()) {
    std::cout << "(nothing" << (options.failed ? " failed" : "")
              << (options.phase.empty() ? "" : " in phase " + options.phase) << ")\n";
  }
  std::cout << shown << std::flush;
  return kExitOk;
}

}  // namespace

void add_logs_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<LogsOptions>();
  CLI::App* cmd = app.add_subcommand("logs", "What a run did on one node: every command with its output and timing");
  cmd->add_option("[SPEC] NODE", options->positionals, "The spec whose store to read (optional), and the node")
      ->required()
      ->expected(1, 2);
  cmd->add_option("--state", options->state, "State store (default: beside SPEC, else ./.gpuexpand/state.db)");
  cmd->add_option("--run", options->run, "This run (default: the newest run with a log of NODE)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--phase", options->phase, "Only the entries of this phase")->check(phase_name_check());
  cmd->add_flag("--failed", options->failed,
                "Only what failed: commands that did not exit 0, failed phases and checks, the node's outcome");
  cmd->footer("Examples:\n  gpuexpand logs spec.yaml gpu-node-017 --failed\n"
              "  gpuexpand logs spec.yaml gpu-node-017 --run 12 --phase gpu-driver\n\n"
              "The files: .gpuexpand/runs/RUN/NODE.log beside the state store, the newest " +
              std::to_string(RunLog::kRunsKept) + " runs kept.");
  set_action(*cmd, action, options, run_logs);
}

}  // namespace gpuexpand::cli
