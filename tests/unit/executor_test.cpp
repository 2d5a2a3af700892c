// The executor's state machine against a scripted runner: a simulated node
// and controller whose check results follow what has been run, so the
// order of probes, controller questions, phases and verifications shows.

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "gpuexpand/exec/executor.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "scripted_runner.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

using testing::ScriptedRunner;

class PhaseLog final : public RunJournal {
 public:
  void phase_started(const std::string&, const std::string&) override {}
  void phase_finished(const PhaseRecord& r) override { finished.push_back(r.phase + " " + to_string(r.status)); }
  void checkpoint_taken(const std::string&, const std::string&, const std::string&, const json&) override {}
  void checkpoint_restored(const std::string&, const std::string&) override {}
  void checks_recorded(const std::string&, const std::vector<CheckResult>&) override {}
  void node_finished(const std::string&, NodeResult, const std::string&) override {}
  void batch_stopped(const std::string&) override {}
  std::vector<std::string> finished;
};

Phase phase(const std::string& name, int order, const std::string& steps) {
  std::vector<Diagnostic> diagnostics;
  auto loaded = load_playbook_text("phase: " + name + "\norder: " + std::to_string(order) + "\nsteps:\n" + steps,
                                   name + ".yaml", testing::schema("playbook"), diagnostics);
  EXPECT_TRUE(loaded) << (diagnostics.empty() ? "" : diagnostics.front().to_string());
  return loaded ? *loaded : Phase{};
}

CommandOutcome ok(std::string out = "") {
  CommandOutcome o;
  o.exit_code = 0;
  o.out = std::move(out);
  return o;
}

// A phase applied on the node, then one whose step runs on the controller
// (named like the real ones: the loader knows only those):
// the controller is asked right after the first phase is verified. Its
// answer must lead to planning the second phase, not to verifying the
// first again (which skipped the second: a lab apply stopped after
// monitoring once the scheduler phase had a delegated step).
TEST(Executor, AControllerQuestionRightAfterAPhaseLeadsToTheNextPhase) {
  auto loaded = testing::load_spec(testing::minimal_spec(
      "defaults:\n  scheduler:\n    kind: slurm\n    slurm:\n      controller: ctl\n      controller_address: 10.0.0.9\n"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const ClusterSpec spec = *loaded.spec;
  PlaybookSet playbooks;
  playbooks.phases.push_back(phase("monitoring", 5, "  - {id: a, type: command, check: check-a, run: run-a, rollback: 'true'}\n"));
  playbooks.phases.push_back(phase("scheduler", 6,
                                   "  - {id: b, type: command, check: check-b, run: run-b, rollback: 'true',\n"
                                   "     delegate_to: controller}\n"));

  std::set<std::string> done;  // the runs that happened, on either host
  std::vector<std::string> asked;  // "node probe", "ctl checks", "node run-a", …
  // (Keys and checks here are bare words: shell_quote leaves them unquoted.)
  const std::regex check_key(R"(gx_check ([A-Za-z0-9_-]+) )");
  auto checks_output = [&](const std::string& script) {
    std::string out;
    for (std::sregex_iterator it(script.begin(), script.end(), check_key), end; it != end; ++it) {
      const std::string key = (*it)[1];
      out += "\n@@gpx:check " + key + "\n" + (done.count("run-" + key) ? "0" : "1") + "\n";
    }
    return out + "\n@@gpx:end\n";
  };
  ScriptedRunner runner([&](size_t endpoint, const CommandRequest& request) {
    const std::string host = endpoint == 0 ? "node" : "ctl";
    const std::string& script = request.stdin_data;
    if (script.rfind("# gpuexpand facts probe", 0) == 0) {
      asked.push_back(host + " probe");
      return ok("\n@@gpx:hostname\nn1\n" + checks_output(script));
    }
    if (script.rfind("# gpuexpand: what a node's steps need from this controller", 0) == 0) {
      asked.push_back(host + " checks");
      return ok(checks_output(script));
    }
    for (const char* run : {"run-a", "run-b"}) {
      if (request.command.size() >= 5 && request.command.compare(request.command.size() - 5, 5, run) == 0) {
        asked.push_back(host + " " + run);
        done.insert(run);
        return ok();
      }
    }
    return ok();  // checkpoints
  });

  std::vector<const NodeSpec*> nodes{&spec.nodes[0]};
  PhaseLog journal;
  ExecutorOptions options;
  options.run_id = 3;
  const ExecutionReport report = execute(spec, nodes, playbooks, runner, journal, options);

  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_EQ(report.nodes[0].result, NodeResult::Changed) << report.nodes[0].message;
  EXPECT_EQ(report.nodes[0].changes, 2);
  EXPECT_EQ(journal.finished, (std::vector<std::string>{"monitoring succeeded", "scheduler succeeded"}));
  // The first question is asked ahead, while the node is probed; the
  // monitoring phase then changed the node, so it is asked again.
  EXPECT_EQ(asked, (std::vector<std::string>{"ctl checks", "node probe", "node run-a", "node probe", "ctl checks",
                                             "ctl run-b", "node probe", "ctl checks"}));
}

// A controller that answers a node's checks with 0 when `converged` or when
// that node's `run-b-NODE` ran (configured), else 1, and counts its scripts
// and the nodes in each; the nodes answer only their probe.
struct CountingController {
  std::vector<std::vector<std::string>> scripts;  // the nodes of each controller script
  std::set<std::string> configured;               // nodes whose step b ran
  bool converged = true;
  CommandOutcome answer(const CommandRequest& request) {
    static const std::regex node_line(R"(m node ([A-Za-z0-9_-]+))"), check_line(R"(^gx_check ([A-Za-z0-9_-]+) )");
    const std::string& script = request.stdin_data;
    if (script.rfind("# gpuexpand facts probe", 0) == 0) return ok("\n@@gpx:hostname\nx\n\n@@gpx:end\n");
    if (script.rfind("# gpuexpand: what a node's steps need from this controller", 0) != 0) {
      if (const auto at = request.command.find("run-b-"); at != std::string::npos) configured.insert(request.command.substr(at + 6));
      return ok();
    }
    std::string out;
    scripts.emplace_back();
    std::istringstream in(script);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, node_line)) {
        scripts.back().push_back(m[1]);
        out += "\n@@gpx:node " + m[1].str() + "\n";
      } else if (std::regex_search(line, m, check_line)) {
        const bool passes = converged || configured.count(scripts.back().back()) > 0;
        out += "\n@@gpx:check " + m[1].str() + "\n" + (passes ? "0" : "1") + "\n";
      }
    }
    return ok(out + "\n@@gpx:end\n");
  }
};

