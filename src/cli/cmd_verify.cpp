// `gpuexpand verify SPEC`: the acceptance checks on demand, changing
// nothing (no release, no drain), results in the state store; optionally a
// fault drill on one node.

#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>

#include "commands.hpp"
#include "audited_run.hpp"
#include "gpuexpand/view/apply_view.hpp"
#include "gpuexpand/exec/fault_drill.hpp"
#include "gpuexpand/exec/multinode.hpp"
#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/exec/acceptance_run.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/exec/store_journal.hpp"
#include "gpuexpand/exec/stored_package_answers.hpp"
#include "gpuexpand/facts/consistency.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/view/facts_view.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_drill_stop{false};
void request_drill_stop(int signal_number) {
  g_drill_stop.store(true);
  ::signal(signal_number, SIG_DFL);  // a second signal ends the process (the node's timer restores slurmd)
}

struct VerifyOptions : NodeCommandOptions {
  std::string fault_drill;  // node name
  int drill_timeout = 900;
  std::string consistency = "warn";
};

// With cluster.reference: the nodes as they are now against the reference
// nodes, probed (read-only) by a runner of their own after the nodes'.
std::optional<ConsistencyReport> verify_consistency(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                                                    const FactsByNode& facts, const PlaybookSet& playbooks,
                                                    const SshOverrides& ssh, StoreJournal& journal) {
  if (spec.reference_nodes.empty()) return std::nullopt;
  std::vector<const NodeSpec*> reference;
  for (const auto& node : spec.reference_nodes) reference.push_back(&node);
  auto runner = make_ssh_runner(spec, reference, ssh, [&journal](const AuditRecord& r) { journal.audit(r); });
  const FactsByNode reference_facts = gather_facts(spec, reference, playbooks, *runner, utc_now_rfc3339());
  std::vector<ComparedNode> compared;
  for (const auto* node : nodes) {
    const auto found = facts.find(node->name);
    if (found != facts.end() && !found->second.contains("unreachable")) compared.push_back({node, &found->second});
  }
  return check_consistency(spec, compared, reference_facts);
}

