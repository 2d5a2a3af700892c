// What apply and verify print (view/apply_view.hpp), by exact text: the
// console lines CI logs are grepped for, the summary, verify's results.

#include <gtest/gtest.h>

#include <sstream>

#include "gpuexpand/view/apply_view.hpp"

namespace gpuexpand {
namespace {

CheckResult check(const char* name, CheckStatus status, const char* detail, double seconds = 1.25) {
  CheckResult r;
  r.check = name;
  r.status = status;
  r.detail = detail;
  r.seconds = seconds;
  return r;
}

TEST(ApplyView, ConsoleLinesPerEvent) {
  std::ostringstream out;
  auto console = make_apply_console(out);
  console->phase_started("n1", "os-init");  // silent: the line comes when it ends
  console->phase_finished({"n1", "os-init", PhaseStatus::Succeeded, 3, 4.06, "", ""});
  console->phase_finished({"n1", "storage", PhaseStatus::Succeeded, 1, 0.5, "", ""});
  console->phase_finished({"n2", "gpu-driver", PhaseStatus::RolledBack, 0, 12.0, "driver", "exited 100"});
  console->phase_finished({"n3", "rdma", PhaseStatus::Failed, 0, 1.0, "", "cannot take the checkpoint"});
  console->checks_recorded("n1", {check("gpu", CheckStatus::Pass, "8 x H200"),
                                  check("network", CheckStatus::Skip, "no RDMA fabric"),
                                  check("storage", CheckStatus::Fail, "/mnt/shared not mounted")});
  console->checks_recorded("n1", {check("multinode", CheckStatus::Pass, "one job ran on 2 nodes: n1,n2")});
  console->node_finished("n4", NodeResult::Unchanged, "");
  console->node_finished("n5", NodeResult::Unreachable, "connection refused");
  console->node_finished("n6", NodeResult::Changed, "not printed: its phases were");
  console->batch_stopped("2 of 4 nodes failed (max_fail 2)");
  EXPECT_EQ(out.str(),
            "n1  os-init  changed (3 changes, 4.1 s)\n"
            "n1  storage  changed (1 change, 0.5 s)\n"
            "n2  gpu-driver  FAILED, rolled back (12.0 s) at step driver: exited 100\n"
            "n3  rdma  FAILED (1.0 s): cannot take the checkpoint\n"
            "n1  acceptance  1 passed, 1 failed, 1 skipped\n"
            "n1  acceptance  FAIL storage: /mnt/shared not mounted\n"
            "n1  acceptance  skip network: no RDMA fabric\n"
            "n1  acceptance  pass multinode: one job ran on 2 nodes: n1,n2\n"
            "n4  nothing to change\n"
            "n5  UNREACHABLE: connection refused\n"
            "stopping: 2 of 4 nodes failed (max_fail 2); no further batches are started\n");
}

TEST(ApplyView, SummaryLine) {
  ExecutionReport report;
  for (NodeResult r : {NodeResult::Changed, NodeResult::Changed, NodeResult::Unchanged, NodeResult::Failed}) {
    report.nodes.push_back({"n", r, 0, ""});
  }
  EXPECT_EQ(apply_summary_line(report, 4, 12.345), "4 nodes: 2 changed, 1 unchanged, 1 failed, 0 unreachable (12.3 s)\n");
  report.nodes.push_back({"n", NodeResult::NotStarted, 0, ""});
  report.nodes.push_back({"n", NodeResult::Interrupted, 0, ""});
  EXPECT_EQ(apply_summary_line(report, 6, 1),
            "6 nodes: 2 changed, 1 unchanged, 1 failed, 0 unreachable, 1 not started, 1 interrupted (1.0 s)\n");
  ExecutionReport one;
  one.nodes.push_back({"n", NodeResult::Unchanged, 0, ""});
  EXPECT_EQ(apply_summary_line(one, 1, 0.2), "1 node: 0 changed, 1 unchanged, 0 failed, 0 unreachable (0.2 s)\n");
}

TEST(VerifyView, OneLinePerCheck) {
  EXPECT_EQ(check_result_lines("node-05", {check("scheduler", CheckStatus::Pass, "node idle in partition gpu", 2.5),
                                           check("gpu", CheckStatus::Fail, "7 GPUs, expected 8", 0),
                                           check("multinode", CheckStatus::Skip, "no other node", 0)}),
            "node-05  pass  scheduler (2.5 s): node idle in partition gpu\n"
            "node-05  FAIL  gpu (0.0 s): 7 GPUs, expected 8\n"
            "node-05  skip  multinode (0.0 s): no other node\n");
  EXPECT_EQ(check_result_lines("n", {}), "");
}

}  // namespace
}  // namespace gpuexpand

#include "gpuexpand/view/status_view.hpp"

namespace gpuexpand {
namespace {

TEST(StatusView, OverviewTablesAndFailures) {
  RunRecord run;
  run.id = 2;
  run.command = "apply";
  run.started_at = "2026-12-01T00:00:00Z";
  run.status = RunStatus::Failed;
  run.exit_code = 3;
  run.nodes = {"n1", "n2"};
  std::vector<PhaseResult> latest = {{2, "n1", "os-init", PhaseStatus::Succeeded, 3, "", "", 1, "", ""},
                                     {2, "n2", "os-init", PhaseStatus::RolledBack, 0, "", "", 1, "chrony", "exited 1"}};
  CheckResult gpu = check("gpu", CheckStatus::Fail, "7 GPUs, expected 8");
  gpu.run_id = 2;
  gpu.node = "n1";
  EXPECT_EQ(status_overview_text({run}, latest, {gpu}),
            "Runs, newest first:\n"
            "  RUN  COMMAND  STARTED               STATUS  EXIT  NODES\n"
            "  2    apply    2026-12-01T00:00:00Z  failed  3     2\n"
            "\nLatest state per node and phase:\n"
            "  NODE  os-init      gpu-driver  rdma  storage  monitoring  scheduler  acceptance\n"
            "  n1    succeeded    -           -     -        -           -          -\n"
            "  n2    rolled-back  -           -     -        -           -          -\n"
            "\nFailures:\n"
            "  n2 os-init (run 2): step chrony: exited 1\n"
            "\nAcceptance checks, latest per node:\n"
            "  n1  0 passed, 1 failed, 0 skipped (run 2)\n"
            "    FAIL gpu: 7 GPUs, expected 8\n");
  EXPECT_EQ(run_text(run, {latest[1]}, {}, 4),
            "Run 2: apply , failed (exit 3), 2026-12-01T00:00:00Z .. \n"
            "  NODE  PHASE    STATUS       CHANGES  SECONDS  DETAIL\n"
            "  n2    os-init  rolled-back  0        1.0      chrony: exited 1\n"
            "4 remote commands recorded\n");
}

}  // namespace
}  // namespace gpuexpand