// Nodes that need the controller while it answers others wait and go
// together in its next script, not one script each in its queue.
TEST(Executor, NodesAskingTheControllerMeanwhileShareItsNextScript) {
  auto loaded = testing::load_spec(testing::minimal_spec(
      "  - hosts: n[3-4]\n    addresses: 10.0.0.[3-4]\n"
      "defaults:\n  scheduler:\n    kind: slurm\n    slurm:\n      controller: ctl\n      controller_address: 10.0.0.9\n"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const ClusterSpec spec = *loaded.spec;
  PlaybookSet playbooks;
  playbooks.phases.push_back(phase("scheduler", 6,
                                   "  - {id: b, type: command, check: 'check-b-{{ node.name }}',\n"
                                   "     run: 'run-b-{{ node.name }}', rollback: 'true', delegate_to: controller}\n"));
  CountingController controller;
  controller.converged = false;
  ScriptedRunner runner([&](size_t, const CommandRequest& request) { return controller.answer(request); });

  std::vector<const NodeSpec*> nodes;
  for (const auto& n : spec.nodes) nodes.push_back(&n);
  ASSERT_EQ(nodes.size(), 4u);
  PhaseLog journal;
  const ExecutionReport report = execute(spec, nodes, playbooks, runner, journal, ExecutorOptions{});
  EXPECT_EQ(report.count(NodeResult::Changed), 4u);
  EXPECT_EQ(controller.configured, (std::set<std::string>{"n1", "n2", "n3", "n4"}));
  const auto& scripts = controller.scripts;
  size_t asks = 0, largest = 0;
  for (const auto& nodes_in_script : scripts) {
    asks += nodes_in_script.size();
    largest = std::max(largest, nodes_in_script.size());
  }
  EXPECT_EQ(asks, 11u) << "every node ahead; n2-n4 again once n1 changed something; each to verify";
  EXPECT_LT(scripts.size(), asks);
  ASSERT_GE(scripts.size(), 3u);
  EXPECT_EQ(scripts.at(0), (std::vector<std::string>{"n1", "n2", "n3", "n4"})) << "asked ahead, for the whole run";
  EXPECT_EQ(scripts.at(1), (std::vector<std::string>{"n2"})) << "n1's phase began: its answer may be stale for n2";
  EXPECT_EQ(scripts.at(2), (std::vector<std::string>{"n3", "n4"})) << "the others asked meanwhile";
}


// A no-op apply in batches asks the controller once for the whole run, not
// once per batch (issue 16: 16-20 scripts for 20 lab nodes in batches of 3).
TEST(Executor, ANoOpApplyInBatchesAsksTheControllerOnce) {
  auto loaded = testing::load_spec(testing::minimal_spec(
      "  - hosts: n[3-6]\n    addresses: 10.0.0.[3-6]\n"
      "defaults:\n  scheduler:\n    kind: slurm\n    slurm:\n      controller: ctl\n      controller_address: 10.0.0.9\n"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const ClusterSpec spec = *loaded.spec;
  PlaybookSet playbooks;
  playbooks.phases.push_back(phase("scheduler", 6,
                                   "  - {id: b, type: command, check: 'check-b-{{ node.name }}',\n"
                                   "     run: 'run-b-{{ node.name }}', rollback: 'true', delegate_to: controller}\n"));
  CountingController controller;
  ScriptedRunner runner([&](size_t, const CommandRequest& request) { return controller.answer(request); });
  std::vector<const NodeSpec*> nodes;
  for (const auto& n : spec.nodes) nodes.push_back(&n);
  ASSERT_EQ(nodes.size(), 6u);
  PhaseLog journal;
  ExecutorOptions options;
  options.batch = CountOrPercent{2, false};
  const ExecutionReport report = execute(spec, nodes, playbooks, runner, journal, options);
  EXPECT_EQ(report.count(NodeResult::Unchanged), 6u);
  ASSERT_EQ(controller.scripts.size(), 1u) << "one script for three batches";
  EXPECT_EQ(controller.scripts[0], (std::vector<std::string>{"n1", "n2", "n3", "n4", "n5", "n6"}));
}

// apply --until a phase before the controller's: the controller is never
// asked (nor connected to), and no probe carries a later phase's check.
TEST(Executor, UntilAPhaseBeforeTheControllersAsksItNothing) {
  auto loaded = testing::load_spec(testing::minimal_spec(
      "defaults:\n  scheduler:\n    kind: slurm\n    slurm:\n      controller: ctl\n      controller_address: 10.0.0.9\n"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const ClusterSpec spec = *loaded.spec;
  PlaybookSet playbooks;
  playbooks.phases.push_back(phase("monitoring", 5,
                                   "  - {id: a, type: command, check: 'check-a', run: 'run-a', rollback: 'true'}\n"));
  playbooks.phases.push_back(phase("scheduler", 6,
                                   "  - {id: b, type: command, check: 'check-b-{{ node.name }}',\n"
                                   "     run: 'run-b-{{ node.name }}', rollback: 'true', delegate_to: controller}\n"));
  CountingController controller;
  std::vector<std::string> probes;
  ScriptedRunner runner([&](size_t, const CommandRequest& request) {
    if (request.stdin_data.rfind("# gpuexpand facts probe", 0) == 0) probes.push_back(request.stdin_data);
    return controller.answer(request);
  });
  std::vector<const NodeSpec*> nodes;
  for (const auto& n : spec.nodes) nodes.push_back(&n);
  PhaseLog journal;
  ExecutorOptions options;
  options.until_phase = "monitoring";
  const ExecutionReport report = execute(spec, nodes, playbooks, runner, journal, options);
  EXPECT_EQ(journal.finished, (std::vector<std::string>{"monitoring succeeded", "monitoring succeeded"}));
  EXPECT_TRUE(controller.scripts.empty());
  EXPECT_TRUE(controller.configured.empty());
  ASSERT_FALSE(probes.empty());
  for (const auto& probe : probes) {
    EXPECT_NE(probe.find("check-a"), std::string::npos);
    EXPECT_EQ(probe.find("check-b"), std::string::npos);
    // Nor what only facts and doctor show (the spec wants no RDMA).
    EXPECT_EQ(probe.find("rdma link"), std::string::npos);
    EXPECT_EQ(probe.find("df -P"), std::string::npos);
  }
  // The same run without --until asks the controller for step b.
  CountingController full;
  ScriptedRunner full_runner([&](size_t, const CommandRequest& request) { return full.answer(request); });
  PhaseLog full_journal;
  (void)execute(spec, nodes, playbooks, full_runner, full_journal, ExecutorOptions{});
  EXPECT_FALSE(full.scripts.empty());
}

// A delegated check that reads the node's facts cannot be asked ahead as
// it will read: that node asks with its facts, the others take their part.
TEST(Executor, AControllerCheckThatReadsFactsIsAskedWithThem) {
  auto loaded = testing::load_spec(testing::minimal_spec(
      "  - hosts: n[3-4]\n    addresses: 10.0.0.[3-4]\n"
      "defaults:\n  scheduler:\n    kind: slurm\n    slurm:\n      controller: ctl\n      controller_address: 10.0.0.9\n"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const ClusterSpec spec = *loaded.spec;
  PlaybookSet playbooks;
  playbooks.phases.push_back(phase("scheduler", 6,
                                   "  - {id: b, type: command, check: 'check-b-{{ node.name }}',\n"
                                   "     run: 'run-b', rollback: 'true', delegate_to: controller}\n"
                                   "  - {id: c, type: command, when: \"node.name == 'n3'\",\n"
                                   "     check: 'check-c-{{ facts.hostname }}', run: 'run-c', rollback: 'true',\n"
                                   "     delegate_to: controller}\n"));
  CountingController controller;
  ScriptedRunner runner([&](size_t, const CommandRequest& request) { return controller.answer(request); });
  std::vector<const NodeSpec*> nodes;
  for (const auto& n : spec.nodes) nodes.push_back(&n);
  PhaseLog journal;
  const ExecutionReport report = execute(spec, nodes, playbooks, runner, journal, ExecutorOptions{});
  EXPECT_EQ(report.count(NodeResult::Unchanged), 4u) << report.nodes[2].message;
  ASSERT_EQ(controller.scripts.size(), 2u);
  EXPECT_EQ(controller.scripts[0], (std::vector<std::string>{"n1", "n2", "n4"})) << "n3 is not asked ahead";
  EXPECT_EQ(controller.scripts[1], (std::vector<std::string>{"n3"})) << "its check c reads facts.hostname";
}

// A check whose text reads the facts is probed as it reads with the facts
// before the probe. When a phase changes those facts, the result belongs to
// the old text: here the step was converged for the old hostname, so the
// stale result says 0 and the step would be skipped for the new one. It
// must be dropped and the step decided again.
TEST(Executor, ACheckRenderedWithOlderFactsDoesNotDecide) {
  auto loaded = testing::load_spec(testing::minimal_spec());
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const ClusterSpec spec = *loaded.spec;
  PlaybookSet playbooks;
  playbooks.phases.push_back(
      phase("os-init", 1, "  - {id: host, type: command, check: check-host, run: run-host, rollback: 'true'}\n"));
  playbooks.phases.push_back(phase("scheduler", 6,
                                   "  - {id: s, type: command, check: 'check-s-{{ facts.hostname }}',\n"
                                   "     run: 'run-s-{{ facts.hostname }}', rollback: 'true'}\n"));

  std::string hostname = "n1", configured_for = "n1";  // s is converged for the old name
  bool host_done = false;
  const std::regex check(R"(gx_check ([A-Za-z0-9_-]+) ([A-Za-z0-9_.-]+))");
  size_t checks_answered = 0;
  ScriptedRunner runner([&](size_t, const CommandRequest& request) {
    const std::string& script = request.stdin_data;
    if (script.rfind("# gpuexpand facts probe", 0) == 0) {
      std::string out = "\n@@gpx:hostname\n" + hostname + "\n";
      for (std::sregex_iterator it(script.begin(), script.end(), check), end; it != end; ++it) {
        const std::string key = (*it)[1], text = (*it)[2];
        const bool ok = key == "host" ? host_done : text == "check-s-" + configured_for;
        ++checks_answered;
        out += "\n@@gpx:check " + key + "\n" + (ok ? "0" : "1") + "\n";
      }
      return ok(out + "\n@@gpx:end\n");
    }
    if (request.command == "run-host") {
      host_done = true;
      hostname = "n1-new";
    } else if (request.command.rfind("run-s-", 0) == 0) {
      configured_for = request.command.substr(6);
    }
    return ok();
  });

  std::vector<const NodeSpec*> nodes{&spec.nodes[0]};
  PhaseLog journal;
  const ExecutionReport report = execute(spec, nodes, playbooks, runner, journal, ExecutorOptions{});
  EXPECT_EQ(report.nodes[0].result, NodeResult::Changed) << report.nodes[0].message;
  EXPECT_EQ(journal.finished, (std::vector<std::string>{"os-init succeeded", "scheduler succeeded"}));
  EXPECT_EQ(configured_for, "n1-new");
  EXPECT_GE(checks_answered, 4u) << "the probes carried the checks";
}

}  // namespace
}  // namespace gpuexpand

namespace gpuexpand {
namespace {

// A driver step that asks for a reboot, against a node whose boot id
// changes after `polls_until_back` polls (never, when negative), with a
// clock that moves a minute per reading: the 10-minute deadline is
// reached in milliseconds.
struct RebootRun {
  ExecutionReport report;
  std::vector<std::string> finished;
  int boot_polls = 0;
  int boot_reads_as_root = 0, other_commands_not_as_root = 0;
};

RebootRun run_reboot(int polls_until_back) {
  auto loaded = testing::load_spec(testing::minimal_spec());
  EXPECT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const ClusterSpec spec = *loaded.spec;
  PlaybookSet playbooks;
  playbooks.phases.push_back(phase("gpu-driver", 2,
                                   "  - {id: driver, type: command, check: check-driver, run: run-driver, rollback: 'true'}\n"
                                   "  - {id: reboot, type: reboot, reboot_on: [driver]}\n"));
  RebootRun result;
  bool driver_ran = false, rebooted = false;
  ScriptedRunner runner([&](size_t, const CommandRequest& request) {
    if (request.stdin_data.rfind("# gpuexpand facts probe", 0) == 0) {
      return ok(std::string("\n@@gpx:hostname\nn1\n\n@@gpx:check driver\n") + (driver_ran ? "0" : "1") +
                "\n\n@@gpx:end\n");
    }
    if (request.command != "cat /proc/sys/kernel/random/boot_id" && !request.as_root) {
      ++result.other_commands_not_as_root;
    }
    if (request.command == "run-driver") driver_ran = true;
    if (request.command == "systemctl --no-block reboot") rebooted = true;
    if (request.command == "cat /proc/sys/kernel/random/boot_id") {
      result.boot_reads_as_root += request.as_root ? 1 : 0;
      if (!rebooted) return ok("boot-1\n");
      ++result.boot_polls;
      const bool back = polls_until_back >= 0 && result.boot_polls > polls_until_back;
      return ok(back ? "boot-2\n" : "boot-1\n");
    }
    return ok();  // checkpoint, restore
  });
  auto fake_now = std::chrono::steady_clock::time_point{};
  ExecutorOptions options;
  options.run_id = 5;
  options.clock = [&fake_now] { return fake_now += std::chrono::minutes(1); };
  PhaseLog journal;
  std::vector<const NodeSpec*> nodes{&spec.nodes[0]};
  result.report = execute(spec, nodes, playbooks, runner, journal, options);
  result.finished = journal.finished;
  return result;
}

TEST(Executor, ANodeBackFromItsRebootCarriesOn) {
  const RebootRun run = run_reboot(3);
  ASSERT_EQ(run.report.nodes.size(), 1u);
  EXPECT_EQ(run.report.nodes[0].result, NodeResult::Changed) << run.report.nodes[0].message;
  EXPECT_EQ(run.finished, std::vector<std::string>{"gpu-driver succeeded"});
  EXPECT_EQ(run.boot_polls, 4);
  // Only commands that need root go through sudo: reading the boot id does
  // not; the probe, the steps, the reboot and the checkpoint do.
  EXPECT_EQ(run.boot_reads_as_root, 0);
  EXPECT_EQ(run.other_commands_not_as_root, 0);
}

TEST(Executor, ANodeThatDoesNotComeBackWithinTheDeadlineIsRolledBack) {
  const RebootRun run = run_reboot(-1);
  ASSERT_EQ(run.report.nodes.size(), 1u);
  EXPECT_EQ(run.report.nodes[0].result, NodeResult::Failed);
  EXPECT_NE(run.report.nodes[0].message.find("the node did not come back from the reboot within 10 minutes"),
            std::string::npos)
      << run.report.nodes[0].message;
  EXPECT_EQ(run.finished, std::vector<std::string>{"gpu-driver rolled-back"});
  // One reading per poll after the deadline was set ten readings on: about ten polls, not an endless wait.
  EXPECT_GE(run.boot_polls, 9);
  EXPECT_LE(run.boot_polls, 12);
}

}  // namespace
}  // namespace gpuexpand
