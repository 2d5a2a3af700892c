// The executor against a fleet of fake nodes (fake_fleet.hpp): a failed
// step rolled back, rolling batches stopped by --max-fail and by an
// all-failed batch, SIGINT's flag mid-phase, an unreachable node. The lab
// tests the same on real nodes; these run in milliseconds.

#include <gtest/gtest.h>

#include <atomic>

#include "fake_fleet.hpp"
#include "gpuexpand/exec/executor.hpp"
#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

using nlohmann::json;

class RecordingJournal final : public RunJournal {
 public:
  void phase_started(const std::string&, const std::string&) override {}
  void phase_finished(const PhaseRecord& r) override {
    finished.push_back(r.node + " " + r.phase + " " + to_string(r.status));
  }
  void checkpoint_taken(const std::string&, const std::string&, const std::string&, const json&) override {}
  void checkpoint_restored(const std::string& node, const std::string& phase) override {
    restored.push_back(node + " " + phase);
  }
  void checks_recorded(const std::string&, const std::vector<CheckResult>&) override {}
  void node_finished(const std::string&, NodeResult, const std::string&) override {}
  void batch_stopped(const std::string& reason) override { stopped = reason; }
  std::vector<std::string> finished, restored;
  std::string stopped;
};

struct Fixture {
  ClusterSpec spec;
  PlaybookSet playbooks;
  std::vector<const NodeSpec*> nodes;
};

// `count` nodes n1..nN and one phase of two command steps, a then b.
Fixture fleet(int count) {
  const std::string last = std::to_string(count);
  auto loaded = load_spec("apiVersion: gpuexpand/v1\ncluster:\n  name: test\nnodes:\n  - hosts: n[1-" + last +
                          "]\n    addresses: 10.0.0.[1-" + last + "]\n");
  EXPECT_TRUE(loaded.spec) << diagnostics_text(loaded);
  Fixture f{loaded.spec ? *loaded.spec : ClusterSpec{}, {}, {}};
  std::vector<Diagnostic> diagnostics;
  auto phase = load_playbook_text(
      "phase: os-init\norder: 1\nsteps:\n"
      "  - {id: a, type: command, check: check-a, run: run-a, rollback: 'true'}\n"
      "  - {id: b, type: command, check: check-b, run: run-b, rollback: 'true'}\n",
      "os-init.yaml", schema("playbook"), diagnostics);
  EXPECT_TRUE(phase) << (diagnostics.empty() ? "" : diagnostics.front().to_string());
  if (phase) f.playbooks.phases.push_back(*phase);
  for (const auto& node : f.spec.nodes) f.nodes.push_back(&node);
  return f;
}

std::vector<NodeResult> results(const ExecutionReport& report) {
  std::vector<NodeResult> out;
  for (const auto& node : report.nodes) out.push_back(node.result);
  return out;
}

TEST(ExecutorFleet, AFailedStepRollsThePhaseBackAndOnlyThatNodeFails) {
  Fixture f = fleet(2);
  FakeFleet runner(2);
  runner.node(0).failing.insert("run-b");
  RecordingJournal journal;
  ExecutorOptions options;
  options.run_id = 9;
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Failed, NodeResult::Changed}));
  EXPECT_NE(report.nodes[0].message.find("rolled back"), std::string::npos) << report.nodes[0].message;
  EXPECT_EQ(runner.node(0).log, (std::vector<std::string>{"probe", "checkpoint", "run-a", "run-b", "restore"}));
  EXPECT_EQ(runner.node(1).log, (std::vector<std::string>{"probe", "checkpoint", "run-a", "run-b", "probe"}));
  EXPECT_EQ(journal.restored, std::vector<std::string>{"n1 os-init"});
  EXPECT_EQ(journal.finished, (std::vector<std::string>{"n1 os-init rolled-back", "n2 os-init succeeded"}));
}

TEST(ExecutorFleet, MaxFailStopsNewBatches) {
  Fixture f = fleet(4);
  FakeFleet runner(4);
  runner.node(0).failing.insert("run-a");
  RecordingJournal journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{1, false};
  options.max_fail = CountOrPercent{1, false};
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Failed, NodeResult::NotStarted,
                                                      NodeResult::NotStarted, NodeResult::NotStarted}));
  EXPECT_FALSE(journal.stopped.empty());
  EXPECT_EQ(report.stop_reason, journal.stopped);
  EXPECT_EQ(runner.node(0).log, (std::vector<std::string>{"probe", "checkpoint", "run-a", "restore"}));
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(runner.node(i).log, std::vector<std::string>{"probe"}) << "node " << i << " was probed only";
  }
}

TEST(ExecutorFleet, AnAllFailedBatchStopsTheRolloutWithoutMaxFail) {
  Fixture f = fleet(4);
  FakeFleet runner(4);
  runner.node(0).failing.insert("run-a");
  runner.node(1).failing.insert("run-b");
  RecordingJournal journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{2, false};
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Failed, NodeResult::Failed,
                                                      NodeResult::NotStarted, NodeResult::NotStarted}));
  EXPECT_FALSE(report.stop_reason.empty());
}

TEST(ExecutorFleet, OneFailureInABatchDoesNotStopTheNext) {
  Fixture f = fleet(4);
  FakeFleet runner(4);
  runner.node(0).failing.insert("run-a");
  RecordingJournal journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{2, false};
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Failed, NodeResult::Changed, NodeResult::Changed,
                                                      NodeResult::Changed}));
  EXPECT_TRUE(report.stop_reason.empty()) << report.stop_reason;
}

