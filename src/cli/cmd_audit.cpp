// gpuexpand audit [SPEC]: every remote command any run sent, from the state
// store: node, login user (and sudo), time, duration, exit code and a
// digest of its stdin. Reads the store only; no node is reached. Secrets
// never reach it: a sensitive command is recorded as "<sensitive>" and stdin
// only by size and SHA-256 (exec/store_journal.cpp).

#include <iostream>

#include "commands.hpp"
#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/view/status_view.hpp"

namespace gpuexpand::cli {
namespace {

struct AuditOptions {
  std::string spec;
  std::string state;
  int64_t run = 0;
  std::vector<std::string> nodes;  // host lists
  bool failed = false;
  std::string output = "text";
};

int run_audit(Context&, const AuditOptions& options) {
  std::vector<std::string> nodes;
  for (const auto& expression : options.nodes) {
    auto expanded = expand_hostlist(expression);
    if (!expanded) throw CommandFailed{kExitError, "--limit " + expression + ": " + expanded.error().message};
    nodes.insert(nodes.end(), expanded->begin(), expanded->end());
  }
  const std::string path = store_to_read(options.state, options.spec);
  auto store = open_existing_store(path);
  if (options.run > 0 && !checked(store->run(options.run))) {
    throw CommandFailed{kExitError, "no run " + std::to_string(options.run) + " in " + path};
  }
  std::vector<AuditEntry> shown;
  for (auto& entry : checked(store->audit_trail(options.run, nodes))) {
    const bool ok = entry.failure == "ok" && entry.exit_code == 0;
    if (!options.failed || !ok) shown.push_back(std::move(entry));
  }
  if (options.output == "json") {
    std::cout << nlohmann::json{{"store", path}, {"commands", shown}}.dump(2) << "\n";
  } else {
    std::cout << audit_text(shown);
  }
  return kExitOk;
}

}  // namespace

void add_audit_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* cmd = app.add_subcommand(
      "audit", "Every remote command the runs sent: node, user, time, duration, exit code, stdin digest");
  cmd->add_option("SPEC", options->spec, "The spec whose store to read (.gpuexpand/state.db beside it)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--state", options->state, "State store (SQLite; default: beside SPEC, else ./.gpuexpand/state.db)");
  cmd->add_option("--run", options->run, "Only this run (default: every run, oldest first)")
      ->check(CLI::PositiveNumber);
  // --limit as every command that takes nodes spells it; --node as rollback does.
  cmd->add_option("-l,--limit,--node", options->nodes, "Only these nodes (host lists: gpu-[01-16]; repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--failed", options->failed, "Only commands that did not run or did not exit 0");
  add_output_option(*cmd, options->output, {"text", "json"});
  cmd->footer("Examples:\n  gpuexpand audit spec.yaml --run 12\n"
              "  gpuexpand audit spec.yaml --limit 'gpu-r01n[01-04]' --failed\n"
              "  gpuexpand audit spec.yaml --output json | jq '.commands[] | select(.sudo)'\n\n"
              "USER is the SSH login, +sudo when the command ran through sudo -n (become: sudo). STDIN is\n"
              "the size and the first 12 hex digits of the SHA-256 of what the command read (the whole\n"
              "digest in JSON); a command marked sensitive is recorded as <sensitive>.");
  set_action(*cmd, action, options, run_audit);
}

}  // namespace gpuexpand::cli
