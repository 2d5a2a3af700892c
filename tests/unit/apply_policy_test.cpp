// apply's decisions around the executor (exec/apply_policy.hpp): the saved
// plan's scope and drift, resuming over a dead holder's locks, the exit
// code and run status. The lab tests the same through the binary.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "gpuexpand/exec/apply_policy.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

using nlohmann::json;

ExecutionReport report_of(std::vector<NodeResult> results) {
  ExecutionReport report;
  for (size_t i = 0; i < results.size(); ++i) report.nodes.push_back({"n" + std::to_string(i), results[i], 0, ""});
  return report;
}

TEST(ApplyPolicy, ExitCodeAndRunStatus) {
  EXPECT_EQ(apply_exit_code(report_of({NodeResult::Changed, NodeResult::Unchanged}), false, true), kExitOk);
  EXPECT_EQ(apply_exit_code(report_of({NodeResult::Changed, NodeResult::Failed}), false, true), kExitPartial);
  EXPECT_EQ(apply_exit_code(report_of({NodeResult::Unreachable}), false, true), kExitPartial);
  EXPECT_EQ(apply_exit_code(report_of({NodeResult::NotStarted}), false, true), kExitPartial);
  EXPECT_EQ(apply_exit_code(report_of({NodeResult::Changed}), false, false), kExitPartial) << "multinode failed";
  EXPECT_EQ(apply_exit_code(report_of({NodeResult::Failed}), true, true), kExitInterrupted) << "a signal wins";
  ExecutionReport interrupted = report_of({NodeResult::Interrupted});
  interrupted.interrupted = true;
  EXPECT_EQ(apply_exit_code(interrupted, false, true), kExitInterrupted);
  EXPECT_EQ(run_status_for(kExitOk), RunStatus::Succeeded);
  EXPECT_EQ(run_status_for(kExitInterrupted), RunStatus::Interrupted);
  EXPECT_EQ(run_status_for(kExitPartial), RunStatus::Failed);
  EXPECT_EQ(run_status_for(kExitError), RunStatus::Failed);
}

TEST(ApplyPolicy, SavedPlanScopeAndDrift) {
  SpecLoadResult loaded = load_spec(minimal_spec());
  ASSERT_TRUE(loaded.spec) << diagnostics_text(loaded);
  const ClusterSpec& spec = *loaded.spec;
  json plan = {{"spec", {{"sha256", spec_digest(spec)}}},
               {"playbooks_sha256", playbooks().digest},
               {"nodes", json::array({{{"name", "a"}, {"status", "changes"}, {"facts_sha256", "d-a"}},
                                      {{"name", "b"}, {"status", "unchanged"}},
                                      {{"name", "c"}, {"status", "changes"}, {"facts_sha256", "d-c"}}})}};
  auto scope = saved_plan_scope(plan, spec, playbooks(), "plan.json", "spec.yaml", false);
  ASSERT_TRUE(scope.ok()) << scope.error().message;
  EXPECT_EQ(scope->nodes, "a,c");
  EXPECT_EQ(scope->facts_digests, (std::map<std::string, std::string>{{"a", "d-a"}, {"c", "d-c"}}));

  auto limited = saved_plan_scope(plan, spec, playbooks(), "plan.json", "spec.yaml", true);
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.error().message, "--limit cannot narrow a saved plan; plan again with --limit");
  json other_spec = plan;
  other_spec["spec"]["sha256"] = "0000";
  EXPECT_EQ(saved_plan_scope(other_spec, spec, playbooks(), "plan.json", "spec.yaml", false).error().message,
            "refusing to apply plan.json: spec.yaml changed since the plan was made; plan again");
  json other_playbooks = plan;
  other_playbooks["playbooks_sha256"] = "0000";
  EXPECT_EQ(saved_plan_scope(other_playbooks, spec, playbooks(), "plan.json", "spec.yaml", false).error().message,
            "refusing to apply plan.json: the playbooks changed since the plan was made; plan again");

  NodeSpec a, c, d;
  a.name = "a";
  c.name = "c";
  d.name = "d";
  const json facts = {{"hostname", "a"}};
  const std::map<std::string, std::string> digests = {{"a", decision_facts_digest(facts)}, {"c", "stale"}};
  FactsByNode now = {{"a", facts}, {"c", facts}, {"d", {{"unreachable", "connection refused"}}}};
  EXPECT_EQ(drifted_since_plan({&a, &c, &d}, now, digests), (std::vector<std::string>{"c", "d"}));
  EXPECT_TRUE(drifted_since_plan({&a}, now, digests).empty());
}

TEST(ApplyPolicy, ResumesOverADeadHolderOnlyOnce) {
  const std::string dir = std::filesystem::temp_directory_path() / ("gpuexpand-policy-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto opened = StateStore::open(dir + "/state.db");
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  StateStore& store = **opened;
  std::array<char, 256> host{};
  gethostname(host.data(), host.size() - 1);
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);

  RunRecord dead;
  dead.command = "apply";
  dead.started_at = "2026-12-01T00:00:00Z";
  dead.holder = std::string("root@") + host.data() + " pid " + std::to_string(gone);
  dead.nodes = {"n1", "n2"};
  ASSERT_TRUE(store.begin_run(dead).ok());

  RunRecord mine = dead;
  mine.holder = "";
  std::vector<int64_t> taken_over;
  auto resumed = begin_run_resuming(store, mine, "2026-12-01T01:00:00Z",
                                    [&](const LockConflict& c) { taken_over.push_back(c.run_id); });
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_FALSE(resumed->conflict);
  EXPECT_EQ(resumed->run_id, 2);
  EXPECT_EQ(taken_over, std::vector<int64_t>{1});

  // This process is alive: a third run meets a live holder and takes nothing over.
  auto refused = begin_run_resuming(store, mine, "2026-12-01T02:00:00Z",
                                    [&](const LockConflict& c) { taken_over.push_back(c.run_id); });
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  ASSERT_TRUE(refused->conflict);
  EXPECT_EQ(refused->conflict->run_id, 2);
  EXPECT_EQ(taken_over.size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuexpand::testing
