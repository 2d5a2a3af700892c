#include <iostream>

#include "audited_run.hpp"
#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/view/facts_view.hpp"
#include "gpuexpand/view/plan_text.hpp"

namespace gpuexpand::cli {
namespace {

struct PlanOptions : NodeCommandOptions {
  std::string facts_file;
  std::string output = "text";
  std::string out_file;
  bool detailed_exitcode = false;
  bool no_fold = false;
  bool diff = false;
  std::string save_facts;
  std::string consistency = "warn";
};

// The selected nodes as the planner predicts them, against the reference.
ConsistencyReport plan_consistency(const ClusterSpec& spec, const Plan& plan, const FactsByNode& facts) {
  std::map<std::string, const NodeSpec*> by_name;
  for (const auto& node : spec.nodes) by_name[node.name] = &node;
  std::vector<ComparedNode> compared;
  for (const auto& node : plan.nodes) {
    if (node.predicted_facts) compared.push_back({by_name[node.node], node.predicted_facts.get()});
  }
  return check_consistency(spec, compared, facts);
}

int run_plan(Context& context, const PlanOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  auto selected =
      select_nodes(spec, expand_failed_limits(options.limits, state_path(options.state, options.spec), spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const PlaybookSet& playbooks = context.playbooks();
  FactsByNode facts;
  if (!options.facts_file.empty()) {
    facts = context.recorded_facts(options.facts_file);
  } else {
    // Live: one probe per node, then plan; the facts can be kept for CI.
    // Reference nodes are probed in the same round, and only probed.
    std::vector<const NodeSpec*> probed = selected.value();
    for (const auto& node : spec.reference_nodes) probed.push_back(&node);
    AuditedRun audited(state_path(options.state, options.spec), "plan", options.spec);
    auto runner = make_ssh_runner(spec, probed, options.ssh, [&audited](const AuditRecord& r) { audited.audit(r); });
    const std::string now = utc_now_rfc3339();
    facts = gather_facts(spec, probed, playbooks, *runner, now, /*gpu_details=*/false, AfterProbe::Close,
                         audited.package_answers(node_names(probed)));
    audited.finish(kExitOk);  // the record is of the probes; the plan's outcome is its exit code
    if (!options.save_facts.empty()) {
      nlohmann::json document = {{"schema_version", 1}, {"collected_at", now}, {"nodes", facts}};
      write_file_atomically(options.save_facts, document.dump(1) + "\n");
    }
  }

  Plan plan = make_plan(spec, selected.value(), playbooks, facts, utc_now_rfc3339());
  // The document (with its exact fold check) only when someone reads it:
  // it is most of a text plan's time at 128 nodes.
  std::optional<ConsistencyReport> consistency;
  if (!spec.reference_nodes.empty()) consistency = plan_consistency(spec, plan, facts);
  if (!options.out_file.empty() || options.output == "json") {
    nlohmann::json json = plan_to_json(plan);
    if (consistency) json["consistency"] = consistency_json(*consistency);
    const std::string document = json.dump(2) + "\n";
    if (!options.out_file.empty()) write_file_atomically(options.out_file, document);
    if (options.output == "json") std::cout << document;
  }
  if (options.output == "markdown") {
    PlanTextOptions text;
    text.fold = !options.no_fold;
    text.diff = options.diff;
    std::cout << render_plan_markdown(plan, text);
    if (consistency) std::cout << "\n```\n" << consistency_text(*consistency, "after apply") << "```\n";
  } else if (options.output == "text") {
    PlanTextOptions text;
    text.color = context.use_color();
    text.fold = !options.no_fold;
    text.show_steps = context.options().verbosity > 0;
    text.diff = options.diff || context.options().verbosity > 0;  // -v: the steps and the diffs
    std::cout << render_plan_text(plan, text);
    if (consistency) std::cout << "\n" << consistency_text(*consistency, "after apply");
    if (!options.out_file.empty()) std::cout << "Saved the plan to " << options.out_file << "\n";
  }

  // An unreachable node's state is unknown: the plan is incomplete, so it
  // cannot report "nothing to change" (0) or only "changes" (2).
  const PlanSummary summary = plan.summary();
  if (summary.errors > 0 || summary.unreachable > 0) {
    std::cerr << plan_incomplete_line(summary);
    return kExitError;
  }
  if (consistency && !consistency->consistent() && options.consistency == "strict") {
    std::cerr << "gpuexpand: error: the nodes would not match the reference nodes (--consistency strict)\n";
    return kExitError;
  }
  if (options.detailed_exitcode && plan.has_changes()) return kExitChanges;
  return kExitOk;
}

}  // namespace

void add_plan_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* cmd = add_node_command(app, action, "plan", "Show, per node and phase, what apply would change and why",
                                   options, run_plan,
                                   node_help("State store: live probe commands are recorded in its audit"));
  auto* facts_option = cmd->add_option("--facts", options->facts_file,
                                       "Plan against recorded facts (JSON) instead of asking the nodes")
                           ->check(CLI::ExistingFile);
  cmd->add_option("--save-facts", options->save_facts, "Keep the live facts in this file (JSON)")
      ->excludes(facts_option);
  add_output_option(*cmd, options->output, {"text", "json", "markdown"});
  cmd->add_option("--out", options->out_file, "Also save the plan document (JSON) to this file, for apply");
  cmd->add_flag("--detailed-exitcode", options->detailed_exitcode,
                "Exit 0: no changes, 2: changes pending, 1: error or incomplete (a node unreachable)");
  cmd->add_option("--consistency", options->consistency,
                  "With cluster.reference: 'warn' reports where nodes would differ from the reference nodes; "
                  "'strict' also exits 1")
      ->check(CLI::IsMember({"warn", "strict"}));
  cmd->add_flag("--no-fold", options->no_fold, "Show every node on its own, even when plans are identical");
  cmd->add_flag("--diff", options->diff,
                "Under each file change, the unified diff of its content (values of password, secret, token and key "
                "settings masked); -v shows them too");
  cmd->footer("Examples:\n  gpuexpand plan spec.yaml                     (asks every node over SSH)\n"
              "  gpuexpand plan spec.yaml --facts recorded.json --detailed-exitcode\n"
              "  gpuexpand plan spec.yaml --facts recorded.json --out plan.json\n"
              "  gpuexpand plan spec.yaml --limit rack=r07 --diff\n\n"
              "Markers: + create  ~ update  - remove  ? decided on the node (the facts do not say)");
}

}  // namespace gpuexpand::cli
