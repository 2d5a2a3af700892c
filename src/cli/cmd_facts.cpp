#include <chrono>
#include <iostream>

#include "audited_run.hpp"
#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/inventory/selection.hpp"

namespace gpuexpand::cli {
namespace {

struct FactsOptions {
  std::string spec;
  std::vector<std::string> limits;
  std::string output = "table";
  std::string save;
  std::string state = ".gpuexpand/state.db";
  SshOverrides ssh;
};

std::string cell(const nlohmann::json& facts, const nlohmann::json::json_pointer& at, const std::string& fallback = "-") {
  if (!facts.contains(at) || facts.at(at).is_null()) return fallback;
  const auto& v = facts.at(at);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void print_table(const std::vector<const NodeSpec*>& nodes, const FactsByNode& facts) {
  std::vector<std::vector<std::string>> rows = {{"NODE", "OS", "KERNEL", "HOSTNAME", "GPUS", "DRIVER"}};
  std::vector<std::string> unreachable;
  for (const auto* node : nodes) {
    const auto& f = facts.at(node->name);
    if (f.contains("unreachable")) {
      unreachable.push_back(f["unreachable"].get<std::string>());
      continue;
    }
    const std::string gpus = cell(f, "/gpus/count"_json_pointer, "0") +
                             (f["gpus"].contains("model") && f["gpus"]["model"].is_string()
                                  ? " x " + f["gpus"]["model"].get<std::string>()
                                  : "");
    rows.push_back({node->name, cell(f, "/os/pretty_name"_json_pointer), cell(f, "/os/kernel"_json_pointer),
                    cell(f, "/hostname"_json_pointer), gpus, cell(f, "/gpus/driver_version"_json_pointer)});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
  for (const auto& reason : unreachable) std::cout << "unreachable: " << reason << "\n";
}

int run_facts(Context& context, const FactsOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  auto selected = select_nodes(spec, options.limits);
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();
  const PlaybookSet& playbooks = context.playbooks();
  AuditedRun audited(options.state, "facts", options.spec);
  auto runner = make_ssh_runner(spec, nodes, options.ssh, [&audited](const AuditRecord& r) { audited.audit(r); });

  const auto start = std::chrono::steady_clock::now();
  const std::string now = utc_now_rfc3339();
  FactsByNode facts = gather_facts(spec, nodes, playbooks, *runner, now);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  nlohmann::json document = {{"schema_version", 1}, {"collected_at", now}, {"nodes", nlohmann::json::object()}};
  size_t unreachable = 0;
  for (const auto* node : nodes) {
    document["nodes"][node->name] = facts.at(node->name);
    if (facts.at(node->name).contains("unreachable")) ++unreachable;
  }
  if (!options.save.empty()) write_file_atomically(options.save, document.dump(1) + "\n");
  if (options.output == "json") {
    std::cout << document.dump(2) << "\n";
  } else {
    print_table(nodes, facts);
    char timing[64];
    std::snprintf(timing, sizeof timing, " (%.1f s)", seconds);
    std::cout << "\n" << nodes.size() << (nodes.size() == 1 ? " node: " : " nodes: ") << nodes.size() - unreachable
              << " answered, " << unreachable << " unreachable" << timing << "\n";
  }
  const int exit_code = unreachable == 0 ? kExitOk : kExitError;
  audited.finish(exit_code);
  return exit_code;
}

}  // namespace

void add_facts_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<FactsOptions>();
  CLI::App* cmd = app.add_subcommand("facts", "Gather live facts from every node: one SSH round trip each");
  cmd->add_option("SPEC", options->spec, "Spec file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-l,--limit", options->limits, "Select nodes (see inventory --help)")->allow_extra_args(false);
  cmd->add_option("-o,--output", options->output, "table or json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--save", options->save, "Also save the facts (JSON) for `plan --facts`");
  cmd->add_option("--state", options->state, "State store: the probe commands are recorded in its audit")
      ->capture_default_str();
  add_ssh_options(*cmd, options->ssh);
  cmd->footer("Examples:\n  gpuexpand facts spec.yaml --limit rack=r01\n"
              "  gpuexpand facts spec.yaml -o json --save recorded.json\n\n"
              "Unreachable nodes are listed with the reason; the others are unaffected. Exit 1 if any node was "
              "unreachable.");
  cmd->callback([&action, options] { action = [options](Context& c) { return run_facts(c, *options); }; });
}

}  // namespace gpuexpand::cli
