// Black-box tests of the built binary: exit codes, exact error output,
// machine-readable outputs, files it writes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include <filesystem>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand::testing {
namespace {

const std::string kLabSpec = source_path("examples/lab-rack.yaml");
const std::string kH200Spec = source_path("examples/h200-expansion.yaml");
const std::string kLabFacts = source_path("tests/fixtures/facts/lab-bare.json");
const std::string kH200Facts = source_path("tests/fixtures/facts/h200-bare.json");

TEST(Cli, Version) {
  auto r = run_gpuexpand({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "gpuexpand 0.1.0\n");
}

TEST(Cli, HelpListsCommandsAndExitCodes) {
  auto r = run_gpuexpand({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"validate", "inventory", "plan", "apply", "rollback", "status", "verify", "Exit codes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

TEST(Cli, NoCommandIsAnError) {
  auto r = run_gpuexpand({});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("A subcommand is required"), std::string::npos) << r.err;
}

TEST(Cli, UnknownOptionIsAnError) {
  auto r = run_gpuexpand({"validate", kLabSpec, "--bogus"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST(Cli, VerifyRefusesAFaultDrillOnAnUnselectedNode) {
  auto r = run_gpuexpand({"verify", kLabSpec, "--limit", "node-01", "--fault-drill", "node-02", "--state",
                          make_temp_dir() + "/state.db"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuexpand: error: --fault-drill node-02: not one of the selected nodes\n");
}

// A command refused after it took its node locks still ends its run: no
// run stays `running` holding the nodes (the next apply is not blocked).
TEST(Cli, ARefusedApplyLeavesNoLockBehind) {
  const std::string dir = make_temp_dir();
  std::string spec = read_file(source_path("examples/lab-rack.yaml"));
  const auto at = spec.find("\nssh:\n");
  ASSERT_NE(at, std::string::npos);
  spec.insert(at + 6, "  passphrase_env: GPUEXPAND_TEST_UNSET_PASSPHRASE\n");
  // The files the spec names exist (the preflight would refuse it first otherwise).
  for (std::string::size_type p; (p = spec.find("~/.gpuexpand-lab/")) != std::string::npos;) spec.replace(p, 17, dir + "/");
  write_file(dir + "/id_ed25519", "not a key, but there\n");
  write_file(dir + "/munge.key", "munge\n");
  write_file(dir + "/spec.yaml", spec);
  auto refused = run_gpuexpand({"apply", "-y", dir + "/spec.yaml", "--limit", "node-01", "--state", dir + "/state.db"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("GPUEXPAND_TEST_UNSET_PASSPHRASE, which is not set"), std::string::npos) << refused.err;
  auto unlocked = run_gpuexpand({"unlock", "--force", "--state", dir + "/state.db"});
  EXPECT_EQ(unlocked.out, "No locks held\n") << unlocked.err;
  auto json = run_gpuexpand({"status", "--state", dir + "/state.db", "-o", "json"});
  const auto runs = nlohmann::json::parse(json.out)["runs"];
  ASSERT_EQ(runs.size(), 1u) << json.out;
  EXPECT_EQ(runs[0]["status"], "failed") << json.out;
}

// A file a later phase needs is missing: apply says so before any node is
// touched (no store, no run), every problem at once.
TEST(Cli, ApplyPreflightRefusesMissingOperatorFiles) {
  const std::string dir = make_temp_dir();
  std::string spec = read_file(source_path("examples/lab-rack.yaml"));
  for (std::string::size_type p; (p = spec.find("~/.gpuexpand-lab/")) != std::string::npos;) spec.replace(p, 17, dir + "/");
  write_file(dir + "/id_ed25519", "key\n");
  write_file(dir + "/spec.yaml", spec);
  auto r = run_gpuexpand({"apply", "-y", dir + "/spec.yaml", "--state", dir + "/state.db"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "gpuexpand: error: preflight: 1 problem; no node was touched:\n"
                   "  scheduler.slurm.munge_key_file: cannot read " + dir + "/munge.key: No such file or directory "
                   "(needed by node-[01-06])\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/state.db")) << "refused before the store is opened";
}

// Without a terminal apply cannot ask: it refuses, naming the flag, before
// anything is recorded (the tests' stdin is no terminal).
TEST(Cli, ApplyWithoutATerminalNeedsAutoApprove) {
  const std::string dir = make_temp_dir();
  std::string spec = read_file(source_path("examples/lab-rack.yaml"));
  for (std::string::size_type p; (p = spec.find("~/.gpuexpand-lab/")) != std::string::npos;) spec.replace(p, 17, dir + "/");
  write_file(dir + "/id_ed25519", "key\n");
  write_file(dir + "/munge.key", "munge\n");
  write_file(dir + "/spec.yaml", spec);
  auto r = run_gpuexpand({"apply", dir + "/spec.yaml", "--state", dir + "/state.db"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "gpuexpand: error: apply asks before it changes nodes, and there is no terminal to ask on: add "
                   "--auto-approve (-y), or review a saved plan (plan --out plan.json) and apply that\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/state.db")) << "nothing recorded";
}

// A Slurm controller that cannot be reached is found before any node is
// touched, not in the scheduler phase after the driver went in.
TEST(Cli, ApplyPreflightRefusesAnUnreachableController) {
  const std::string dir = make_temp_dir();
  std::string spec = read_file(source_path("examples/lab-rack.yaml"));
  for (std::string::size_type p; (p = spec.find("~/.gpuexpand-lab/")) != std::string::npos;) spec.replace(p, 17, dir + "/");
  spec.replace(spec.find("controller_address: 198.18.0.10"), 31, "controller_address: 127.0.0.1");
  spec.insert(spec.find("\nssh:\n") + 6, "  port: 1\n  connect_timeout: 2\n");  // nothing listens on port 1
  write_file(dir + "/id_ed25519", "key\n");
  write_file(dir + "/munge.key", "munge\n");
  write_file(dir + "/known_hosts", "");
  write_file(dir + "/spec.yaml", spec);
  auto r = run_gpuexpand({"apply", "-y", dir + "/spec.yaml", "--limit", "node-[01-02]", "--state", dir + "/state.db"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("gpuexpand: error: preflight: 1 problem; no node was touched:\n  the Slurm controller ctl (127.0.0.1) cannot "
                       "be reached (node-[01-02] would register with it): "),
            std::string::npos)
      << r.err;
  auto json = run_gpuexpand({"status", "--state", dir + "/state.db", "-o", "json"});
  const auto runs = nlohmann::json::parse(json.out)["runs"];
  ASSERT_EQ(runs.size(), 1u) << json.out;
  EXPECT_EQ(runs[0]["status"], "failed") << "the run ends, its locks released";
  // A run that stops before the scheduler phase does not need the controller:
  // it gets as far as the nodes (unreachable here, on port 1).
  auto until = run_gpuexpand({"apply", "-y", dir + "/spec.yaml", "--limit", "node-01", "--until", "storage", "--state",
                              dir + "/state.db"});
  EXPECT_EQ(until.exit_code, 3) << until.out << until.err;
  EXPECT_EQ(until.err.find("preflight"), std::string::npos) << until.err;
  EXPECT_NE(until.out.find("node-01  UNREACHABLE"), std::string::npos) << until.out;
}

// The default store is beside the spec, not in the shell's directory: an
// apply of the same spec from elsewhere meets the same locks (exit 4), and
// status finds the run through the spec.
TEST(Cli, TheDefaultStoreFollowsTheSpec) {
  const std::string dir = make_temp_dir(), elsewhere = make_temp_dir();
  std::string spec = read_file(source_path("examples/lab-rack.yaml"));
  for (std::string::size_type p; (p = spec.find("~/.gpuexpand-lab/")) != std::string::npos;) spec.replace(p, 17, dir + "/");
  write_file(dir + "/id_ed25519", "key\n");
  write_file(dir + "/munge.key", "munge\n");
  write_file(dir + "/spec.yaml", spec);
  {
    auto opened = StateStore::open(dir + "/.gpuexpand/state.db");
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    RunRecord run;
    run.command = "apply";
    run.spec_file = dir + "/spec.yaml";
    run.started_at = "2026-12-02T03:00:00Z";
    run.holder = "ops@other-host.invalid pid 77";
    run.nodes = {"node-01"};
    auto begun = (*opened)->begin_run(run);
    ASSERT_TRUE(begun.ok() && std::holds_alternative<int64_t>(*begun));
  }
  auto r = run_gpuexpand({"apply", "-y", dir + "/spec.yaml", "--limit", "node-01"}, elsewhere);
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("node node-01 is locked by run 1"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(elsewhere + "/.gpuexpand")) << "no second store in the shell's directory";
  auto status = run_gpuexpand({"status", dir + "/spec.yaml"}, elsewhere);
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("  1    apply    2026-12-02T03:00:00Z  running"), std::string::npos) << status.out;
}

// Invalid playbooks (--data-dir) are refused before verify takes a lock.
TEST(Cli, VerifyWithInvalidPlaybooksTakesNoLock) {
  const std::string dir = make_temp_dir();
  ASSERT_EQ(std::system(("cp -r " + source_path("schemas") + " " + source_path("playbooks") + " " + dir).c_str()), 0);
  write_file(dir + "/playbooks/70-acceptance.yaml",
             "phase: acceptance\norder: 7\nsteps:\n  - {id: checks, type: acceptance, checks: [{name: x, command: "
             "'echo {{ nodes.name }}'}]}\n");
  auto r = run_gpuexpand({"--data-dir", dir, "verify", kLabSpec, "--limit", "node-01", "--state", dir + "/state.db"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown variable 'nodes.name' (did you mean 'node'?)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/state.db")) << "refused before the store is even opened: no run";
}

// status and unlock only look at a store: a path with none is refused,
// named, and nothing is created there (a typo must not start a history).
TEST(Cli, StatusAndUnlockRefuseAStoreThatIsNotThere) {
  const std::string dir = make_temp_dir();
  const std::string state = dir + "/sub/state.db";
  const std::string refusal = "gpuexpand: error: no state store at " + state + " (nothing has run with --state " + state +
                              " here; check the path)\n";
  auto status = run_gpuexpand({"status", "--state", state});
  EXPECT_EQ(status.exit_code, 1);
  EXPECT_EQ(status.err, refusal);
  auto refused = run_gpuexpand({"unlock", "--state", state});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.err, "gpuexpand: error: unlock needs --force: releasing a lock another apply still uses lets two runs "
                         "change the same nodes\n");
  auto forced = run_gpuexpand({"unlock", "--force", "--state", state});
  EXPECT_EQ(forced.exit_code, 1);
  EXPECT_EQ(forced.err, refusal);
  EXPECT_FALSE(std::filesystem::exists(dir + "/sub")) << "no folder made for a store that is not there";
}

// rollback undoes what checkpoints an apply left in the store: with no store
// there is nothing to roll back, so a mistyped --state (or a spec copied away
// from its .gpuexpand folder) is refused, named, and creates nothing.
TEST(Cli, RollbackRefusesAStoreThatIsNotThere) {
  const std::string dir = make_temp_dir();
  const std::string state = dir + "/sub/state.db";
  auto r = run_gpuexpand({"rollback", kLabSpec, "--node", "node-01", "--to", "os-init", "--state", state});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuexpand: error: no state store at " + state + " (nothing has run with --state " + state +
                       " here; check the path)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(std::filesystem::exists(dir + "/sub")) << "no folder made for a store that is not there";

  // The default store beside the spec: the same refusal, no .gpuexpand folder.
  const std::string spec = dir + "/spec.yaml";
  std::filesystem::copy_file(kLabSpec, spec);
  const std::string beside = dir + "/.gpuexpand/state.db";
  auto by_default = run_gpuexpand({"rollback", spec, "--node", "node-01", "--to", "os-init"});
  EXPECT_EQ(by_default.exit_code, 1);
  EXPECT_EQ(by_default.err, "gpuexpand: error: no state store at " + beside + " (nothing has run with --state " +
                                beside + " here; check the path)\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/.gpuexpand")) << "no folder made beside the spec";
}

TEST(Cli, StatusAndUnlockOnAFreshStore) {
  const std::string state = make_temp_dir() + "/state.db";
  ASSERT_TRUE(StateStore::open(state));  // as the first apply leaves it before its run
  auto status = run_gpuexpand({"status", "--state", state});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out, "No runs recorded in " + state + "\n");
  auto unlocked = run_gpuexpand({"unlock", "--force", "--state", state});
  EXPECT_EQ(unlocked.exit_code, 0) << unlocked.err;
  EXPECT_EQ(unlocked.out, "No locks held\n");
  auto json = run_gpuexpand({"status", "--state", state, "-o", "json"});
  EXPECT_EQ(nlohmann::json::parse(json.out), nlohmann::json::parse(R"({"runs": [], "latest": []})"));
}

// unlock --limit selects as every other command does, from the spec.
TEST(Cli, UnlockLimitReleasesOnlyTheSelectedNodes) {
  const std::string state = make_temp_dir() + "/state.db";
  {
    auto store = StateStore::open(state);
    ASSERT_TRUE(store);
    RunRecord run;
    run.command = "apply";
    run.holder = "ops@elsewhere pid 1";
    run.nodes = {"node-01", "node-02"};
    auto begun = (*store)->begin_run(run);
    ASSERT_TRUE(begun);
  }
  auto no_spec = run_gpuexpand({"unlock", "--force", "--limit", "node-01", "--state", state});
  EXPECT_EQ(no_spec.exit_code, 1);
  EXPECT_EQ(no_spec.err, "gpuexpand: error: unlock --limit needs SPEC (the racks and groups it names)\n");
  auto one = run_gpuexpand({"unlock", kLabSpec, "--force", "--limit", "node-01", "--state", state});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("node-01"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("node-02"), std::string::npos) << one.out;
  auto rest = run_gpuexpand({"unlock", kLabSpec, "--force", "--state", state});
  EXPECT_NE(rest.out.find("node-02"), std::string::npos) << "node-02 was still locked: " << rest.out;
}

// init --from: a spec drafted from the recorded facts of a lab node in
// service validates, and planned against that node's recorded facts it
// changes nothing but the acceptance settings. The facts: init --save-facts
// and plan --save-facts on the lab (tests/fixtures/facts/README.md).
TEST(Cli, InitDraftsASpecThatPlansNoChangesAgainstItsNode) {
  const std::string dir = make_temp_dir();
  const std::vector<std::string> init = {"init", "--from", "root@198.18.0.11", "--cluster", "lab", "--facts",
                                         source_path("tests/fixtures/facts/lab-in-service.json"), "--spec-out",
                                         dir + "/draft.yaml"};
  auto drafted = run_gpuexpand(init);
  ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
  EXPECT_NE(drafted.err.find("Drafted " + dir + "/draft.yaml from node-01: it reproduces os-init, gpu-driver, rdma, storage, monitoring."),
            std::string::npos)
      << drafted.err;
  EXPECT_NE(drafted.err.find("  - repository gxlab: its key was copied from node-01; check fingerprint "), std::string::npos);
  const std::string draft = read_file(dir + "/draft.yaml");
  EXPECT_NE(draft.find("        key: \"keys/gxlab.gpg\"\n"), std::string::npos) << draft;
  EXPECT_TRUE(std::filesystem::exists(dir + "/keys/gxlab.gpg"));
  auto again = run_gpuexpand(init);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "gpuexpand: error: " + dir + "/draft.yaml exists; --force replaces it\n");

  auto valid = run_gpuexpand({"validate", dir + "/draft.yaml"});
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;
  auto plan = run_gpuexpand({"plan", dir + "/draft.yaml", "--facts", source_path("tests/fixtures/facts/lab-in-service-plan.json"),
                             "--output", "json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::vector<std::string> changed;
  const auto document = nlohmann::json::parse(plan.out);  // named: a range-for over a temporary's member dangles
  for (const auto& p : document["plans"]) {
    for (const auto& phase : p["phases"]) {
      if (!phase["changes"].empty()) changed.push_back(phase["name"]);
    }
  }
  EXPECT_EQ(changed, (std::vector<std::string>{"acceptance"})) << plan.out;

  auto no_node = run_gpuexpand({"init", "--from", "root@198.18.0.11:99999"});
  EXPECT_EQ(no_node.exit_code, 1);
  EXPECT_EQ(no_node.err, "gpuexpand: error: --from root@198.18.0.11:99999: the port must be a number from 1 to 65535\n");
}

// plan --diff, and -v, print a changed file's unified diff under its
// change: the spec drafted from node-01 with another time server.
TEST(Cli, PlanDiffShowsAChangedFilesLines) {
  const std::string dir = make_temp_dir();
  auto drafted = run_gpuexpand({"init", "--from", "root@198.18.0.11", "--cluster", "lab", "--facts",
                                source_path("tests/fixtures/facts/lab-in-service.json"), "--spec-out", dir + "/draft.yaml"});
  ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
  std::string draft = read_file(dir + "/draft.yaml");
  const std::string ntp = "ntp_servers: [\"198.18.0.1\"]";
  ASSERT_NE(draft.find(ntp), std::string::npos) << draft;
  draft.replace(draft.find(ntp), ntp.size(), "ntp_servers: [\"198.18.0.9\"]");
  write_file(dir + "/draft.yaml", draft);
  const std::string facts = source_path("tests/fixtures/facts/lab-in-service-plan.json");
  const std::string hunk = "    ~ /etc/chrony/chrony.conf: content differs (+1 -1 lines)  (variant: Debian 12 and earlier, Ubuntu)\n"
                           "        @@ -1,5 +1,5 @@\n"
                           "         # Managed by gpuexpand: changes here are overwritten.\n"
                           "        -server 198.18.0.1 iburst\n"
                           "        +server 198.18.0.9 iburst\n";
  auto diff = run_gpuexpand({"plan", dir + "/draft.yaml", "--facts", facts, "--diff", "--state", dir + "/state.db"});
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find(hunk), std::string::npos) << diff.out;
  auto verbose = run_gpuexpand({"plan", dir + "/draft.yaml", "--facts", facts, "-v", "--state", dir + "/state.db"});
  EXPECT_NE(verbose.out.find("        -server 198.18.0.1 iburst\n        +server 198.18.0.9 iburst\n"), std::string::npos)
      << verbose.out;
  auto plain = run_gpuexpand({"plan", dir + "/draft.yaml", "--facts", facts, "--state", dir + "/state.db"});
  EXPECT_EQ(plain.out.find("@@ -1,5"), std::string::npos) << "no diff without --diff or -v";
}

// report: one run as a page. The store holds a run of three nodes (one
// changed, one failed with a message that looks like markup, one
// unreachable) with acceptance figures; the HTML is escaped and complete,
// Markdown has the grid and the failures, and headless Chromium (Debian's
// package, scripts/setup) renders the page without console errors.
TEST(Cli, ReportRendersARunAsHtmlAndMarkdown) {
  const std::string dir = make_temp_dir();
  const std::string state = dir + "/state.db";
  {
    auto store = StateStore::open(state);
    ASSERT_TRUE(store);
    RunRecord run;
    run.command = "apply";
    run.spec_file = "rack.yaml";
    run.holder = "ops@elsewhere pid 1";
    run.started_at = "2026-12-03T01:00:00Z";
    run.nodes = {"gpu-01", "gpu-02", "gpu-03"};
    const int64_t id = std::get<int64_t>(*(*store)->begin_run(run));
    auto phase = [&](const std::string& node, const std::string& name, PhaseStatus status, const std::string& from,
                     const std::string& to, const std::string& step = "", const std::string& message = "") {
      PhaseResult r;
      r.run_id = id;
      r.node = node;
      r.phase = name;
      r.status = status;
      r.changes = status == PhaseStatus::Succeeded ? 3 : 0;
      r.started_at = from;
      r.finished_at = to;
      r.duration_s = 5;
      r.failed_step = step;
      r.message = message;
      ASSERT_TRUE((*store)->record_phase(r));
    };
    phase("gpu-01", "os-init", PhaseStatus::Succeeded, "2026-12-03T01:00:01Z", "2026-12-03T01:00:06Z");
    phase("gpu-01", "gpu-driver", PhaseStatus::Succeeded, "2026-12-03T01:00:06Z", "2026-12-03T01:00:40Z");
    phase("gpu-02", "os-init", PhaseStatus::RolledBack, "2026-12-03T01:00:01Z", "2026-12-03T01:00:09Z", "base-packages",
          "apt-get exited 100: <script>alert(1)</script> E: Unable to locate package");
    ASSERT_TRUE((*store)->record_checks({{id, "gpu-01", "storage", CheckStatus::Pass, "/mnt/shared: 412 MB/s write", 2.0, "t"},
                                         {id, "gpu-01", "gpu", CheckStatus::Pass, "8 x NVIDIA H200", 0.5, "t"}}));
    ASSERT_TRUE((*store)->record_node_result(id, "gpu-01", "changed", ""));
    ASSERT_TRUE((*store)->record_node_result(id, "gpu-02", "failed", "phase os-init"));
    ASSERT_TRUE((*store)->record_node_result(id, "gpu-03", "unreachable", "gpu-03 (10.0.0.3): timed out"));
    ASSERT_TRUE((*store)->finish_run(id, RunStatus::Failed, 3, "2026-12-03T01:01:00Z"));
  }
  auto markdown = run_gpuexpand({"report", "--state", state, "--markdown"});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_NE(markdown.out.find("| gpu-01 | changed | ✓ 3 | ✓ 3 |"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("| gpu-02 | failed | ✗ rolled back |"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("- **gpu-03** unreachable: gpu-03 (10.0.0.3): timed out"), std::string::npos) << markdown.out;

  const std::string page = dir + "/run.html";
  auto written = run_gpuexpand({"report", "--state", state, "--html", page});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  const std::string text = read_file(page);
  EXPECT_EQ(text.find("<script"), std::string::npos) << "a message from the store is text, never markup";
  EXPECT_NE(text.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(text.find("<td class=\"failed\" title=\"base-packages: apt-get exited 100"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n') > 20, true);
  size_t bars = 0;
  for (size_t at = text.find("<rect class=\"phase\""); at != std::string::npos; at = text.find("<rect class=\"phase\"", at + 1)) ++bars;
  EXPECT_EQ(bars, 3u) << "a timeline bar per phase result";
  EXPECT_NE(text.find("<h3>storage (MB/s)</h3>"), std::string::npos) << "the storage figure as a chart";
  EXPECT_EQ(text.find("http"), text.find("http://www.w3.org/2000/svg")) << "nothing fetched: the only URL is SVG's namespace";

  auto none = run_gpuexpand({"report", "--state", state});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "gpuexpand: error: report: give --html FILE or --markdown\n");

  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup installs Debian's chromium): the page was not rendered";
  }
  const std::string png = dir + "/run.png", log = dir + "/chromium.log", dom = dir + "/dom.html";
  const std::string chromium = "chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir=" + dir +
                               "/profile --enable-logging=stderr --v=0 ";
  ASSERT_EQ(std::system((chromium + "--window-size=1200,900 --screenshot=" + png + " file://" + page + " >" + log + " 2>&1").c_str()), 0)
      << read_file(log);
  EXPECT_GT(std::filesystem::file_size(png), 10000u) << "a blank screenshot is a few hundred bytes";
  EXPECT_EQ(read_file(log).find("CONSOLE"), std::string::npos) << read_file(log);
  ASSERT_EQ(std::system((chromium + "--dump-dom file://" + page + " >" + dom + " 2>" + log).c_str()), 0) << read_file(log);
  const std::string rendered = read_file(dom);
  EXPECT_NE(rendered.find("Nodes and phases"), std::string::npos);
  EXPECT_NE(rendered.find("gpu-03"), std::string::npos);
  EXPECT_EQ(read_file(log).find("CONSOLE"), std::string::npos) << read_file(log);
}

// audit: who ran what where, from the store alone; filters by run, node
// (host lists) and failure; refuses a store that is not there.
TEST(Cli, AuditListsEveryRemoteCommandWithWhoRanItAndItsStdinDigest) {
  const std::string state = make_temp_dir() + "/state.db";
  auto missing = run_gpuexpand({"audit", "--state", state});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(state)) << "a read-only command created the store";
  int64_t first = 0, second = 0;
  {
    auto store = StateStore::open(state);
    ASSERT_TRUE(store);
    RunRecord run;
    run.command = "apply";
    run.holder = "ops@elsewhere pid 1";
    run.nodes = {"node-01", "node-02"};
    first = std::get<int64_t>(*(*store)->begin_run(run));
    ASSERT_TRUE((*store)->finish_run(first, RunStatus::Succeeded, 0, "t"));
    second = std::get<int64_t>(*(*store)->begin_run(run));
    AuditEntry probe{first, "node-01", "sh -s", 0, "ok", 12, "2026-12-03T01:00:00Z"};
    probe.user = "ops";
    probe.sudo = true;
    probe.stdin_bytes = 2048;
    probe.stdin_sha256 = "0123456789abcdef" + std::string(48, '0');
    AuditEntry key{first, "node-02", "<sensitive>", 0, "ok", 3, "2026-12-03T01:00:01Z"};
    key.user = "root";
    AuditEntry failed{second, "node-02", "printf 'a\\n'\nfalse", 1, "command failed", 5, "2026-12-03T02:00:00Z"};
    failed.user = "root";
    AuditEntry gone{second, "node-01", "sh -s", -1, "unreachable", 3000, "2026-12-03T02:00:01Z"};
    gone.user = "root";
    ASSERT_TRUE((*store)->record_audit({probe, key, failed, gone}));
  }
  auto all = run_gpuexpand({"audit", "--state", state});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const std::string f = std::to_string(first), s = std::to_string(second);
  EXPECT_EQ(all.out,
            "  RUN  AT                    NODE     USER      EXIT         MS    STDIN                       COMMAND\n"
            "  " + f + "    2026-12-03T01:00:00Z  node-01  ops+sudo  0            12    2048 B sha256:0123456789ab  sh -s\n"
            "  " + f + "    2026-12-03T01:00:01Z  node-02  root      0            3     -                           <sensitive>\n"
            "  " + s + "    2026-12-03T02:00:00Z  node-02  root      1            5     -                           printf 'a\\\\n'\\nfalse\n"
            "  " + s + "    2026-12-03T02:00:01Z  node-01  root      unreachable  3000  -                           sh -s\n"
            "4 commands on 2 nodes in 2 runs; 2 did not exit 0\n");
  auto narrowed = run_gpuexpand({"audit", "--state", state, "--run", s, "--limit", "node-[02-03]"});
  ASSERT_EQ(narrowed.exit_code, 0) << narrowed.err;
  EXPECT_NE(narrowed.out.find("1 command on 1 node in 1 run; 1 did not exit 0"), std::string::npos) << narrowed.out;
  auto failures = run_gpuexpand({"audit", "--state", state, "--failed", "--output", "json"});
  ASSERT_EQ(failures.exit_code, 0) << failures.err;
  const auto doc = nlohmann::json::parse(failures.out);
  ASSERT_EQ(doc["commands"].size(), 2u);
  EXPECT_EQ(doc["commands"][0]["command"], "printf 'a\\n'\nfalse");
  EXPECT_EQ(doc["commands"][1]["failure"], "unreachable");
  auto no_run = run_gpuexpand({"audit", "--state", state, "--run", "99"});
  EXPECT_EQ(no_run.exit_code, 1);
  EXPECT_EQ(no_run.err, "gpuexpand: error: no run 99 in " + state + "\n");
  auto by_node = run_gpuexpand({"audit", "--state", state, "--run", s, "--node", "node-[02-03]"});
  EXPECT_EQ(by_node.out, narrowed.out) << "--node is --limit";
  auto bad_list = run_gpuexpand({"audit", "--state", state, "--node", "node-[02"});
  EXPECT_EQ(bad_list.exit_code, 1);
  EXPECT_NE(bad_list.err.find("--limit node-[02: "), std::string::npos) << bad_list.err;
}

// --limit @failed: the nodes the last apply did not finish, read from the
// store, so a retry needs no host names copied from the output.
TEST(Cli, LimitFailedSelectsWhatTheLastApplyDidNotFinish) {
  const std::string state = make_temp_dir() + "/state.db";
  auto missing = run_gpuexpand({"inventory", kLabSpec, "--limit", "@failed", "--state", state});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "gpuexpand: error: --limit @failed: no state store at " + state + " (nothing has run with --state " +
                             state + " here; check the path)\n");
  {
    auto store = StateStore::open(state);
    ASSERT_TRUE(store);
    RunRecord run;
    run.command = "apply";
    run.holder = "ops@elsewhere pid 1";
    run.nodes = {"node-01", "node-02", "node-03", "node-04", "node-99"};
    auto begun = (*store)->begin_run(run);
    ASSERT_TRUE(begun);
    const int64_t id = std::get<int64_t>(*begun);
    ASSERT_TRUE((*store)->record_node_result(id, "node-01", "changed", ""));
    ASSERT_TRUE((*store)->record_node_result(id, "node-02", "failed", "node-02: phase os-init, step hostname: exit 1"));
    ASSERT_TRUE((*store)->record_node_result(id, "node-03", "unreachable", "node-03 (198.18.0.13:22): timed out"));
    ASSERT_TRUE((*store)->record_node_result(id, "node-04", "unchanged", ""));
    ASSERT_TRUE((*store)->record_node_result(id, "node-99", "failed", "node-99: gone since"));
    ASSERT_TRUE((*store)->finish_run(id, RunStatus::Failed, 3, "t"));
  }
  auto failed = run_gpuexpand({"inventory", kLabSpec, "--limit", "@failed", "--state", state, "--hostlist"});
  EXPECT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_EQ(failed.out, "node-[02-03]\n");
  EXPECT_EQ(failed.err, "gpuexpand: warning: --limit @failed: node-99 did not finish run 1 but is no longer in the spec\n");
  auto rest = run_gpuexpand({"inventory", kLabSpec, "--limit", "!@failed", "--state", state, "--hostlist"});
  EXPECT_EQ(rest.out, "node-[01,04-06]\n") << rest.err;
  auto mixed = run_gpuexpand({"inventory", kLabSpec, "--limit", "@failed,node-06,!node-03", "--state", state, "--hostlist"});
  EXPECT_EQ(mixed.out, "node-[02,06]\n") << mixed.err;
  // plan reads the same store (here with recorded facts, so no node is reached).
  auto plan = run_gpuexpand({"plan", kLabSpec, "--facts", kLabFacts, "--limit", "@failed", "--state", state, "-o", "json"});
  std::vector<std::string> planned;
  const nlohmann::json document = nlohmann::json::parse(plan.out);
  for (const auto& node : document["nodes"]) planned.push_back(node["name"].get<std::string>());
  EXPECT_EQ(planned, (std::vector<std::string>{"node-02", "node-03"})) << plan.err;

  // The retry finished them all: nothing is left, and nothing is touched
  // (the lab's addresses do not answer here: an attempt would fail).
  {
    auto store = StateStore::open(state);
    ASSERT_TRUE(store);
    RunRecord run;
    run.command = "apply";
    run.holder = "ops@elsewhere pid 1";
    run.nodes = {"node-02", "node-03"};
    const int64_t id = std::get<int64_t>(*(*store)->begin_run(run));
    ASSERT_TRUE((*store)->record_node_result(id, "node-02", "changed", ""));
    ASSERT_TRUE((*store)->record_node_result(id, "node-03", "changed", ""));
    ASSERT_TRUE((*store)->finish_run(id, RunStatus::Succeeded, 0, "t"));
  }
  auto none = run_gpuexpand({"apply", "-y", kLabSpec, "--limit", "@failed,!node-01", "--state", state});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "--limit @failed: run 2 (the last apply) left no node unfinished; nothing to do\n");
  EXPECT_EQ(none.err, "");
}

// logs reads the run's per-node files beside the store: the newest run
// with the node by default, filters by phase or failure, refuses a node
// name that would be a path.
TEST(Cli, LogsShowsANodesRunFromItsLogFile) {
  const std::string dir = make_temp_dir();
  const std::string state = dir + "/state.db";
  const std::string log3 = "T1 $ true\n  = exit 0 (0.01 s)\n";
  const std::string log5 =
      "T2 phase os-init: started\n"
      "T2 $ apt-get install -y -q no-such-package-gx\n"
      "  ! E: Unable to locate package no-such-package-gx\n"
      "  = exit 100 (0.52 s)\n"
      "T2 phase os-init: FAILED, rolled back (0.90 s) at step base-packages: exited 100\n";
  for (const auto& [run, node, text] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"3", "node-02", log3}, {"5", "node-02", log5}, {"5", "node-01", log3}}) {
    std::filesystem::create_directories(dir + "/runs/" + run);
    std::ofstream(dir + "/runs/" + run + "/" + node + ".log") << text;
  }
  auto newest = run_gpuexpand({"logs", "node-02", "--state", state});
  EXPECT_EQ(newest.exit_code, 0) << newest.err;
  EXPECT_EQ(newest.out, "run 5, node-02: " + dir + "/runs/5/node-02.log\n" + log5);
  auto older = run_gpuexpand({"logs", "node-02", "--run", "3", "--state", state});
  EXPECT_EQ(older.out, "run 3, node-02: " + dir + "/runs/3/node-02.log\n" + log3);
  auto failed = run_gpuexpand({"logs", "node-02", "--failed", "--state", state});
  EXPECT_EQ(failed.out, "run 5, node-02: " + dir + "/runs/5/node-02.log\n" + log5.substr(log5.find("T2 $")));
  auto nothing = run_gpuexpand({"logs", "node-01", "--failed", "--state", state});
  EXPECT_EQ(nothing.out, "run 5, node-01: " + dir + "/runs/5/node-01.log\n(nothing failed)\n");
  auto unknown = run_gpuexpand({"logs", "node-09", "--state", state});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err, "gpuexpand: error: no run has a log of node-09 in " + dir + "/runs (runs keep their logs beside "
                         "the state store " + state + ")\n");
  auto path = run_gpuexpand({"logs", "../../etc/passwd", "--state", state});
  EXPECT_EQ(path.exit_code, 1);
  EXPECT_EQ(path.err, "gpuexpand: error: logs: '../../etc/passwd' is not a node name\n");
  auto typo = run_gpuexpand({"logs", "node-02", "--phase", "os-int", "--state", state});
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.err.find("no phase 'os-int' (did you mean 'os-init'?)"), std::string::npos) << typo.err;
}

// The event stream cannot carry a question: -y or a saved plan, asked for
// before anything is recorded.
TEST(Cli, ApplyEventsNeedAutoApprove) {
  const std::string state = make_temp_dir() + "/state.db";
  auto r = run_gpuexpand({"apply", kLabSpec, "-o", "jsonl", "--state", state});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gpuexpand: error: --output jsonl needs --auto-approve (-y) or a saved plan: a question would break "
                   "the stream of events\n");
  EXPECT_FALSE(std::filesystem::exists(state)) << "refused before a run is recorded";
  auto bad = run_gpuexpand({"apply", kLabSpec, "-o", "json"});
  EXPECT_EQ(bad.err, "gpuexpand: error: --output: json not in {text,jsonl}\nRun 'gpuexpand apply --help' for the options.\n");
}

// facts --diff on recorded facts: no node is reached.
TEST(Cli, FactsDiffComparesTwoNodesOrTwoSets) {
  auto same = run_gpuexpand({"facts", kH200Spec, "--facts", kH200Facts, "--diff", "gpu-node-001", "gpu-node-002"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out.rfind("No differences between gpu-node-001 and gpu-node-002 in ", 0), 0u) << same.out;
  auto racks = run_gpuexpand({"facts", kH200Spec, "--facts", kH200Facts, "--diff", "rack=r01", "rack=r03", "-o", "json"});
  EXPECT_EQ(racks.exit_code, 1) << "gpu-node-077 of r03 is unreachable in the recording";
  const auto doc = nlohmann::json::parse(racks.out);
  EXPECT_EQ(doc["a"], "gpu-node-[001-032]");
  EXPECT_EQ(doc["b"], "gpu-node-[065-096]");
  EXPECT_EQ(doc["differences"], nlohmann::json::array());
  ASSERT_EQ(doc["unreachable"].size(), 1u);
  EXPECT_NE(doc["unreachable"][0].get<std::string>().find("gpu-node-077"), std::string::npos);
  auto limited = run_gpuexpand({"facts", kH200Spec, "--facts", kH200Facts, "--diff", "a", "b", "--limit", "rack=r01"});
  EXPECT_EQ(limited.exit_code, 1);
  EXPECT_EQ(limited.err, "gpuexpand: error: --diff names its nodes itself; drop --limit\n");
  auto typo = run_gpuexpand({"facts", kH200Spec, "--facts", kH200Facts, "--diff", "gpu-node-001", "rack=r9"});
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_EQ(typo.err.rfind("gpuexpand: error: --diff rack=r9: no node is in rack 'r9'", 0), 0u) << typo.err;
}

// Every error gpuexpand prints starts the same way, parse errors of the
// command line included, and names the help to read.
TEST(Cli, ErrorsSayErrorAndOutputHasOneVocabulary) {
  auto missing = run_gpuexpand({"plan"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "gpuexpand: error: SPEC is required\nRun 'gpuexpand plan --help' for the options.\n");
  auto facts = run_gpuexpand({"facts", kLabSpec, "-o", "yaml"});
  EXPECT_EQ(facts.err, "gpuexpand: error: --output: yaml not in {text,json}\nRun 'gpuexpand facts --help' for the options.\n");
  auto both = run_gpuexpand({"-q", "validate", kLabSpec, "-v"});
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  auto quiet = run_gpuexpand({"validate", kLabSpec, "-q"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
}

// Options apply refuses are refused before the run is recorded: no run,
// no lock, no store row (the store is not even created).
TEST(Cli, ApplyRefusesBadRolloutOptionsBeforeRecordingARun) {
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--batch", "150%"}, {"--max-fail", "abc"}}) {
    const std::string state = make_temp_dir() + "/state.db";
    auto r = run_gpuexpand({"apply", "-y", kLabSpec, flag, value, "--state", state});
    EXPECT_EQ(r.exit_code, 1) << flag << " " << value << ": " << r.err;
    EXPECT_NE(r.err.find(flag + ": '" + value + "' is not a count or a percentage"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(state)) << flag << " " << value;
  }
}

// A store as apply and verify leave it: run 1 applied node-01 and node-02 (checks on both),
// run 2 verified node-01 again. `with_checks` false: the same runs before acceptance existed.
void seed_store(const std::string& state, bool with_checks) {
  auto opened = StateStore::open(state);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  StateStore& store = **opened;
  auto begin = [&](const std::string& command, std::vector<std::string> nodes, const std::string& at) -> int64_t {
    RunRecord run;
    run.command = command;
    run.spec_file = "lab.yaml";
    run.started_at = at;
    run.holder = "root@elsewhere.invalid pid 1";
    run.nodes = std::move(nodes);
    auto begun = store.begin_run(run);
    EXPECT_TRUE(begun.ok() && std::holds_alternative<int64_t>(*begun));
    return begun.ok() && std::holds_alternative<int64_t>(*begun) ? std::get<int64_t>(*begun) : 0;
  };
  auto check = [](int64_t run, const char* node, const char* name, const char* status, const char* detail) {
    return CheckResult{run, node, name, *parse_check_status(status), detail, 2.5, "2026-11-30T03:30:00Z"};
  };
  int64_t apply = begin("apply", {"node-01", "node-02"}, "2026-11-30T03:00:00Z");
  for (const char* node : {"node-01", "node-02"}) {
    PhaseResult base{apply, node, "os-init", PhaseStatus::Succeeded, 2, "t0", "t1", 4.0, "", ""};
    ASSERT_TRUE(store.record_phase(base).ok());
  }
  if (with_checks) {
    ASSERT_TRUE(store
                    .record_checks({check(apply, "node-01", "scheduler", "pass", "node idle in partition gpu"),
                                    check(apply, "node-01", "gpu", "fail", "7 GPUs, expected 8"),
                                    check(apply, "node-01", "network", "skip", "no RDMA hardware (rdma.kind none)"),
                                    check(apply, "node-01", "storage", "pass", "412 MB/s write")})
                    .ok());
    ASSERT_TRUE(store
                    .record_checks({check(apply, "node-02", "scheduler", "pass", ""),
                                    check(apply, "node-02", "gpu", "pass", "8 GPUs")})
                    .ok());
  }
  ASSERT_TRUE(store.finish_run(apply, RunStatus::Failed, 3, "2026-11-30T03:40:00Z").ok());
  int64_t verify = begin("verify", {"node-01"}, "2026-11-30T04:00:00Z");
  if (with_checks) {
    ASSERT_TRUE(store
                    .record_checks({check(verify, "node-01", "gpu", "fail", "6 GPUs, expected 8"),
                                    check(verify, "node-01", "monitoring", "pass", "")})
                    .ok());
  }
  ASSERT_TRUE(store.finish_run(verify, RunStatus::Failed, 3, "2026-11-30T04:01:00Z").ok());
}

TEST(Cli, StatusWithoutChecksShowsNoAcceptance) {
  const std::string state = make_temp_dir() + "/state.db";
  seed_store(state, false);
  auto status = run_gpuexpand({"status", "--state", state});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out.find("Acceptance checks"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("\n  node-02  succeeded  "), std::string::npos) << status.out;
  auto json = nlohmann::json::parse(run_gpuexpand({"status", "--state", state, "-o", "json"}).out);
  EXPECT_FALSE(json.contains("checks")) << json.dump();
  EXPECT_EQ(json["latest"].size(), 2u);
  auto one = run_gpuexpand({"status", "--state", state, "--run", "1"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out,
            "Run 1: apply lab.yaml, failed (exit 3), 2026-11-30T03:00:00Z .. 2026-11-30T03:40:00Z\n"
            "  NODE     PHASE    STATUS     CHANGES  SECONDS  DETAIL\n"
            "  node-01  os-init  succeeded  2        4.0\n"
            "  node-02  os-init  succeeded  2        4.0\n"
            "Remote commands (0):\n");
  auto one_json = nlohmann::json::parse(run_gpuexpand({"status", "--state", state, "--run", "1", "-o", "json"}).out);
  EXPECT_FALSE(one_json.contains("checks")) << one_json.dump();
}

// status --limit: only the selected nodes' rows, as on every command that
// takes nodes (the spec names the racks and groups).
TEST(Cli, StatusLimitShowsOnlyTheSelectedNodes) {
  const std::string state = make_temp_dir() + "/state.db";
  seed_store(state, true);
  auto all = run_gpuexpand({"status", kLabSpec, "--state", state, "-o", "json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(nlohmann::json::parse(all.out)["checks"].size(), 2u);
  auto limited = run_gpuexpand({"status", kLabSpec, "--state", state, "--limit", "node-02", "-o", "json"});
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  const auto doc = nlohmann::json::parse(limited.out);
  std::set<std::string> nodes;
  for (const auto& r : doc["latest"]) nodes.insert(r["node"].get<std::string>());
  for (const auto& [node, _] : doc["checks"].items()) nodes.insert(node);
  EXPECT_EQ(nodes, std::set<std::string>{"node-02"}) << limited.out;
  auto run = run_gpuexpand({"status", kLabSpec, "--state", state, "--run", "1", "--limit", "node-02"});
  EXPECT_EQ(run.out.find("node-01"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("node-02"), std::string::npos) << run.out;
  auto no_spec = run_gpuexpand({"status", "--state", state, "--limit", "node-02"});
  EXPECT_EQ(no_spec.err, "gpuexpand: error: status --limit needs SPEC (the racks and groups it names)\n");
}

TEST(Cli, StatusShowsTheLatestAcceptanceChecksPerNode) {
  const std::string state = make_temp_dir() + "/state.db";
  seed_store(state, true);
  auto status = run_gpuexpand({"status", "--state", state});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  ASSERT_NE(status.out.find("\nLatest state per node and phase:\n"), std::string::npos) << status.out;
  // The newest run's result per check: node-01's gpu from run 2, the rest from run 1.
  const std::string acceptance =
      "\n\nAcceptance checks, latest per node:\n"
      "  node-01  3 passed, 1 failed, 1 skipped (runs 1, 2)\n"
      "    FAIL gpu: 6 GPUs, expected 8\n"
      "    skip network: no RDMA hardware (rdma.kind none)\n"
      "  node-02  2 passed, 0 failed, 0 skipped (run 1)\n";
  ASSERT_GE(status.out.size(), acceptance.size());
  EXPECT_EQ(status.out.substr(status.out.size() - acceptance.size()), acceptance) << status.out;

  auto json = run_gpuexpand({"status", "--state", state, "-o", "json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  auto doc = nlohmann::json::parse(json.out);
  ASSERT_TRUE(doc.contains("checks")) << json.out;
  EXPECT_EQ(doc["checks"].size(), 2u);
  std::vector<std::string> node01;
  for (const auto& c : doc["checks"]["node-01"]) {
    node01.push_back(c["check"].get<std::string>() + "=" + c["status"].get<std::string>() + "@" +
                     std::to_string(c["run_id"].get<int64_t>()));
  }
  EXPECT_EQ(node01, (std::vector<std::string>{"scheduler=pass@1", "network=skip@1", "storage=pass@1", "gpu=fail@2",
                                              "monitoring=pass@2"}));
  EXPECT_EQ(doc["checks"]["node-02"][1],
            nlohmann::json::parse(R"({"run_id": 1, "node": "node-02", "check": "gpu", "status": "pass",
                                      "detail": "8 GPUs", "seconds": 2.5, "recorded_at": "2026-11-30T03:30:00Z"})"));

  auto one = run_gpuexpand({"status", "--state", state, "--run", "2"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out,
            "Run 2: verify lab.yaml, failed (exit 3), 2026-11-30T04:00:00Z .. 2026-11-30T04:01:00Z\n"
            "  NODE  PHASE  STATUS  CHANGES  SECONDS  DETAIL\n"
            "Acceptance checks:\n"
            "  NODE     CHECK       STATUS  SECONDS  DETAIL\n"
            "  node-01  gpu         fail    2.5      6 GPUs, expected 8\n"
            "  node-01  monitoring  pass    2.5\n"
            "Remote commands (0):\n");
  auto one_json = run_gpuexpand({"status", "--state", state, "--run", "1", "-o", "json"});
  EXPECT_EQ(one_json.exit_code, 0) << one_json.err;
  auto run_doc = nlohmann::json::parse(one_json.out);
  ASSERT_EQ(run_doc["checks"].size(), 6u) << one_json.out;
  EXPECT_EQ(run_doc["checks"][1]["check"], "gpu");
  EXPECT_EQ(run_doc["checks"][1]["status"], "fail");
  EXPECT_EQ(run_doc["checks"][1]["detail"], "7 GPUs, expected 8");
  EXPECT_EQ(run_doc["checks"][5]["node"], "node-02");
}

TEST(Cli, ValidateExamples) {
  auto r = run_gpuexpand({"validate", kLabSpec, kH200Spec});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kLabSpec + ": valid (6 nodes)\n" + kH200Spec + ": valid (128 nodes in 4 racks)\n");
}

TEST(Cli, ValidateBrokenSpecPrintsLocatedErrorsWithTheLine) {
  const std::string dir = make_temp_dir();
  const std::string spec = dir + "/broken.yaml";
  write_file(spec, "apiVersion: gpuexpand/v1\ncluster:\n  name: lab\nssh:\n  becme: sudo\nnodes:\n  - hosts: n[1-3]\n"
                   "    addresses: 10.0.0.[1-2]\n");
  auto r = run_gpuexpand({"validate", spec});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, spec + ":5:3: unknown key 'becme' in ssh (did you mean 'become'?)\n"
                          "    becme: sudo\n"
                          "    ^\n" +
                       spec + ":8:16: nodes[0]: hosts 'n[1-3]' has 3 names but addresses '10.0.0.[1-2]' has 2\n"
                              "      addresses: 10.0.0.[1-2]\n"
                              "                 ^\n" +
                       "gpuexpand: error: " + spec + ": 2 errors\n");
}

TEST(Cli, ValidateJsonOutput) {
  const std::string dir = make_temp_dir();
  const std::string spec = dir + "/broken.yaml";
  write_file(spec, "apiVersion: gpuexpand/v1\ncluster: {name: Lab}\nnodes: [{name: n1}]\n");
  auto r = run_gpuexpand({"validate", "--output", "json", spec});
  EXPECT_EQ(r.exit_code, 1);
  auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0]["valid"], false);
  EXPECT_EQ(report[0]["errors"][0]["line"], 2);
  EXPECT_EQ(report[0]["errors"][0]["column"], 17);
  EXPECT_EQ(report[0]["errors"][0]["message"],
            "cluster.name: 'Lab' must be lowercase letters, digits and '-', at most 63");
}

TEST(Cli, ValidateMissingFile) {
  auto r = run_gpuexpand({"validate", "/nonexistent.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent.yaml"), std::string::npos) << r.err;
}

TEST(Cli, InventoryTable) {
  auto r = run_gpuexpand({"inventory", kLabSpec, "--limit", "node-[02-03]"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "NAME     ADDRESS      RACK  GROUPS\n"
            "node-02  198.18.0.12  -     -\n"
            "node-03  198.18.0.13  -     -\n"
            "2 nodes\n");
}

TEST(Cli, InventoryHostlistFoldsTheSelection) {
  auto r = run_gpuexpand({"inventory", kH200Spec, "--limit", "rack=r01,rack=r02", "--limit", "!gpu-node-013", "--hostlist"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gpu-node-[001-012,014-064]\n");
}

TEST(Cli, InventoryJson) {
  auto r = run_gpuexpand({"inventory", kH200Spec, "--limit", "gpu-node-100", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["count"], 1);
  EXPECT_EQ(doc["nodes"][0]["name"], "gpu-node-100");
  EXPECT_EQ(doc["nodes"][0]["rack"], "r04");
}

TEST(Cli, InventoryUnknownLimit) {
  auto r = run_gpuexpand({"inventory", kH200Spec, "--limit", "rack=r5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuexpand: error: --limit: no node is in rack 'r5' (did you mean 'r01'?)\n");
}

TEST(Cli, PlanFoldsIdenticalNodesAndSummarises) {
  auto r = run_gpuexpand({"plan", kH200Spec, "--facts", kH200Facts});
  EXPECT_EQ(r.exit_code, 1) << "one node unreachable: the plan is incomplete";
  EXPECT_EQ(r.err, "gpuexpand: error: the plan is incomplete: 1 unreachable, 0 failed to plan\n");
  // Racks 1-2 and racks 3 (with 077 unreachable) differ only in the time
  // servers their chrony.conf names: said so, not folded as one plan.
  EXPECT_NE(r.out.find("gpu-node-[001-064] (64 nodes, same plan;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ngpu-node-[065-076,078-096] (31 nodes): the changes of gpu-node-[001-064], writing other "
                       "content to /etc/chrony/chrony.conf\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    ~ package nvidia-driver: 535.129.03-1 installed, 550.90.07 wanted\n"), std::string::npos);
  EXPECT_NE(r.out.find("gpu-node-077: unreachable: connection timed out after 10 s\n"), std::string::npos);
  // The part CI greps for, then what the changes add up to: rack 4 has no
  // driver yet, so only racks 1-3 (95 reachable nodes) reboot.
  EXPECT_NE(r.out.find("\n128 nodes: 127 to change, 0 unchanged, 1 unreachable ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" changes; 95 nodes reboot)\n"), std::string::npos) << r.out;
}

TEST(Cli, PlanDetailedExitcode) {
  auto changes = run_gpuexpand({"plan", kLabSpec, "--facts", kLabFacts, "--detailed-exitcode"});
  EXPECT_EQ(changes.exit_code, 2) << changes.err;
  auto plain = run_gpuexpand({"plan", kLabSpec, "--facts", kLabFacts});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
}

TEST(Cli, PlanSavesAValidPlanDocument) {
  const std::string dir = make_temp_dir();
  auto r = run_gpuexpand({"plan", kLabSpec, "--facts", kLabFacts, "--out", dir + "/plan.json", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto saved = nlohmann::json::parse(read_file(dir + "/plan.json"));
  EXPECT_EQ(saved["format_version"], 2);
  EXPECT_EQ(saved["summary"]["to_change"], 6);
  EXPECT_EQ(nlohmann::json::parse(r.out)["nodes"], saved["nodes"]);
  // Six bare lab nodes, one build: one shared entry of phases.
  EXPECT_EQ(saved["plans"].size(), 1u);
  EXPECT_EQ(saved["plans"][0]["nodes"], "node-[01-06]");
  // A plan an older gpuexpand saved is refused, not misread.
  saved["format_version"] = 1;
  write_file(dir + "/old.json", saved.dump());
  auto old = run_gpuexpand({"apply", "-y", dir + "/old.json"});
  EXPECT_EQ(old.exit_code, 1);
  EXPECT_EQ(old.err, "gpuexpand: error: " + dir + "/old.json: a plan of format 1, and this gpuexpand applies format 2; "
                     "plan again\n");
}

TEST(Cli, PlanWithBrokenFacts) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/facts.json", "{\"schema_version\": 1,\n \"nodes\": {\"node-01\": {\"schema_version\": 1, "
                                  "\"node\": \"node-01\", \"hostname\": 7}}}\n");
  auto r = run_gpuexpand({"plan", kLabSpec, "--facts", dir + "/facts.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuexpand: error: invalid facts file\n" + dir + "/facts.json: nodes.node-01: hostname: expected a "
                   "string, got integer 7\n");
  write_file(dir + "/bad.json", "{\"schema_version\": 1,\n  \"nodes\": {,}}\n");
  auto syntax = run_gpuexpand({"plan", kLabSpec, "--facts", dir + "/bad.json"});
  EXPECT_EQ(syntax.exit_code, 1);
  EXPECT_NE(syntax.err.find(dir + "/bad.json:2:"), std::string::npos) << syntax.err;
}

}  // namespace
}  // namespace gpuexpand::testing

namespace gpuexpand::testing {
namespace {

// Every command's --help ends with examples, the top level's too.
TEST(Cli, EveryHelpHasExamples) {
  std::vector<std::string> commands = {""};
  const auto top = run_gpuexpand({"--help"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  // The commands as --help lists them: "  name   description" under "Subcommands:".
  std::istringstream lines(top.out.substr(top.out.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_GT(commands.size(), 10u) << top.out;
  for (const auto& command : commands) {
    const auto help = command.empty() ? top : run_gpuexpand({command, "--help"});
    EXPECT_NE(help.out.find("Examples:\n  gpuexpand " + (command.empty() ? std::string() : command + " ")), std::string::npos)
        << "gpuexpand " << command << " --help has no examples:\n" << help.out;
  }
}

// Conventions operators expect: global flags anywhere on the line, a typo
// of a command gets "did you mean", --color says when to colour.
TEST(Cli, GlobalFlagsAnywhereAndCommandTypos) {
  const std::string lab_spec = source_path("examples/lab-rack.yaml");
  const std::string lab_facts = source_path("tests/fixtures/facts/lab-bare.json");
  auto after = run_gpuexpand({"plan", lab_spec, "--facts", lab_facts, "-v"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.out.find("  [hostname]\n"), std::string::npos) << "-v after the command names each change's step";
  auto typo = run_gpuexpand({"plna", lab_spec});
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_EQ(typo.err, "gpuexpand: error: unknown command 'plna' (did you mean 'plan'?)\nRun 'gpuexpand --help' for the commands.\n");
  auto colour = run_gpuexpand({"--color", "always", "plan", lab_spec, "--facts", lab_facts});
  EXPECT_NE(colour.out.find("\033[33m~\033[0m hostname"), std::string::npos) << colour.out;
  auto plain = run_gpuexpand({"plan", lab_spec, "--facts", lab_facts, "--color", "never"});
  EXPECT_EQ(plain.out.find("\033["), std::string::npos);
  // On a terminal (script(1) gives it one) auto colours, unless NO_COLOR is
  // set (no-color.org); an explicit --color always still colours.
  const auto on_tty = [&](const std::string& env, const std::string& flags) {
    const std::string out = make_temp_dir() + "/tty.out";
    const std::string command = env + " " + std::string(GPUEXPAND_BINARY) + " plan " + lab_spec + " --facts " + lab_facts +
                                " " + flags;
    const std::string line = "script -qec '" + command + "' " + out + " >/dev/null 2>&1 </dev/null";
    EXPECT_EQ(std::system(line.c_str()), 0) << line;
    return read_file(out);
  };
  EXPECT_NE(on_tty("env", "").find("\033[33m~\033[0m hostname"), std::string::npos) << "auto on a terminal colours";
  EXPECT_EQ(on_tty("env NO_COLOR=1", "").find("\033[33m"), std::string::npos) << "NO_COLOR";
  EXPECT_NE(on_tty("env NO_COLOR=1", "--color always").find("\033[33m~"), std::string::npos);
  auto phase = run_gpuexpand({"apply", "-y", lab_spec, "--until", "scheduer"});
  EXPECT_EQ(phase.exit_code, 1);
  EXPECT_NE(phase.err.find("no phase 'scheduer' (did you mean 'scheduler'?); the phases: os-init, gpu-driver, rdma, "
                           "storage, monitoring, scheduler, acceptance"),
            std::string::npos)
      << phase.err;
}

// A spec's enum value in another case or with a suffix gets its suggestion;
// a tab in the indentation is named as such.
TEST(Cli, SpecMessagesWhereTheyWereWeakest) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/roce.yaml", "apiVersion: gpuexpand/v1\ncluster: {name: t}\ndefaults:\n  network:\n"
                                 "    rdma: {kind: RoCEv2}\nnodes:\n  - name: n1\n");
  auto roce = run_gpuexpand({"validate", dir + "/roce.yaml"});
  EXPECT_EQ(roce.exit_code, 1);
  EXPECT_NE(roce.err.find("'RoCEv2' is not one of infiniband, roce, none (did you mean 'roce'?)"), std::string::npos)
      << roce.err;
  // (A file name without "tab" in it: the message must say it.)
  write_file(dir + "/indent.yaml", "apiVersion: gpuexpand/v1\ncluster:\n  \tname: t\nnodes:\n  - name: n1\n");
  auto tab = run_gpuexpand({"validate", dir + "/indent.yaml"});
  EXPECT_EQ(tab.exit_code, 1);
  EXPECT_NE(tab.err.find(dir + "/indent.yaml:3:3: YAML syntax error: a tab in the indentation (YAML indents with spaces only)"),
            std::string::npos)
      << tab.err;
  // A tab inside a block scalar's text is text, not indentation.
  write_file(dir + "/text.yaml", "apiVersion: gpuexpand/v1\ncluster:\n  name: t\n  description: |\n    a\tb\nnodes:\n  - name: n1\n");
  EXPECT_EQ(run_gpuexpand({"validate", dir + "/text.yaml"}).exit_code, 0);
  // ... and does not hide a real error further down.
  write_file(dir + "/later.yaml", "apiVersion: gpuexpand/v1\ncluster:\n  name: t\n  description: |\n    a\n    \tb\n"
                                  "nodes:\n  - name: n1\n    rack: [r1\n");
  auto later = run_gpuexpand({"validate", dir + "/later.yaml"});
  EXPECT_EQ(later.exit_code, 1);
  EXPECT_EQ(later.err.find("a tab in the indentation"), std::string::npos) << later.err;
}

// Shell completion and the manual page are generated from the command
// line definition: the copies in the tree must be what the binary prints
// now (regenerate: gpuexpand completion bash > scripts/completion/gpuexpand.bash,
// gpuexpand completion zsh > scripts/completion/_gpuexpand, gpuexpand man >
// docs/man/gpuexpand.1, gpuexpand man --markdown > docs/cli.md), and they must work.
TEST(Cli, CompletionAndManPageInTheTreeAreWhatTheBinaryGenerates) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> generated = {
      {{"completion", "bash"}, "scripts/completion/gpuexpand.bash"},
      {{"completion", "zsh"}, "scripts/completion/_gpuexpand"},
      {{"man"}, "docs/man/gpuexpand.1"},
      {{"man", "--markdown"}, "docs/cli.md"}};
  for (const auto& [args, file] : generated) {
    const auto r = run_gpuexpand(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // EXPECT_TRUE, not EXPECT_EQ: two whole man pages in the log help no one.
    EXPECT_TRUE(r.out == read_file(source_path(file)))
        << file << " is stale: regenerate it with gpuexpand " << args.front() << (args.size() > 1 ? " " + args[1] : "")
        << " > " << file;
  }
  // bash completes a command and a command's options from the file.
  const std::string dir = make_temp_dir();
  write_file(dir + "/complete.sh", "source " + source_path("scripts/completion/gpuexpand.bash") +
                                       "\ncomplete_words() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _gpuexpand; "
                                       "printf '%s ' \"${COMPREPLY[@]}\"; echo; }\n"
                                       "complete_words gpuexpand pla\ncomplete_words gpuexpand plan spec.yaml --consis\n"
                                       "complete_words gpuexpand verify --fault\n");
  const std::string out_file = dir + "/out.txt";
  ASSERT_EQ(std::system(("bash " + dir + "/complete.sh > " + out_file + " 2>&1").c_str()), 0) << read_file(out_file);
  EXPECT_EQ(read_file(out_file), "plan \n--consistency \n--fault-drill \n");
  // groff (scripts/setup installs it) reads the page without a warning.
  ASSERT_EQ(std::system(("groff -man -Tutf8 -ww -z " + source_path("docs/man/gpuexpand.1") + " > " + out_file + " 2>&1").c_str()), 0)
      << read_file(out_file);
  EXPECT_EQ(read_file(out_file), "");
}

// cluster.reference: the planned nodes as they will be after apply against
// a node in service, from recorded facts. The recorded gpu-node-001 is bare
// (driver 535), so the nodes planned to 550 differ from it exactly there
// and in what else the plan changes; --consistency strict makes that exit 1.
TEST(Cli, PlanReportsDifferencesFromTheReferenceNodes) {
  std::string spec = read_file(source_path("examples/h200-expansion.yaml"));
  const std::string entry = "  - hosts: gpu-node-[001-032]\n    addresses: 10.40.1.[1-32]\n";
  ASSERT_NE(spec.find(entry), std::string::npos);
  spec.replace(spec.find(entry), entry.size(), "  - hosts: gpu-node-[002-032]\n    addresses: 10.40.1.[2-32]\n");
  const std::string cluster = "  name: train-east\n";
  spec.replace(spec.find(cluster), cluster.size(),
               cluster + "  reference:\n    nodes:\n      - name: gpu-node-001\n        address: 10.40.1.1\n"
                         "        rack: r01\n        groups: [h200, ib-ndr]\n");
  const std::string dir = make_temp_dir();
  write_file(dir + "/spec.yaml", spec);
  auto warn = run_gpuexpand({"plan", dir + "/spec.yaml", "--facts", kH200Facts, "--limit", "gpu-node-00[2-3]", "--state",
                             dir + "/state.db"});
  EXPECT_EQ(warn.exit_code, 0) << warn.err;
  EXPECT_NE(warn.out.find("Consistency with the reference nodes gpu-node-001 ("), std::string::npos) << warn.out;
  EXPECT_NE(warn.out.find("  gpu-node-[002-003]: gpus.driver_version 550.90.07, reference 535.129.03 (gpu-node-001)\n"),
            std::string::npos)
      << warn.out;
  EXPECT_NE(warn.out.find("  2 of 2 nodes differ from the reference\n"), std::string::npos) << warn.out;
  auto strict = run_gpuexpand({"plan", dir + "/spec.yaml", "--facts", kH200Facts, "--limit", "gpu-node-00[2-3]",
                               "--consistency", "strict", "-o", "json", "--state", dir + "/state.db"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_EQ(strict.err, "gpuexpand: error: the nodes would not match the reference nodes (--consistency strict)\n");
  const auto doc = nlohmann::json::parse(strict.out);
  EXPECT_EQ(doc["consistency"]["reference_nodes"], "gpu-node-001");
  EXPECT_EQ(doc["consistency"]["nodes"], "gpu-node-[002-003]");
  EXPECT_FALSE(doc["consistency"]["consistent"].get<bool>());
  // facts --diff names a reference node as it names a node.
  auto diff = run_gpuexpand({"facts", dir + "/spec.yaml", "--facts", kH200Facts, "--diff", "gpu-node-001", "gpu-node-002",
                             "-o", "json", "--state", dir + "/state.db"});
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  const auto facts_doc = nlohmann::json::parse(diff.out);
  EXPECT_EQ(facts_doc["a"], "gpu-node-001");
  EXPECT_EQ(facts_doc["b"], "gpu-node-002");
  auto typo = run_gpuexpand({"facts", dir + "/spec.yaml", "--facts", kH200Facts, "--diff", "gpu-node-00", "gpu-node-002"});
  EXPECT_EQ(typo.err.rfind("gpuexpand: error: --diff gpu-node-00: gpu-node-00 is not a node of this spec", 0), 0u) << typo.err;
}

}  // namespace
}  // namespace gpuexpand::testing