int run_verify(Context& context, const VerifyOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  const PlaybookSet& playbooks = context.playbooks();  // invalid playbooks: refused before any lock is taken
  auto selected =
      select_nodes(spec, expand_failed_limits(options.limits, state_path(options.state, options.spec), spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();
  size_t drill_index = nodes.size();
  if (!options.fault_drill.empty()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i]->name == options.fault_drill) drill_index = i;
    }
    if (drill_index == nodes.size()) {
      throw CommandFailed{kExitError, "--fault-drill " + options.fault_drill + ": not one of the selected nodes"};
    }
  }

  // Verify changes nothing, but it must not look at a node that an apply
  // is half-way through (nor stop slurmd under it): it takes the locks.
  auto store = StateStore::open(state_path(options.state, options.spec));
  if (!store) throw CommandFailed{kExitError, store.error().message};
  RunRecord record;
  record.command = options.fault_drill.empty() ? "verify" : "verify --fault-drill";
  record.spec_file = options.spec;
  record.started_at = utc_now_rfc3339();
  for (const auto* node : nodes) record.nodes.push_back(node->name);
  const int64_t run_id = begin_locked_run(**store, record);
  RunGuard run(**store, run_id);

  StoreJournal journal(**store, run_id, nullptr, &utc_now_rfc3339);
  auto runner = make_ssh_runner(spec, nodes, options.ssh, [&journal](const AuditRecord& r) { journal.audit(r); });
  std::cout << "run " << run_id << ": verifying " << nodes.size() << (nodes.size() == 1 ? " node" : " nodes")
            << std::endl;
  const auto start = Clock::now();
  StoredPackageAnswers answers(**store, record.nodes, &utc_now_rfc3339);
  FactsByNode facts = gather_facts(spec, nodes, playbooks, *runner, utc_now_rfc3339(), /*gpu_details=*/false,
                                   AfterProbe::Keep, &answers);
  warn_if_unkept(answers.flush());
  const auto consistency = verify_consistency(spec, nodes, facts, playbooks, options.ssh, journal);

  // Every reachable node is a ping peer: verify changes nothing, so a
  // reachable node's network is as configured as it will be.
  std::vector<bool> reachable(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) reachable[i] = !facts.at(nodes[i]->name).contains("unreachable");
  std::vector<NodeAcceptance> acceptance(nodes.size());
  std::vector<AcceptanceOutcome> outcomes(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeSpec& node = *nodes[i];
    if (!reachable[i]) {
      std::cout << unreachable_node_line(node.name, facts.at(node.name).value("unreachable", "")) << std::flush;
      continue;
    }
    std::vector<const json*> peers;
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (j != i && reachable[j]) peers.push_back(&facts.at(nodes[j]->name));
    }
    acceptance[i] = prepare_node_acceptance(node_acceptance_settings(spec, node, playbooks, &facts.at(node.name)), facts.at(node.name), peers,
                                            AcceptanceMode::Verify);
    runner->submit(i, acceptance_request(acceptance[i]), [&, i](const CommandOutcome& ran) {
      outcomes[i] = acceptance_outcome(acceptance[i], ran);
    });
  }
  runner->run();

  std::vector<std::vector<CheckResult>> results(nodes.size());
  std::vector<MultinodeCandidate> candidates;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!reachable[i]) continue;
    results[i] = outcomes[i].results;
    candidates.push_back({i, nodes[i]->name, acceptance[i].settings, outcomes[i].passed(), !outcomes[i].held_in.empty()});
  }
  for (const auto& [node, result] : run_multinode_check(*runner, candidates)) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i]->name == node) results[i].push_back(result);
    }
  }

  size_t passed = 0, failed = 0, unreachable = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!reachable[i]) {
      // Recorded, so `status` does not keep showing an older pass.
      CheckResult lost;
      lost.check = "acceptance";
      lost.status = CheckStatus::Fail;
      lost.detail = "unreachable: " + facts.at(nodes[i]->name).value("unreachable", std::string());
      journal.checks_recorded(nodes[i]->name, {lost});
      ++unreachable;
      continue;
    }
    std::cout << check_result_lines(nodes[i]->name, results[i]) << std::flush;
    journal.checks_recorded(nodes[i]->name, results[i]);
    ++(all_passed(results[i]) ? passed : failed);
  }

  bool drill_ok = true;
  if (drill_index < nodes.size()) {
    if (!reachable[drill_index]) {
      std::cout << "fault drill: " << options.fault_drill << " is unreachable" << std::endl;
      drill_ok = false;
    } else {
      // Ctrl-C during the drill: finish the step, then restore slurmd.
      ::signal(SIGINT, request_drill_stop);
      ::signal(SIGTERM, request_drill_stop);
      CheckResult drill = run_fault_drill(*runner, drill_index, options.fault_drill, options.drill_timeout, std::cout,
                                          &g_drill_stop);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      journal.checks_recorded(options.fault_drill, {drill});
      drill_ok = drill.status == CheckStatus::Pass;
    }
  }
  journal.flush_audit();

  std::cout << "\n"
            << verify_summary_line(nodes.size(), passed, failed, unreachable,
                                   std::chrono::duration<double>(Clock::now() - start).count())
            << std::flush;
  for (const auto& problem : journal.errors()) std::cerr << "gpuexpand: warning: " << problem << "\n";
  bool consistent_enough = true;
  if (consistency) {
    std::cout << "\n" << consistency_text(*consistency, "now") << std::flush;
    if (!consistency->consistent() && options.consistency == "strict") {
      std::cerr << "gpuexpand: error: the nodes do not match the reference nodes (--consistency strict)\n";
      consistent_enough = false;
    }
  }
  const int exit_code = failed + unreachable == 0 && drill_ok && consistent_enough ? kExitOk : kExitPartial;
  (void)run.finish(exit_code == kExitOk ? RunStatus::Succeeded : RunStatus::Failed, exit_code);
  return exit_code;
}

}  // namespace

void add_verify_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* cmd = add_node_command(app, action, "verify", "Run the acceptance checks on the nodes now (changes nothing)",
                                   options, run_verify);
  cmd->add_option("--fault-drill", options->fault_drill,
                  "Also stop slurmd on NODE, time how the controller notices and where a job goes meanwhile, restore")
      ->type_name("NODE");
  cmd->add_option("--drill-timeout", options->drill_timeout, "Seconds to wait for each drill step")
      ->capture_default_str()
      ->check(CLI::Range(10, 7200));
  cmd->add_option("--consistency", options->consistency,
                  "With cluster.reference: 'warn' reports where nodes differ from the reference nodes; 'strict' "
                  "also exits 3")
      ->check(CLI::IsMember({"warn", "strict"}));
  cmd->footer("Examples:\n  gpuexpand verify spec.yaml --limit rack=r02\n"
              "  gpuexpand verify spec.yaml --limit 'node-[01-04]' --fault-drill node-03\n\n"
              "Checks: scheduler (registration, features, GRES, a test job), gpu, network (MTU end to end),\n"
              "storage (writable, throughput), monitoring (exporter metrics), multinode (one job over the nodes).\n"
              "Results are kept in the state store (`gpuexpand status`). Exit 0: all passed; 3: a check failed.");
}

}  // namespace gpuexpand::cli
