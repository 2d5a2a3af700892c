// The per-node log of a run: what is written, in what shape, what is kept
// out of it (stdin, a sensitive command's output), how long output is cut,
// how `gpuexpand logs` filters it, and that old runs' logs are pruned.

#include "gpuexpand/exec/run_log.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_support.hpp"

namespace gpuexpand {
namespace {
namespace fs = std::filesystem;

std::string fixed_now() { return "2026-12-02T23:10:01Z"; }

class RunLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpuexpand-runlog-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    store_ = dir_ + "/.gpuexpand/state.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string log_of(int64_t run, const std::string& node) {
    return testing::read_file(dir_ + "/.gpuexpand/runs/" + std::to_string(run) + "/" + node + ".log");
  }
  static AuditRecord record(std::string node, std::string command, int exit_code, std::string out = "",
                            std::string err = "") {
    AuditRecord r;
    r.node = std::move(node);
    r.command = std::move(command);
    r.exit_code = exit_code;
    r.failure = exit_code == 0 ? FailureKind::None : FailureKind::CommandFailed;
    r.duration = std::chrono::milliseconds(120);
    r.out = std::move(out);
    r.err = std::move(err);
    return r;
  }
  std::string dir_, store_;
};

TEST_F(RunLogTest, EntriesPerNodeWithOutputMarkedAndStdinOnlyByDigest) {
  RunLog log(store_, 7, &fixed_now);
  ASSERT_EQ(log.error(), "");
  log.phase_started("node-03", "os-init");
  AuditRecord script = record("node-03", "sh -s", 0, "line one\nline two\n");
  script.stdin_bytes = 12;
  script.stdin_sha256 = "abc123";
  log.command(script);
  log.command(record("node-03", "apt-get install -y -q no-such-package-gx\necho second line", 100, "",
                     "E: Unable to locate package no-such-package-gx\n"));
  AuditRecord lost = record("node-03", "systemctl restart chrony", -1);
  lost.failure = FailureKind::ConnectionLost;
  lost.message = "node-03 (198.18.0.13): the connection was lost";
  log.command(lost);
  log.phase_finished({"node-03", "os-init", PhaseStatus::RolledBack, 0, 2.5, "base-packages", "exited 100"});
  log.checks("node-03", {CheckResult{0, "node-03", "gpu", CheckStatus::Pass, "8 x NVIDIA H200", 0, ""}});
  log.node_finished("node-03", NodeResult::Failed, "node-03: phase os-init");
  log.command(record("node-04", "true", 0));

  EXPECT_EQ(log_of(7, "node-03"),
            "2026-12-02T23:10:01Z phase os-init: started\n"
            "2026-12-02T23:10:01Z $ sh -s\n"
            "  stdin: 12 bytes, sha256 abc123\n"
            "  | line one\n"
            "  | line two\n"
            "  = exit 0 (0.12 s)\n"
            "2026-12-02T23:10:01Z $ apt-get install -y -q no-such-package-gx\n"
            "  > echo second line\n"
            "  ! E: Unable to locate package no-such-package-gx\n"
            "  = exit 100 (0.12 s)\n"
            "2026-12-02T23:10:01Z $ systemctl restart chrony\n"
            "  = connection lost (0.12 s): node-03 (198.18.0.13): the connection was lost\n"
            "2026-12-02T23:10:01Z phase os-init: FAILED, rolled back (2.50 s) at step base-packages: exited 100\n"
            "2026-12-02T23:10:01Z check gpu: pass: 8 x NVIDIA H200\n"
            "2026-12-02T23:10:01Z node: failed: node-03: phase os-init\n");
  EXPECT_EQ(log_of(7, "node-04"), "2026-12-02T23:10:01Z $ true\n  = exit 0 (0.12 s)\n");
}

TEST_F(RunLogTest, LongOutputKeepsItsEnd) {
  RunLog log(store_, 1, &fixed_now);
  std::string out;
  while (out.size() <= RunLog::kOutputKept + 100) out += "progress line " + std::to_string(out.size()) + "\n";
  out += "E: the error at the end\n";
  log.command(record("n1", "apt-get update", 100, out));
  const std::string text = log_of(1, "n1");
  EXPECT_NE(text.find(" bytes before this not kept)\n"), std::string::npos);
  EXPECT_NE(text.find("  | E: the error at the end\n  = exit 100"), std::string::npos);
  EXPECT_LT(text.size(), RunLog::kOutputKept * 13 / 10);  // the kept bytes, each line marked "  | "
  EXPECT_EQ(text.find("  | progress line 0\n"), std::string::npos);
}

