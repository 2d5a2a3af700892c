// The acceptance run apply and verify share (accept/node_acceptance.hpp,
// exec/acceptance_run.hpp, exec/multinode.hpp): how a script's outcome
// reads, and one policy for who joins the multi-node job, against a runner
// that answers srun with the names of the nodes the job was given.

#include <gtest/gtest.h>

#include <regex>

#include "gpuexpand/exec/acceptance_run.hpp"
#include "gpuexpand/exec/apply_policy.hpp"
#include "gpuexpand/exec/multinode.hpp"
#include "scripted_runner.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

// `srun … -w a,b … hostname` prints each node's name, as Slurm would;
// `sent` lists which endpoint each command went to.
struct SrunRunner {
  std::vector<std::pair<size_t, std::string>> sent;
  testing::ScriptedRunner runner{[this](size_t node, const CommandRequest& request) {
    sent.push_back({node, request.command});
    CommandOutcome o;
    std::smatch list;
    if (std::regex_search(request.command, list, std::regex("-w '?([^' ]+)"))) {
      std::string names = list[1];
      for (char& c : names) {
        if (c == ',') c = '\n';
      }
      o.out = names + "\n";
    }
    return o;
  }};
};

json slurm_settings(const std::string& node, long per_job = 0) {
  json s = {{"node", node},
            {"checks", {"scheduler", "multinode"}},
            {"job_timeout", 30},
            {"slurm", {{"reservation", "gpuexpand-accept-" + node}, {"features", json::array()}, {"gres", json::array()}}}};
  if (per_job) s["multinode_nodes"] = per_job;
  return s;
}

TEST(AcceptanceRun, OutcomeOfAScriptThatRanOrDidNot) {
  NodeAcceptance a;
  a.settings = {{"node", "n1"}, {"checks", {"storage"}}, {"mounts", json::array()}};
  CommandOutcome failed_script;
  failed_script.exit_code = 1;
  failed_script.failure = FailureKind::CommandFailed;
  failed_script.out = "@@check storage fail 0.10 /mnt is not mounted\n@@end\n";
  const auto ran = acceptance_outcome(a, failed_script);
  EXPECT_EQ(ran.not_run, "") << "a script that exits 1 still ran";
  ASSERT_EQ(ran.results.size(), 1u);
  EXPECT_EQ(ran.results[0].detail, "/mnt is not mounted");
  EXPECT_FALSE(ran.passed());

  CommandOutcome lost;
  lost.exit_code = -1;
  lost.failure = FailureKind::ConnectionLost;
  lost.message = "connection lost";
  const auto not_run = acceptance_outcome(a, lost);
  EXPECT_EQ(not_run.not_run, "cannot run the acceptance checks: connection lost");
  ASSERT_EQ(not_run.results.size(), 1u);
  EXPECT_EQ(not_run.results[0].check, "acceptance");
  EXPECT_EQ(not_run.results[0].status, CheckStatus::Fail);
  EXPECT_FALSE(not_run.passed());
}

TEST(AcceptanceRun, PreparedOnceForBothCommands) {
  const json settings = {{"node", "n1"},
                         {"checks", {"network"}},
                         {"job_timeout", 40},
                         {"interfaces", {{{"name", "eth1"}, {"mtu", 9000}}}},
                         {"rdma", "none"}};
  const json peer = {{"network", {{"interfaces", {{{"name", "eth1"}, {"addresses", {"10.0.0.2/24"}}}}}}}};
  const auto a = prepare_node_acceptance(settings, json::object(), {&peer}, AcceptanceMode::Verify);
  EXPECT_EQ(a.peers.at("eth1"), "10.0.0.2");
  EXPECT_EQ(a.timeout_s, 340);
  EXPECT_NE(a.script.find("-I eth1 10.0.0.2 "), std::string::npos) << a.script;
  EXPECT_EQ(acceptance_request(a).stdin_data, a.script);
}

