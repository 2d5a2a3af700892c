#include <chrono>
#include <iostream>

#include "audited_run.hpp"
#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/view/facts_view.hpp"

namespace gpuexpand::cli {
namespace {

struct FactsOptions : NodeCommandOptions {
  std::string output = "text";
  std::string save;
};

int run_facts(Context& context, const FactsOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  auto selected =
      select_nodes(spec, expand_failed_limits(options.limits, state_path(options.state, options.spec), spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();
  const PlaybookSet& playbooks = context.playbooks();
  AuditedRun audited(state_path(options.state, options.spec), "facts", options.spec);
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
    std::cout << facts_table(nodes, facts) << "\n" << facts_summary_line(nodes.size(), unreachable, seconds);
  }
  const int exit_code = unreachable == 0 ? kExitOk : kExitError;
  audited.finish(exit_code);
  return exit_code;
}

}  // namespace

void add_facts_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<FactsOptions>();
  CLI::App* cmd = add_node_command(app, action, "facts", "Gather live facts from every node: one SSH round trip each",
                                   options, run_facts,
                                   node_help("State store: the probe commands are recorded in its audit"));
  add_output_option(*cmd, options->output, {"text", "json"}, {{"table", "text"}});
  cmd->add_option("--save", options->save, "Also save the facts (JSON) for `plan --facts`");
  cmd->footer("Examples:\n  gpuexpand facts spec.yaml --limit rack=r01\n"
              "  gpuexpand facts spec.yaml -o json --save recorded.json\n\n"
              "Unreachable nodes are listed with the reason; the others are unaffected. Exit 1 if any node was "
              "unreachable.");
}

}  // namespace gpuexpand::cli