TEST_F(RunLogTest, FilterByPhaseAndFailures) {
  const std::string log =
      "T1 phase os-init: started\n"
      "T1 $ hostnamectl set-hostname n1\n"
      "  = exit 0 (0.01 s)\n"
      "T1 phase os-init: changed (1 change, 0.20 s)\n"
      "T2 phase gpu-driver: started\n"
      "T2 $ apt-get install -y nvidia-driver-550\n"
      "  | Reading package lists...\n"
      "  ! E: held packages\n"
      "  = exit 100 (1.00 s)\n"
      "T2 $ sh -s\n"
      "  | restored\n"
      "  = exit 0 (0.10 s)\n"
      "T2 phase gpu-driver: FAILED, rolled back (1.50 s) at step driver-package: exited 100\n"
      "T3 check gpu: fail: 7 GPUs, expected 8\n"
      "T3 check mtu: pass: 9000\n"
      "T4 node: failed: n1: phase gpu-driver\n";
  EXPECT_EQ(filter_run_log(log, "", false), log);
  EXPECT_EQ(filter_run_log(log, "os-init", false),
            "T1 phase os-init: started\n"
            "T1 $ hostnamectl set-hostname n1\n"
            "  = exit 0 (0.01 s)\n"
            "T1 phase os-init: changed (1 change, 0.20 s)\n");
  EXPECT_EQ(filter_run_log(log, "", true),
            "T2 $ apt-get install -y nvidia-driver-550\n"
            "  | Reading package lists...\n"
            "  ! E: held packages\n"
            "  = exit 100 (1.00 s)\n"
            "T2 phase gpu-driver: FAILED, rolled back (1.50 s) at step driver-package: exited 100\n"
            "T3 check gpu: fail: 7 GPUs, expected 8\n"
            "T4 node: failed: n1: phase gpu-driver\n");
  EXPECT_EQ(filter_run_log(log, "os-init", true), "");
  // Output that looks like an entry is still output: it is indented.
  EXPECT_EQ(filter_run_log("T1 $ echo\n  | T9 phase x: started\n  = exit 0 (0.00 s)\n", "x", false), "");
}

TEST_F(RunLogTest, KeepsTheNewestRunsOnly) {
  for (int run = 1; run <= RunLog::kRunsKept + 5; ++run) fs::create_directories(RunLog::directory(store_, run));
  fs::create_directories(RunLog::runs_directory(store_) + "/notes");  // not a run: left alone
  RunLog log(store_, RunLog::kRunsKept + 6, &fixed_now);
  EXPECT_FALSE(fs::exists(RunLog::directory(store_, 6)));
  EXPECT_TRUE(fs::exists(RunLog::directory(store_, 7)));
  EXPECT_TRUE(fs::exists(RunLog::directory(store_, RunLog::kRunsKept + 6)));
  EXPECT_TRUE(fs::exists(RunLog::runs_directory(store_) + "/notes"));
  size_t runs = 0;
  for (const auto& entry : fs::directory_iterator(RunLog::runs_directory(store_))) runs += entry.path().filename() != "notes";
  EXPECT_EQ(runs, static_cast<size_t>(RunLog::kRunsKept));
}

TEST_F(RunLogTest, AFolderItCannotMakeIsOneErrorAndNoCrash) {
  fs::create_directories(dir_ + "/.gpuexpand");
  std::ofstream(dir_ + "/.gpuexpand/runs") << "a file where the folder goes";
  RunLog log(store_, 3, &fixed_now);
  EXPECT_EQ(log.error().rfind("the run's logs are not kept: cannot make " + dir_ + "/.gpuexpand/runs/3: ", 0), 0u)
      << log.error();
  log.command(record("n1", "true", 0));  // nothing written, nothing thrown
  EXPECT_FALSE(fs::exists(dir_ + "/.gpuexpand/runs/3"));
}

}  // namespace
}  // namespace gpuexpand