TEST(MultinodePolicy, PassedUnheldSlurmNodesJoinOneJob) {
  SrunRunner srun;
  auto& runner = srun.runner;
  std::vector<MultinodeCandidate> candidates = {
      {0, "n1", slurm_settings("n1"), true, false},
      {1, "n2", slurm_settings("n2"), false, false},  // failed its own checks
      {2, "n3", slurm_settings("n3"), true, true},    // still held: its own reservation
      {3, "n4", {{"node", "n4"}, {"checks", {"multinode"}}, {"slurm", nullptr}}, true, false},  // no Slurm
      {4, "n5", slurm_settings("n5"), true, false},
  };
  const auto results = run_multinode_check(runner, candidates);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].node, "n1");
  EXPECT_EQ(results[1].node, "n5");
  EXPECT_EQ(results[0].result.status, CheckStatus::Pass) << results[0].result.detail;
  EXPECT_EQ(results[0].result.detail, "one job ran on 2 nodes: n1, n5");
  ASSERT_EQ(srun.sent.size(), 1u);
  EXPECT_EQ(srun.sent[0].first, 0u) << "submitted from the job's first node";
}

TEST(MultinodePolicy, ALoneNodeRecordsASkipAndNoneRunsNothing) {
  SrunRunner srun;
  auto& runner = srun.runner;
  auto alone = run_multinode_check(runner, {{0, "n1", slurm_settings("n1"), true, false},
                                            {1, "n2", slurm_settings("n2"), true, true}});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].node, "n1");
  EXPECT_EQ(alone[0].result.status, CheckStatus::Skip);
  EXPECT_EQ(alone[0].result.detail, "no other node of this run passed to share a job with");
  EXPECT_TRUE(run_multinode_check(runner, {{0, "n1", slurm_settings("n1"), false, false}}).empty());
  EXPECT_TRUE(srun.sent.empty());
}

TEST(MultinodePolicy, JobsOfMultinodeNodesEach) {
  SrunRunner srun;
  auto& runner = srun.runner;
  std::vector<MultinodeCandidate> candidates;
  for (size_t i = 0; i < 5; ++i) {
    const std::string name = "n" + std::to_string(i + 1);
    candidates.push_back({i, name, slurm_settings(name, 2), true, false});
  }
  const auto results = run_multinode_check(runner, candidates);
  ASSERT_EQ(results.size(), 5u);
  ASSERT_EQ(srun.sent.size(), 2u) << "2 + 3: no job on a single node";
  EXPECT_EQ(results[4].result.detail, "one job ran on 3 nodes: n3, n4, n5");
}

class Recorded final : public RunJournal {
 public:
  void phase_started(const std::string&, const std::string&) override {}
  void phase_finished(const PhaseRecord&) override {}
  void checkpoint_taken(const std::string&, const std::string&, const std::string&, const json&) override {}
  void checkpoint_restored(const std::string&, const std::string&) override {}
  void checks_recorded(const std::string& node, const std::vector<CheckResult>& results) override {
    for (const auto& r : results) lines.push_back(node + " " + r.check + " " + std::string(check_status_name(r.status)));
  }
  void node_finished(const std::string&, NodeResult, const std::string&) override {}
  void batch_stopped(const std::string&) override {}
  std::vector<std::string> lines;
};

TEST(MultinodePolicy, ApplyUsesTheSamePolicyAsVerify) {
  // Apply's candidates: nodes accepted in this run (released, so not held)
  // that converged. A lone one records the same skip verify records.
  NodeSpec n1, n2;
  n1.name = "n1";
  n2.name = "n2";
  ExecutionReport report;
  report.nodes = {{"n1", NodeResult::Changed, 3, ""}, {"n2", NodeResult::Failed, 0, "x"}};
  report.accepted = {{"n1", slurm_settings("n1")}};
  SrunRunner srun;
  auto& runner = srun.runner;
  Recorded journal;
  EXPECT_TRUE(apply_multinode_check(report, runner, {&n1, &n2}, journal));
  EXPECT_EQ(journal.lines, (std::vector<std::string>{"n1 multinode skip"}));

  report.nodes[1].result = NodeResult::Changed;
  report.accepted.push_back({"n2", slurm_settings("n2")});
  journal.lines.clear();
  EXPECT_TRUE(apply_multinode_check(report, runner, {&n1, &n2}, journal));
  EXPECT_EQ(journal.lines, (std::vector<std::string>{"n1 multinode pass", "n2 multinode pass"}));
}

}  // namespace
}  // namespace gpuexpand