TEST(ExecutorFleet, AnInterruptionMidPhaseFinishesTheStepRollsBackAndStartsNothing) {
  Fixture f = fleet(2);
  FakeFleet runner(2);
  std::atomic<bool> stop{false};
  runner.before_each = [&stop](size_t node, const std::string& kind) {
    if (node == 0 && kind == "run-a") stop = true;  // Ctrl-C while step a runs
  };
  RecordingJournal journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{1, false};
  options.stop_requested = &stop;
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_TRUE(report.interrupted);
  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Interrupted, NodeResult::NotStarted}));
  EXPECT_EQ(runner.node(0).log, (std::vector<std::string>{"probe", "checkpoint", "run-a", "restore"}))
      << "step a finishes, b never starts, the phase is restored";
  EXPECT_EQ(runner.node(1).log, std::vector<std::string>{"probe"}) << "probed before the batches, never changed";
}

TEST(ExecutorFleet, AnUnreachableNodeIsReportedAndTheOthersGoOn) {
  Fixture f = fleet(2);
  FakeFleet runner(2);
  runner.node(0).unreachable = true;
  RecordingJournal journal;
  ExecutorOptions options;
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Unreachable, NodeResult::Changed}));
  EXPECT_NE(report.nodes[0].message.find("connection refused"), std::string::npos) << report.nodes[0].message;
  EXPECT_EQ(runner.node(0).log, std::vector<std::string>{"probe"});
}

TEST(ExecutorFleet, ASecondRunOnConvergedNodesIsOneProbeEach) {
  Fixture f = fleet(2);
  FakeFleet runner(2);
  RecordingJournal journal;
  ExecutorOptions options;
  (void)execute(f.spec, f.nodes, f.playbooks, runner, journal, options);
  for (size_t i = 0; i < 2; ++i) runner.node(i).log.clear();
  const ExecutionReport again = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(again), (std::vector<NodeResult>{NodeResult::Unchanged, NodeResult::Unchanged}));
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(runner.node(i).log, std::vector<std::string>{"probe"});
}

// In batches, every node is probed first, all at once: on converged nodes
// the whole apply is that one round, not one round per batch.
TEST(ExecutorFleet, ANoOpRolloutInBatchesIsOneRoundOfProbes) {
  Fixture f = fleet(4);
  FakeFleet runner(4);
  for (size_t i = 0; i < 4; ++i) runner.node(i).ran = {"run-a", "run-b"};
  RecordingJournal journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{1, false};
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), std::vector<NodeResult>(4, NodeResult::Unchanged));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(runner.node(i).log, std::vector<std::string>{"probe"}) << "node " << i;
  EXPECT_EQ(runner.most_in_flight, 4u) << "the four probes were out at once";
  EXPECT_TRUE(report.stop_reason.empty()) << report.stop_reason;
}

// The batches are made of the nodes that have changes, in spec order; the
// first goes on from the probes' facts, a later one probes again first.
TEST(ExecutorFleet, BatchesAreMadeOfTheNodesWithChanges) {
  Fixture f = fleet(4);
  FakeFleet runner(4);
  runner.node(0).ran = {"run-a", "run-b"};
  runner.node(2).ran = {"run-a", "run-b"};
  RecordingJournal journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{1, false};
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Unchanged, NodeResult::Changed,
                                                      NodeResult::Unchanged, NodeResult::Changed}));
  EXPECT_EQ(runner.node(0).log, std::vector<std::string>{"probe"});
  EXPECT_EQ(runner.node(2).log, std::vector<std::string>{"probe"});
  EXPECT_EQ(runner.node(1).log, (std::vector<std::string>{"probe", "checkpoint", "run-a", "run-b", "probe"}));
  EXPECT_EQ(runner.node(3).log, (std::vector<std::string>{"probe", "probe", "checkpoint", "run-a", "run-b", "probe"}));
  EXPECT_EQ(runner.sequence,
            (std::vector<std::string>{"n0 probe", "n1 probe", "n2 probe", "n3 probe",  // every node first
                                      "n1 checkpoint", "n1 run-a", "n1 run-b", "n1 probe",  // batch 1
                                      "n3 probe", "n3 checkpoint", "n3 run-a", "n3 run-b", "n3 probe"}));  // batch 2
}

// A node the probes could not reach counts as a failure before any batch:
// with --max-fail 1 none starts.
TEST(ExecutorFleet, ANodeUnreachableAtTheStartCountsTowardsMaxFail) {
  Fixture f = fleet(3);
  FakeFleet runner(3);
  runner.node(0).unreachable = true;
  RecordingJournal journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{1, false};
  options.max_fail = CountOrPercent{1, false};
  const ExecutionReport report = execute(f.spec, f.nodes, f.playbooks, runner, journal, options);

  EXPECT_EQ(results(report), (std::vector<NodeResult>{NodeResult::Unreachable, NodeResult::NotStarted,
                                                      NodeResult::NotStarted}));
  EXPECT_NE(report.stop_reason.find("--max-fail"), std::string::npos) << report.stop_reason;
  EXPECT_EQ(report.nodes[1].message, "not started: " + report.stop_reason);
  for (size_t i = 1; i < 3; ++i) EXPECT_EQ(runner.node(i).log, std::vector<std::string>{"probe"}) << "node " << i;
}

}  // namespace
}  // namespace gpuexpand::testing
