#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "commands.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/view/status_view.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand::cli {
namespace {

struct StatusOptions {
  std::string spec;
  std::string state;
  int64_t run = 0;
  std::string output = "text";
  int history = 10;
  std::vector<std::string> limits;
};

// --limit on the commands that read the store: the spec says what racks and
// groups the terms name (as on every command that takes nodes).
std::vector<std::string> limited_nodes(Context& context, const std::string& spec_file, const std::string& state,
                                       const std::vector<std::string>& limits, const char* command) {
  if (limits.empty()) return {};
  if (spec_file.empty()) {
    throw CommandFailed{kExitError, std::string(command) + " --limit needs SPEC (the racks and groups it names)"};
  }
  const ClusterSpec spec = context.load_spec(spec_file);
  auto selected = select_nodes(spec, expand_failed_limits(limits, state, spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  std::vector<std::string> nodes;
  for (const auto* node : selected.value()) nodes.push_back(node->name);
  return nodes;
}

// Only the records of `nodes` (all when it is empty).
template <typename T>
std::vector<T> of_nodes(std::vector<T> records, const std::vector<std::string>& nodes) {
  if (nodes.empty()) return records;
  records.erase(std::remove_if(records.begin(), records.end(),
                               [&](const T& r) { return std::find(nodes.begin(), nodes.end(), r.node) == nodes.end(); }),
                records.end());
  return records;
}

struct UnlockOptions {
  std::string spec;
  std::string state;
  bool force = false;
  std::vector<std::string> nodes;
  std::vector<std::string> limits;
};


int run_status(Context& context, const StatusOptions& options) {
  const std::string state = store_to_read(options.state, options.spec);
  const std::vector<std::string> nodes = limited_nodes(context, options.spec, state, options.limits, "status");
  auto store = open_existing_store(state);
  if (options.run > 0) {
    auto run = checked(store->run(options.run));
    if (!run) throw CommandFailed{kExitError, "no run " + std::to_string(options.run) + " in " + state};
    const auto results = of_nodes(checked(store->phase_results(options.run)), nodes);
    const auto audit = of_nodes(checked(store->audit(options.run)), nodes);
    const auto checks = of_nodes(checked(store->checks_of_run(options.run)), nodes);
    const auto outcomes = of_nodes(checked(store->node_outcomes(options.run)), nodes);
    if (options.output == "json") {
      nlohmann::json doc{{"run", *run}, {"phases", results}, {"audit", audit}};
      doc["nodes"] = nlohmann::json::array();
      for (const auto& n : outcomes) doc["nodes"].push_back({{"node", n.node}, {"result", n.result}, {"message", n.message}});
      if (!checks.empty()) doc["checks"] = checks;
      std::cout << doc.dump(2) << "\n";
      return kExitOk;
    }
    std::cout << run_text(*run, results, checks, outcomes, audit);
    return kExitOk;
  }

  const auto runs = checked(store->runs(options.history));
  const auto latest = checked(store->latest_phase_results(nodes));
  const auto latest_checks = checked(store->latest_checks(nodes));
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
    std::cout << "No runs recorded in " << state << "\n";
    return kExitOk;
  }
  std::cout << status_overview_text(runs, latest, latest_checks);
  return kExitOk;
}

int run_unlock(Context& context, const UnlockOptions& options) {
  if (!options.force) {
    throw CommandFailed{kExitError, "unlock needs --force: releasing a lock another apply still uses lets two runs "
                                    "change the same nodes"};
  }
  std::vector<std::string> nodes = options.nodes;
  for (auto& name : limited_nodes(context, options.spec, store_to_read(options.state, options.spec), options.limits, "unlock")) {
    nodes.push_back(std::move(name));
  }
  auto store = open_existing_store(store_to_read(options.state, options.spec));
  const auto released = checked(store->force_unlock(nodes, lock_holder_identity(), utc_now_rfc3339()));
  std::cout << unlock_text(released, !nodes.empty());
  return kExitOk;
}

}  // namespace

void add_status_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<StatusOptions>();
  CLI::App* cmd = app.add_subcommand(
      "status", "Runs, the latest state per node and phase, and acceptance checks, from the state store");
  cmd->add_option("SPEC", options->spec, "The spec whose store to read (.gpuexpand/state.db beside it)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--state", options->state, "State store (SQLite; default: beside SPEC, else ./.gpuexpand/state.db)");
  cmd->add_option("--run", options->run,
                  "One run: its phase results, acceptance checks and its remote commands (time, node, exit, duration)");
  cmd->add_option("--history", options->history, "How many runs to list")->capture_default_str();
  cmd->add_option("-l,--limit", options->limits, "Only the selected nodes' phases, checks and commands (needs SPEC)")
      ->allow_extra_args(false);
  add_output_option(*cmd, options->output, {"text", "json"});
  cmd->footer("Examples:\n  gpuexpand status spec.yaml                 (the latest runs, each node's phases and checks)\n"
              "  gpuexpand status spec.yaml --run 12        (one run in detail)\n"
              "  gpuexpand status spec.yaml --limit rack=r02 (those nodes only)\n"
              "  gpuexpand status spec.yaml --output json");
  set_action(*cmd, action, options, run_status);

  auto unlock = std::make_shared<UnlockOptions>();
  CLI::App* u = app.add_subcommand("unlock", "Release run locks left by a run that cannot finish (--force); logged");
  u->add_option("SPEC", unlock->spec, "The spec whose store to unlock (.gpuexpand/state.db beside it)")
      ->check(CLI::ExistingFile);
  u->add_option("--state", unlock->state, "State store (SQLite; default: beside SPEC, else ./.gpuexpand/state.db)");
  u->add_flag("--force", unlock->force, "Really release the locks");
  u->add_option("--node", unlock->nodes, "Only these nodes (default: every lock)")->allow_extra_args(false);
  u->add_option("-l,--limit", unlock->limits, "Only the selected nodes (see inventory --help; needs SPEC)")
      ->allow_extra_args(false);
  u->footer("Examples:\n  gpuexpand unlock spec.yaml --force --node gpu-node-007\n"
            "  gpuexpand unlock spec.yaml --force --limit rack=r02\n\n"
            "A lock whose holder on this host is gone is taken over by the next apply; --force is for a\n"
            "holder on another host that will not come back.");
  set_action(*u, action, unlock, run_unlock);
}

}  // namespace gpuexpand::cli
