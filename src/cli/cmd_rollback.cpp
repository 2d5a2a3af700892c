#include <iostream>

#include "commands.hpp"
#include "gpuexpand/exec/store_journal.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/exec/rollback.hpp"
#include "gpuexpand/plan/controller.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/view/rollback_view.hpp"

namespace gpuexpand::cli {
namespace {

struct RollbackOptions : NodeCommandOptions {
  std::string to;
};

int run_rollback(Context& context, const RollbackOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  auto selected =
      select_nodes(spec, expand_failed_limits(options.limits, state_path(options.state, options.spec), spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  // Rolling back reads checkpoints an apply left: a store that is not there
  // has none, and a mistyped --state must not create folders and an empty store.
  auto store = open_existing_store(state_path(options.state, options.spec));

  // What each node would restore; nodes with nothing to undo are left out.
  std::vector<NodeRollback> plan;
  std::vector<const NodeSpec*> nodes;
  for (const auto* node : selected.value()) {
    auto checkpoints = store->checkpoints(node->name);
    if (!checkpoints) throw CommandFailed{kExitError, checkpoints.error().message};
    auto todo = checkpoints_after(checkpoints.value(), options.to);
    if (todo.empty()) {
      std::cout << nothing_to_roll_back_line(node->name, options.to);
      continue;
    }
    plan.push_back({node->name, std::move(todo), std::nullopt});
    nodes.push_back(node);
  }
  if (plan.empty()) return kExitOk;

  RunRecord record;
  record.command = "rollback";
  record.spec_file = options.spec;
  record.spec_sha256 = spec_digest(spec);
  record.started_at = utc_now_rfc3339();
  for (const auto* node : nodes) record.nodes.push_back(node->name);
  const int64_t run_id = begin_locked_run(*store, record);
  RunGuard run(*store, run_id);

  const auto controllers = controller_endpoints(nodes);
  for (size_t i = 0; i < plan.size(); ++i) plan[i].controller = controllers[i];
  // Its remote commands go to the audit trail and the run's logs, as an apply's do.
  StoreJournal journal(*store, run_id, nullptr, &utc_now_rfc3339);
  auto runner = make_ssh_runner(spec, nodes, options.ssh, [&journal](const AuditRecord& r) { journal.audit(r); });
  auto results = roll_back(plan, *runner, [&](const CheckpointRecord& c) {
    (void)store->mark_checkpoint_restored(c.run_id, c.node, c.phase);
    PhaseRecord restored;
    restored.node = c.node;
    restored.phase = c.phase;
    restored.status = PhaseStatus::RolledBack;
    restored.message = "restored the checkpoint of run " + std::to_string(c.run_id);
    journal.phase_finished(restored);  // the store's phase result and the node's log
    std::cout << checkpoint_restored_line(c) << std::flush;
  });
  journal.flush_audit();
  for (const auto& problem : journal.errors()) std::cerr << "gpuexpand: warning: " << problem << "\n";
  const RollbackReport report = rollback_report(results, options.to);
  std::cerr << report.failures;
  std::cout << report.summary;
  const size_t failed = report.failed;
  const int exit_code = failed ? kExitPartial : kExitOk;
  (void)run.finish(failed ? RunStatus::Failed : RunStatus::Succeeded, exit_code);
  return exit_code;
}

}  // namespace

void add_rollback_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<RollbackOptions>();
  CLI::App* cmd =
      add_node_command(app, action, "rollback", "Walk nodes back through their checkpoints to the state after a phase",
                       options, run_rollback, node_help("State store (SQLite)", "Spec file", "-l,--limit,--node"));
  cmd->add_option("--to", options->to, "Keep this phase and the ones before it; undo the later ones")
      ->required()
      ->check(CLI::IsMember(phase_order()));
  cmd->footer("Examples:\n  gpuexpand rollback spec.yaml --node gpu-node-007 --to os-init\n  gpuexpand rollback spec.yaml --node gpu-node-007 --to monitoring\n\n"
              "Restores, newest first, every checkpoint taken before a phase after --to: files byte for byte,\n"
              "package versions, service states, sysctl values, mounts.");
}

}  // namespace gpuexpand::cli
