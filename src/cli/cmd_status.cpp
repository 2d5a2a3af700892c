#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand::cli {
namespace {

struct StatusOptions {
  std::string state = ".gpuexpand/state.db";
  int64_t run = 0;
  std::string output = "text";
  int history = 10;
};

struct UnlockOptions {
  std::string state = ".gpuexpand/state.db";
  bool force = false;
  std::vector<std::string> nodes;
};

std::unique_ptr<StateStore> open_store(const std::string& path) {
  auto store = StateStore::open(path);
  if (!store) throw CommandFailed{kExitError, store.error().message};
  return std::move(store.value());
}

template <class T>
T checked(Result<T> result) {
  if (!result) throw CommandFailed{kExitError, result.error().message};
  return std::move(result.value());
}

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", seconds);
  return text;
}

// The latest acceptance checks, a summary line per node, then its failed and skipped checks.
// Nothing at all when no check was ever recorded.
void print_latest_checks(const std::vector<CheckResult>& checks) {
  if (checks.empty()) return;
  std::map<std::string, std::vector<const CheckResult*>> by_node;
  size_t width = 0;
  for (const auto& c : checks) {
    by_node[c.node].push_back(&c);
    width = std::max(width, c.node.size());
  }
  std::cout << "\nAcceptance checks, latest per node:\n";
  for (const auto& [node, results] : by_node) {
    int passed = 0, failed = 0, skipped = 0;
    std::set<int64_t> runs;
    for (const auto* c : results) {
      ++(c->status == CheckStatus::Pass ? passed : c->status == CheckStatus::Fail ? failed : skipped);
      runs.insert(c->run_id);
    }
    std::string run_list;
    for (int64_t id : runs) run_list += (run_list.empty() ? "" : ", ") + std::to_string(id);
    std::cout << "  " << node << std::string(width - node.size() + 2, ' ') << passed << " passed, " << failed
              << " failed, " << skipped << " skipped (run" << (runs.size() == 1 ? " " : "s ") << run_list << ")\n";
    for (CheckStatus status : {CheckStatus::Fail, CheckStatus::Skip}) {
      for (const auto* c : results) {
        if (c->status != status) continue;
        std::cout << "    " << (c->status == CheckStatus::Fail ? "FAIL " : "skip ") << c->check
                  << (c->detail.empty() ? "" : ": " + c->detail) << "\n";
      }
    }
  }
}

