// What the commands print (view/), by exact text: apply's console lines CI
// logs are grepped for and its summary, verify's results, status's tables,
// facts' table, rollback's lines and plan's incomplete notice.

#include <gtest/gtest.h>

#include <sstream>

#include "gpuexpand/view/apply_events.hpp"
#include "gpuexpand/view/apply_view.hpp"
#include "gpuexpand/view/facts_view.hpp"
#include "gpuexpand/view/inventory_view.hpp"
#include "gpuexpand/view/plan_text.hpp"
#include "gpuexpand/view/rollback_view.hpp"

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

// -q: what failed, nothing that went well.
TEST(ApplyView, QuietConsolePrintsOnlyFailures) {
  std::ostringstream out;
  auto console = make_apply_console(out, true);
  console->phase_finished({"n1", "os-init", PhaseStatus::Succeeded, 3, 4.06, "", ""});
  console->phase_finished({"n2", "gpu-driver", PhaseStatus::RolledBack, 0, 12.0, "driver", "exited 100"});
  console->checks_recorded("n1", {check("gpu", CheckStatus::Pass, "8 x H200"),
                                  check("network", CheckStatus::Skip, "no RDMA fabric")});
  console->checks_recorded("n3", {check("gpu", CheckStatus::Pass, "8 x H200"),
                                  check("storage", CheckStatus::Fail, "/mnt/shared not mounted")});
  console->checks_recorded("n1", {check("multinode", CheckStatus::Pass, "one job ran on 2 nodes: n1,n2")});
  console->node_finished("n4", NodeResult::Unchanged, "");
  console->node_finished("n5", NodeResult::Unreachable, "connection refused");
  EXPECT_EQ(out.str(),
            "n2  gpu-driver  FAILED, rolled back (12.0 s) at step driver: exited 100\n"
            "n3  acceptance  1 passed, 1 failed, 0 skipped\n"
            "n3  acceptance  FAIL storage: /mnt/shared not mounted\n"
            "n5  UNREACHABLE: connection refused\n");
}

// Ansible's recap: outcomes with folded host lists, failures grouped by a
// reason that no longer carries the node's own name and address, the retry.
TEST(ApplyView, RecapGroupsFailuresByReasonAndOffersTheRetry) {
  ExecutionReport report;
  const std::string apt = "phase os-init, step base-packages: `apt-get install -y -q ...` exited 100: E: Unable to "
                          "locate package no-such-package-gx (rolled back to the checkpoint)";
  report.nodes = {
      {"gpu-02", NodeResult::Changed, 3, ""},
      {"gpu-01", NodeResult::Changed, 2, ""},
      {"gpu-03", NodeResult::Failed, 0, "gpu-03: phase os-init, step base-packages: gpu-03 (10.0.0.3): `apt-get install -y -q ...` exited 100: E: Unable to locate package no-such-package-gx (rolled back to the checkpoint)"},
      {"gpu-04", NodeResult::Unchanged, 0, ""},
      {"gpu-05", NodeResult::Unreachable, 0, "gpu-05 (10.0.0.5:22): connect: Connection refused"},
      {"gpu-07", NodeResult::Failed, 0, "gpu-07: phase os-init, step base-packages: gpu-07 (10.0.0.7): `apt-get install -y -q ...` exited 100: E: Unable to locate package no-such-package-gx (rolled back to the checkpoint)"},
      {"gpu-06", NodeResult::Unreachable, 0, "gpu-06 (10.0.0.6:22): connect: Connection refused"},
      {"gpu-08", NodeResult::NotStarted, 0, "not started: 4 of 8 nodes failed (max_fail 4)"},
      {"gpu-09", NodeResult::Failed, 0, ""},
  };
  EXPECT_EQ(apply_recap(report, "gpuexpand apply 'my spec.yaml' --limit @failed"),
            "\nRecap:\n"
            "  changed      gpu-[01-02]\n"
            "  unchanged    gpu-04\n"
            "  failed       gpu-[03,07,09]\n"
            "  unreachable  gpu-[05-06]\n"
            "  not started  gpu-08\n"
            "Failures by reason:\n"
            "  gpu-[03,07]: " + apt + "\n"
            "  gpu-[05-06]: connect: Connection refused\n"
            "  gpu-08: not started: 4 of 8 nodes failed (max_fail 4)\n"
            "  gpu-09: failed\n"
            "Retry only the nodes that did not finish:\n"
            "  gpuexpand apply 'my spec.yaml' --limit @failed\n");
  // Every node finished: the summary line says it all.
  ExecutionReport converged;
  converged.nodes = {{"gpu-01", NodeResult::Changed, 1, ""}, {"gpu-02", NodeResult::Unchanged, 0, ""}};
  EXPECT_EQ(apply_recap(converged, "gpuexpand apply s.yaml --limit @failed"), "");
}

