#include <algorithm>
#include <chrono>
#include <iostream>

#include "audited_run.hpp"
#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/view/facts_view.hpp"

namespace gpuexpand::cli {
namespace {

struct FactsOptions : NodeCommandOptions {
  std::string output = "text";
  std::string save;
  std::vector<std::string> diff;  // A B: two nodes, host lists, racks or groups
  std::string facts_file;         // recorded facts instead of asking the nodes
};

// One side of --diff: nodes of the spec, or else reference nodes (read
// only, as plan reads them).
std::vector<const NodeSpec*> side(const ClusterSpec& spec, const std::string& term, const std::string& store) {
  auto selected = select_nodes(spec, expand_failed_limits({term}, store, spec));
  if (!selected && !spec.reference_nodes.empty()) {
    if (auto reference = select_reference_nodes(spec, {term})) selected = std::move(reference);
  }
  if (!selected) {
    std::string message = selected.error().message;  // worded for --limit
    if (message.rfind("--limit: ", 0) == 0) message.erase(0, 9);
    if (message.rfind("--limit ", 0) == 0) message.erase(0, 8);
    throw CommandFailed{kExitError, "--diff " + term + ": " + message};
  }
  return selected.value();
}

std::string names_of(const std::vector<const NodeSpec*>& nodes) {
  std::vector<std::string> names;
  for (const auto* node : nodes) names.push_back(node->name);
  return fold_hostlist(names);
}

// facts --diff A B: the facts on which two nodes (or two sets) differ.
int run_facts_diff(Context& context, const FactsOptions& options, const ClusterSpec& spec) {
  if (!options.limits.empty()) throw CommandFailed{kExitError, "--diff names its nodes itself; drop --limit"};
  const std::string store = state_path(options.state, options.spec);
  const auto a = side(spec, options.diff[0], store);
  const auto b = side(spec, options.diff[1], store);
  std::vector<const NodeSpec*> nodes;
  for (const auto* list : {&spec.nodes, &spec.reference_nodes}) {
    for (const auto& n : *list) {
      const auto in = [&](const std::vector<const NodeSpec*>& s) { return std::find(s.begin(), s.end(), &n) != s.end(); };
      if (in(a) || in(b)) nodes.push_back(&n);
    }
  }
  FactsByNode facts;
  if (!options.facts_file.empty()) {
    facts = context.recorded_facts(options.facts_file);
  } else {
    AuditedRun audited(store, "facts", options.spec);
    auto runner = make_ssh_runner(spec, nodes, options.ssh, [&audited](const AuditRecord& r) { audited.audit(r); });
    facts = gather_facts(spec, nodes, context.playbooks(), *runner, utc_now_rfc3339(), /*gpu_details=*/true,
                         AfterProbe::Close, audited.package_answers(node_names(nodes)));
    audited.finish(kExitOk);
  }
  std::vector<std::string> unreachable;
  for (const auto* node : nodes) {
    const auto found = facts.find(node->name);
    if (found == facts.end()) {
      unreachable.push_back(node->name + ": not in " + options.facts_file);
    } else if (found->second.contains("unreachable")) {
      const auto& why = found->second["unreachable"];
      const std::string reason = why.is_string() ? why.get<std::string>() : "";
      unreachable.push_back(reason.rfind(node->name, 0) == 0 ? reason : node->name + ": " + reason);
    }
  }
  const FactComparison comparison = compare_facts(facts, a, b);
  if (options.output == "json") {
    nlohmann::json doc = {{"a", names_of(a)}, {"b", names_of(b)}, {"facts", comparison.facts},
                          {"differences", nlohmann::json::array()}, {"unreachable", unreachable}};
    for (const auto& d : comparison.differences) doc["differences"].push_back({{"fact", d.fact}, {"a", d.a}, {"b", d.b}});
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << facts_diff_table(names_of(a), names_of(b), comparison.differences, comparison.facts);
    for (const auto& reason : unreachable) std::cout << "unreachable: " << reason << "\n";
  }
  return unreachable.empty() ? kExitOk : kExitError;
}

int run_facts(Context& context, const FactsOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  if (!options.diff.empty()) return run_facts_diff(context, options, spec);
  if (!options.facts_file.empty()) throw CommandFailed{kExitError, "--facts is for --diff; `facts` alone asks the nodes"};
  auto selected =
      select_nodes(spec, expand_failed_limits(options.limits, state_path(options.state, options.spec), spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();
  const PlaybookSet& playbooks = context.playbooks();
  AuditedRun audited(state_path(options.state, options.spec), "facts", options.spec);
  auto runner = make_ssh_runner(spec, nodes, options.ssh, [&audited](const AuditRecord& r) { audited.audit(r); });

  const auto start = std::chrono::steady_clock::now();
  const std::string now = utc_now_rfc3339();
  FactsByNode facts = gather_facts(spec, nodes, playbooks, *runner, now, /*gpu_details=*/true, AfterProbe::Close,
                                   audited.package_answers(node_names(nodes)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t unreachable = 0;
  for (const auto* node : nodes) unreachable += facts.at(node->name).contains("unreachable") ? 1u : 0u;
  const std::string table = options.output == "json" ? std::string() : facts_table(nodes, facts);
  // Moved, not copied: a second copy of every node's facts was 14% of the
  // peak heap at 200 nodes (heaptrack).
  nlohmann::json document = {{"schema_version", 1}, {"collected_at", now}, {"nodes", nlohmann::json::object()}};
  for (const auto* node : nodes) document["nodes"][node->name] = std::move(facts.at(node->name));
  if (!options.save.empty()) write_file_atomically(options.save, document.dump(1) + "\n");
  if (options.output == "json") {
    std::cout << document.dump(2) << "\n";
  } else {
    std::cout << table << "\n" << facts_summary_line(nodes.size(), unreachable, seconds, runner->handshake_retries());
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
  cmd->add_option("--diff", options->diff,
                  "A B: the facts on which two nodes differ (or two host lists, racks, groups: each side folded)")
      ->expected(2)
      ->allow_extra_args(false);
  cmd->add_option("--facts", options->facts_file, "With --diff: compare recorded facts (facts --save) instead of asking")
      ->check(CLI::ExistingFile);
  cmd->footer("Examples:\n  gpuexpand facts spec.yaml --limit rack=r01\n"
              "  gpuexpand facts spec.yaml -o json --save recorded.json\n"
              "  gpuexpand facts spec.yaml --diff gpu-node-001 gpu-node-097\n"
              "  gpuexpand facts spec.yaml --diff rack=r01 rack=r04\n\n"
              "Unreachable nodes are listed with the reason; the others are unaffected. Exit 1 if any node was "
              "unreachable.");
}

}  // namespace gpuexpand::cli