int run_status(Context&, const StatusOptions& options) {
  auto store = open_store(options.state);
  if (options.run > 0) {
    auto run = checked(store->run(options.run));
    if (!run) throw CommandFailed{kExitError, "no run " + std::to_string(options.run) + " in " + options.state};
    const auto results = checked(store->phase_results(options.run));
    const auto audit = checked(store->audit(options.run));
    const auto checks = checked(store->checks_of_run(options.run));
    if (options.output == "json") {
      nlohmann::json doc{{"run", *run}, {"phases", results}, {"audit", audit}};
      if (!checks.empty()) doc["checks"] = checks;
      std::cout << doc.dump(2) << "\n";
      return kExitOk;
    }
    std::cout << "Run " << run->id << ": " << run->command << " " << run->spec_file << ", " << to_string(run->status)
              << " (exit " << run->exit_code << "), " << run->started_at << " .. " << run->finished_at << "\n";
    std::vector<std::vector<std::string>> rows = {{"NODE", "PHASE", "STATUS", "CHANGES", "SECONDS", "DETAIL"}};
    for (const auto& r : results) {
      rows.push_back({r.node, r.phase, to_string(r.status), std::to_string(r.changes), seconds_text(r.duration_s),
                      r.failed_step.empty() ? r.message : r.failed_step + ": " + r.message});
    }
    print_table(rows);
    if (!checks.empty()) {
      std::cout << "Acceptance checks:\n";
      std::vector<std::vector<std::string>> check_rows = {{"NODE", "CHECK", "STATUS", "SECONDS", "DETAIL"}};
      for (const auto& c : checks) check_rows.push_back({c.node, c.check, std::string(check_status_name(c.status)), seconds_text(c.seconds), c.detail});
      print_table(check_rows);
    }
    std::cout << audit.size() << " remote commands recorded\n";
    return kExitOk;
  }

  const auto runs = checked(store->runs(options.history));
  const auto latest = checked(store->latest_phase_results({}));
  const auto latest_checks = checked(store->latest_checks({}));
  if (options.output == "json") {
    nlohmann::json doc{{"runs", runs}, {"latest", latest}};
    // "checks": {"node-01": [the latest result of each check, in the order they ran], …}
    std::map<std::string, std::vector<CheckResult>> checks_by_node;
    for (const auto& c : latest_checks) checks_by_node[c.node].push_back(c);
    if (!checks_by_node.empty()) doc["checks"] = checks_by_node;
    std::cout << doc.dump(2) << "\n";
    return kExitOk;
  }
  if (runs.empty()) {
    std::cout << "No runs recorded in " << options.state << "\n";
    return kExitOk;
  }
  std::cout << "Runs, newest first:\n";
  std::vector<std::vector<std::string>> rows = {{"RUN", "COMMAND", "STARTED", "STATUS", "EXIT", "NODES"}};
  for (const auto& r : runs) {
    rows.push_back({std::to_string(r.id), r.command, r.started_at, to_string(r.status),
                    r.status == RunStatus::Running ? "-" : std::to_string(r.exit_code), std::to_string(r.nodes.size())});
  }
  print_table(rows);

  // Latest state per node, phases in their fixed order.
  std::map<std::string, std::map<std::string, const PhaseResult*>> by_node;
  for (const auto& r : latest) by_node[r.node][r.phase] = &r;
  std::cout << "\nLatest state per node and phase:\n";
  std::vector<std::vector<std::string>> grid = {{"NODE"}};
  for (const auto& phase : phase_order()) grid[0].push_back(phase);
  std::vector<std::string> failures;
  for (const auto& [node, phases] : by_node) {
    std::vector<std::string> row = {node};
    for (const auto& phase : phase_order()) {
      auto it = phases.find(phase);
      row.push_back(it == phases.end() ? "-" : to_string(it->second->status));
      if (it != phases.end() && (it->second->status == PhaseStatus::Failed || it->second->status == PhaseStatus::RolledBack)) {
        failures.push_back(node + " " + phase + " (run " + std::to_string(it->second->run_id) + "): " +
                           (it->second->failed_step.empty() ? "" : "step " + it->second->failed_step + ": ") +
                           it->second->message);
      }
    }
    grid.push_back(row);
  }
  print_table(grid);
  if (!failures.empty()) {
    std::cout << "\nFailures:\n";
    for (const auto& f : failures) std::cout << "  " << f << "\n";
  }
  print_latest_checks(latest_checks);
  return kExitOk;
}

int run_unlock(Context&, const UnlockOptions& options) {
  if (!options.force) {
    throw CommandFailed{kExitError, "unlock needs --force: releasing a lock another apply still uses lets two runs "
                                    "change the same nodes"};
  }
  auto store = open_store(options.state);
  const auto released = checked(store->force_unlock(options.nodes, lock_holder_identity(), utc_now_rfc3339()));
  if (released.empty()) {
    std::cout << "No locks held" << (options.nodes.empty() ? "" : " on those nodes") << "\n";
  }
  for (const auto& conflict : released) std::cout << "released: " << describe(conflict) << "\n";
  return kExitOk;
}

}  // namespace

void add_status_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<StatusOptions>();
  CLI::App* cmd = app.add_subcommand(
      "status", "Runs, the latest state per node and phase, and acceptance checks, from the state store");
  cmd->add_option("--state", options->state, "State store (SQLite)")->capture_default_str();
  cmd->add_option("--run", options->run,
                  "One run: its phase results, acceptance checks and the number of remote commands");
  cmd->add_option("--history", options->history, "How many runs to list")->capture_default_str();
  cmd->add_option("-o,--output", options->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&action, options] { action = [options](Context& c) { return run_status(c, *options); }; });

  auto unlock = std::make_shared<UnlockOptions>();
  CLI::App* u = app.add_subcommand("unlock", "Release run locks left by a run that cannot finish (--force); logged");
  u->add_option("--state", unlock->state, "State store (SQLite)")->capture_default_str();
  u->add_flag("--force", unlock->force, "Really release the locks");
  u->add_option("--node", unlock->nodes, "Only these nodes (default: every lock)")->allow_extra_args(false);
  u->callback([&action, unlock] { action = [unlock](Context& c) { return run_unlock(c, *unlock); }; });
}

}  // namespace gpuexpand::cli