std::string at_noon() { return "2026-12-02T12:00:00Z"; }

// apply -o jsonl: one whole JSON object per line, in the order of events.
TEST(ApplyEvents, OneJsonObjectPerEvent) {
  std::ostringstream out;
  auto events = make_apply_events(out, &at_noon);
  events->phase_started("n1", "os-init");
  events->checkpoint_taken("n1", "os-init", "/var/lib/gpuexpand/checkpoints/7/os-init", nlohmann::json::object());
  events->phase_finished({"n1", "os-init", PhaseStatus::Succeeded, 3, 4.0567, "", ""});
  events->phase_finished({"n2", "gpu-driver", PhaseStatus::RolledBack, 0, 12.0, "driver", "exited 100: E: \xff bad"});
  events->checkpoint_restored("n2", "gpu-driver");
  events->checks_recorded("n1", {check("gpu", CheckStatus::Pass, "8 x H200")});
  events->node_finished("n2", NodeResult::Failed, "n2: phase gpu-driver");
  events->batch_stopped("1 of 2 nodes failed (max_fail 1)");
  EXPECT_EQ(out.str(),
            R"j({"at":"2026-12-02T12:00:00Z","event":"phase_started","node":"n1","phase":"os-init","v":1})j" "\n"
            R"j({"at":"2026-12-02T12:00:00Z","event":"checkpoint","node":"n1","path":"/var/lib/gpuexpand/checkpoints/7/os-init","phase":"os-init","v":1})j" "\n"
            R"j({"at":"2026-12-02T12:00:00Z","changes":3,"event":"phase_finished","failed_step":"","message":"","node":"n1","phase":"os-init","seconds":4.057,"status":"succeeded","v":1})j" "\n"
            R"j({"at":"2026-12-02T12:00:00Z","changes":0,"event":"phase_finished","failed_step":"driver","message":"exited 100: E: )j" "\xEF\xBF\xBD" R"j( bad","node":"n2","phase":"gpu-driver","seconds":12.0,"status":"rolled-back","v":1})j" "\n"
            R"j({"at":"2026-12-02T12:00:00Z","event":"restored","node":"n2","phase":"gpu-driver","v":1})j" "\n"
            R"j({"at":"2026-12-02T12:00:00Z","event":"checks","node":"n1","results":[{"check":"gpu","detail":"8 x H200","seconds":1.25,"status":"pass"}],"v":1})j" "\n"
            R"j({"at":"2026-12-02T12:00:00Z","event":"node_finished","message":"n2: phase gpu-driver","node":"n2","result":"failed","v":1})j" "\n"
            R"j({"at":"2026-12-02T12:00:00Z","event":"batch_stopped","reason":"1 of 2 nodes failed (max_fail 1)","v":1})j" "\n");

  ExecutionReport report;
  report.nodes = {{"n1", NodeResult::Changed, 3, ""}, {"n2", NodeResult::Failed, 0, "x"}};
  EXPECT_EQ(run_started_event(7, 2, at_noon()),
            R"j({"at":"2026-12-02T12:00:00Z","event":"run_started","nodes":2,"run":7,"v":1})j" "\n");
  EXPECT_EQ(run_finished_event(7, report, 3, 61.23456, "gpuexpand apply s.yaml --limit @failed", at_noon()),
            R"j({"at":"2026-12-02T12:00:00Z","counts":{"changed":1,"failed":1,"interrupted":0,"not started":0,"unchanged":0,"unreachable":0},)j"
            R"j("event":"run_finished","exit_code":3,"retry":"gpuexpand apply s.yaml --limit @failed","run":7,"seconds":61.235,"unfinished":["n2"],"v":1})j" "\n");
  report.nodes[1].result = NodeResult::Unchanged;
  EXPECT_NE(run_finished_event(7, report, 0, 1, "gpuexpand apply s.yaml --limit @failed", at_noon()).find(R"j("retry":"")j"),
            std::string::npos)
      << "nothing to retry: no retry command";
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

TEST(VerifyView, UnreachableAndSummary) {
  EXPECT_EQ(unreachable_node_line("node-03", "connection refused"), "node-03  UNREACHABLE: connection refused\n");
  EXPECT_EQ(verify_summary_line(4, 2, 1, 1, 3.26), "4 nodes: 2 passed, 1 failed, 1 unreachable (3.3 s)\n");
  EXPECT_EQ(verify_summary_line(1, 1, 0, 0, 0.04), "1 node: 1 passed, 0 failed, 0 unreachable (0.0 s)\n");
}

TEST(FactsView, TablePaddedUnreachableListedSummary) {
  NodeSpec a, b, c;
  a.name = "node-01";
  b.name = "n2";
  c.name = "node-03";
  FactsByNode facts;
  facts["node-01"] = {{"os", {{"pretty_name", "Debian GNU/Linux 12 (bookworm)"}, {"kernel", "6.1.0-27-amd64"}}},
                      {"hostname", "node-01"},
                      {"gpus", {{"count", 8}, {"model", "NVIDIA H200"}, {"driver_version", "550.90.07"}}}};
  facts["n2"] = {{"os", {{"pretty_name", "Ubuntu 22.04.4 LTS"}, {"kernel", nullptr}}}, {"hostname", "localhost"},
                 {"gpus", nullptr}};
  facts["node-03"] = {{"unreachable", "node-03 (198.18.1.13:22): connection refused"}};
  EXPECT_EQ(facts_table({&a, &b, &c}, facts),
            "NODE     OS                              KERNEL          HOSTNAME   GPUS             DRIVER\n"
            "node-01  Debian GNU/Linux 12 (bookworm)  6.1.0-27-amd64  node-01    8 x NVIDIA H200  550.90.07\n"
            "n2       Ubuntu 22.04.4 LTS              -               localhost  0                -\n"
            "unreachable: node-03 (198.18.1.13:22): connection refused\n");
  EXPECT_EQ(facts_summary_line(3, 1, 0.84), "3 nodes: 2 answered, 1 unreachable (0.8 s)\n");
  EXPECT_EQ(facts_summary_line(1, 0, 0.21), "1 node: 1 answered, 0 unreachable (0.2 s)\n");
  EXPECT_EQ(facts_summary_line(200, 0, 12.04, 3),
            "200 nodes: 200 answered, 0 unreachable (12.0 s; 3 refused or reset handshakes tried again)\n");
}

TEST(RollbackView, LinesAndReport) {
  CheckpointRecord c;
  c.run_id = 12;
  c.node = "node-03";
  c.phase = "storage";
  EXPECT_EQ(checkpoint_restored_line(c), "node-03  storage  restored (checkpoint of run 12)\n");
  EXPECT_EQ(nothing_to_roll_back_line("node-04", "rdma"), "node-04  nothing to roll back after rdma\n");
  const RollbackReport report =
      rollback_report({{"node-03", {"storage (run 12)"}, ""}, {"node-05", {}, "restore of rdma exited 1"}}, "rdma");
  EXPECT_EQ(report.failed, 1u);
  EXPECT_EQ(report.failures, "gpuexpand: error: node-05: restore of rdma exited 1\n");
  EXPECT_EQ(report.summary, "\n2 nodes rolled back to rdma, 1 failed\n");
  EXPECT_EQ(rollback_report({{"n1", {}, ""}}, "os-init").summary, "\n1 node rolled back to os-init, 0 failed\n");
}

TEST(InventoryView, TableHostlistJson) {
  NodeSpec a, b;
  a.name = "gpu-node-001";
  a.address = "10.0.0.1";
  a.rack = "r01";
  a.groups = {"h200", "ib"};
  b.name = "gpu-node-002";
  b.address = "10.0.0.2";
  EXPECT_EQ(inventory_table({&a, &b}),
            "NAME          ADDRESS   RACK  GROUPS\n"
            "gpu-node-001  10.0.0.1  r01   h200,ib\n"
            "gpu-node-002  10.0.0.2  -     -\n"
            "2 nodes\n");
  EXPECT_EQ(inventory_hostlist({&a, &b}), "gpu-node-[001-002]\n");
  EXPECT_EQ(inventory_json("c", {&b}).dump(),
            R"({"cluster":"c","count":1,"nodes":[{"address":"10.0.0.2","groups":[],"name":"gpu-node-002","rack":""}]})");
  EXPECT_EQ(spec_errors_line("s.yaml", 1), "gpuexpand: error: s.yaml: 1 error\n");
  EXPECT_EQ(spec_errors_line("s.yaml", 3), "gpuexpand: error: s.yaml: 3 errors\n");
}

TEST(StatusView, UnlockText) {
  EXPECT_EQ(unlock_text({}, false), "No locks held\n");
  EXPECT_EQ(unlock_text({}, true), "No locks held on those nodes\n");
  LockConflict lock;
  lock.nodes = {"n1"};
  lock.run_id = 7;
  lock.holder = "ops@host pid 42";
  lock.since = "2026-12-01T00:00:00Z";
  EXPECT_EQ(unlock_text({lock}, false), "released: " + describe(lock) + "\n");
}

TEST(PlanView, IncompleteLine) {
  PlanSummary summary;
  summary.unreachable = 2;
  summary.errors = 1;
  EXPECT_EQ(plan_incomplete_line(summary), "gpuexpand: error: the plan is incomplete: 2 unreachable, 1 failed to plan\n");
}

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
  const std::vector<AuditEntry> commands = {
      {2, "n1", "hostnamectl set-hostname n1", 0, "ok", 12, "2026-12-01T00:00:01Z"},
      {2, "n2", "sh -s\nsecond line", 1, "command failed", 340, "2026-12-01T00:00:02Z"},
      {2, "n3", "true", -1, "connection refused", 3, "2026-12-01T00:00:02Z"},
      {2, "n2", std::string(130, 'x'), 0, "ok", 5, "2026-12-01T00:00:03Z"}};
  EXPECT_EQ(run_text(run, {latest[1]}, {},
                     {{"n1", "changed", ""}, {"n2", "failed", "n2: phase os-init"},
                      {"n3", "unreachable", "n3 (10.0.0.3:22): connection refused"}},
                     commands),
            "Run 2: apply , failed (exit 3), 2026-12-01T00:00:00Z .. \n"
            "  NODE  PHASE    STATUS       CHANGES  SECONDS  DETAIL\n"
            "  n2    os-init  rolled-back  0        1.0      chrony: exited 1\n"
            "Nodes:\n"
            "  NODE  RESULT       DETAIL\n"
            "  n1    changed\n"
            "  n2    failed       n2: phase os-init\n"
            "  n3    unreachable  n3 (10.0.0.3:22): connection refused\n"
            "Remote commands (4):\n"
            "  AT                    NODE  EXIT                MS   COMMAND\n"
            "  2026-12-01T00:00:01Z  n1    0                   12   hostnamectl set-hostname n1\n"
            "  2026-12-01T00:00:02Z  n2    1                   340  sh -s …\n"
            "  2026-12-01T00:00:02Z  n3    connection refused  3    true\n"
            "  2026-12-01T00:00:03Z  n2    0                   5    " + std::string(120, 'x') + " …\n");
  EXPECT_EQ(run_text(run, {}, {}, {{"n1", "", ""}}, {}), "Run 2: apply , failed (exit 3), 2026-12-01T00:00:00Z .. \n"
                                                      "  NODE  PHASE  STATUS  CHANGES  SECONDS  DETAIL\n"
                                                      "Remote commands (0):\n");
}

}  // namespace
}  // namespace gpuexpand
