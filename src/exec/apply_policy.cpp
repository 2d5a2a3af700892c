#include "gpuexpand/exec/apply_policy.hpp"

#include <algorithm>

#include "gpuexpand/exec/multinode.hpp"
#include "gpuexpand/plan/controller.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/util/exit_codes.hpp"

namespace gpuexpand {

std::vector<std::string> drifted_since_plan(const std::vector<const NodeSpec*>& nodes, const FactsByNode& now,
                                            const std::map<std::string, std::string>& facts_digests) {
  std::vector<std::string> drifted;
  for (const auto* node : nodes) {
    const auto facts = now.find(node->name);
    const auto planned = facts_digests.find(node->name);
    if (facts == now.end() || facts->second.contains("unreachable") || planned == facts_digests.end() ||
        decision_facts_digest(facts->second) != planned->second) {
      drifted.push_back(node->name);
    }
  }
  return drifted;
}

Result<RunStart> begin_run_resuming(StateStore& store, const RunRecord& record, const std::string& now,
                                    const std::function<void(const LockConflict&)>& on_takeover) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto begun = store.begin_run(record);
    if (!begun) return begun.error();
    if (auto* id = std::get_if<int64_t>(&begun.value())) return RunStart{*id, std::nullopt};
    const auto& conflict = std::get<LockConflict>(begun.value());
    if (conflict.holder_alive || attempt > 0) return RunStart{0, conflict};
    if (on_takeover) on_takeover(conflict);
    auto released = store.force_unlock(conflict.nodes, lock_holder_identity() + " (resume)", now);
    if (!released) return released.error();
  }
  // Not reached: the second attempt returns either way.
  return make_error("could not begin the run after taking over a dead holder's locks");
}

bool apply_multinode_check(const ExecutionReport& report, CommandRunner& runner,
                           const std::vector<const NodeSpec*>& nodes, RunJournal& journal) {
  // A node accepted in this run has been released: no longer held.
  std::vector<MultinodeCandidate> candidates;
  for (const auto& accepted : report.accepted) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i]->name != accepted.node) continue;
      candidates.push_back({i, accepted.node, accepted.settings, report.nodes[i].result == NodeResult::Changed, false});
    }
  }
  bool passed = true;
  for (const auto& [node, result] : run_multinode_check(runner, candidates)) {
    journal.checks_recorded(node, {result});
    passed = passed && result.status != CheckStatus::Fail;
  }
  return passed;
}

int apply_exit_code(const ExecutionReport& report, bool stop_requested, bool multinode_ok) {
  if (report.interrupted || stop_requested) return kExitInterrupted;
  const size_t not_converged = report.count(NodeResult::Failed) + report.count(NodeResult::Unreachable) +
                               report.count(NodeResult::NotStarted);
  return not_converged > 0 || !multinode_ok ? kExitPartial : kExitOk;
}

RunStatus run_status_for(int exit_code) {
  return exit_code == kExitOk            ? RunStatus::Succeeded
         : exit_code == kExitInterrupted ? RunStatus::Interrupted
                                         : RunStatus::Failed;
}

std::vector<std::string> unreachable_controllers(const std::vector<const NodeSpec*>& nodes, CommandRunner& runner) {
  const auto endpoints = controller_endpoints(nodes);
  const auto hosts = controllers_of(nodes);  // in the order endpoints number them
  std::map<size_t, std::vector<std::string>> needed_by;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (endpoints[i]) needed_by[*endpoints[i]].push_back(nodes[i]->name);
  }
  std::map<size_t, std::string> failures;
  for (const auto& [endpoint, _] : needed_by) {
    runner.submit(endpoint, command_with_stdin("true", ""), [&failures, endpoint = endpoint](const CommandOutcome& outcome) {
      if (!outcome.ok()) failures[endpoint] = outcome.message;
    });
  }
  runner.run();
  std::vector<std::string> problems;
  for (const auto& [endpoint, message] : failures) {
    const size_t host = endpoint - nodes.size();
    const std::string name = host < hosts.size() ? hosts[host].name + " (" + hosts[host].address + ")" : "?";
    problems.push_back("the Slurm controller " + name + " cannot be reached (" + fold_hostlist(needed_by[endpoint]) +
                       " would register with it): " + message);
  }
  return problems;
}

}  // namespace gpuexpand
