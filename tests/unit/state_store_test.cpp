#include "gpuexpand/state/state_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpuexpand/exec/store_journal.hpp"
#include "gpuexpand/exec/stored_package_answers.hpp"

namespace gpuexpand {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Helpers: a fresh directory per test, raw SQL to inspect (or forge) the file.

std::string hostname() {
  std::array<char, 256> name{};
  gethostname(name.data(), name.size() - 1);
  return name.data();
}

// Runs `sql` on the file with plain SQLite; every row's columns joined by '|', rows by '\n'.
std::string sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string out;
  char* message = nullptr;
  int rc = sqlite3_exec(
      db, statement.c_str(),
      [](void* sink, int columns, char** values, char**) {
        auto& text = *static_cast<std::string*>(sink);
        if (!text.empty()) text += "\n";
        for (int i = 0; i < columns; ++i) text += (i ? "|" : "") + std::string(values[i] ? values[i] : "NULL");
        return 0;
      },
      &out, &message);
  EXPECT_EQ(rc, SQLITE_OK) << statement << ": " << (message ? message : "");
  sqlite3_free(message);
  sqlite3_close(db);
  return out;
}

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpuexpand-state-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/.gpuexpand/state.db";  // the parent does not exist yet: open creates it
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::unique_ptr<StateStore> open() {
    auto store = StateStore::open(path_);
    EXPECT_TRUE(store.ok()) << store.error().message;
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static RunRecord apply_run(std::vector<std::string> nodes, std::string started = "2026-11-30T03:00:00Z",
                             std::string holder = "alice@elsewhere.invalid pid 4242") {
    RunRecord run;
    run.command = "apply";
    run.spec_file = "cluster.yaml";
    run.spec_sha256 = "aa11";
    run.plan_sha256 = "bb22";
    run.started_at = std::move(started);
    run.holder = std::move(holder);
    run.nodes = std::move(nodes);
    return run;
  }

  // Begins a run that must not conflict; returns its id.
  static int64_t begin(StateStore& store, RunRecord run) {
    auto begun = store.begin_run(std::move(run));
    EXPECT_TRUE(begun.ok()) << begun.error().message;
    if (!begun.ok()) return 0;
    EXPECT_TRUE(std::holds_alternative<int64_t>(*begun)) << describe(std::get<LockConflict>(*begun));
    return std::holds_alternative<int64_t>(*begun) ? std::get<int64_t>(*begun) : 0;
  }

  static LockConflict conflict(StateStore& store, RunRecord run) {
    auto begun = store.begin_run(std::move(run));
    EXPECT_TRUE(begun.ok()) << begun.error().message;
    if (!begun.ok()) return {};
    EXPECT_TRUE(std::holds_alternative<LockConflict>(*begun)) << "no conflict";
    return std::holds_alternative<LockConflict>(*begun) ? std::get<LockConflict>(*begun) : LockConflict{};
  }

  static PhaseResult phase(int64_t run_id, std::string node, std::string name, PhaseStatus status, int changes = 0) {
    PhaseResult result;
    result.run_id = run_id;
    result.node = std::move(node);
    result.phase = std::move(name);
    result.status = status;
    result.changes = changes;
    result.started_at = "2026-11-30T03:00:01Z";
    result.finished_at = status == PhaseStatus::Running ? "" : "2026-11-30T03:00:04Z";
    result.duration_s = 3.25;
    return result;
  }

  static CheckResult check(int64_t run_id, std::string node, std::string name, std::string status,
                           std::string detail = "") {
    CheckResult result;
    result.run_id = run_id;
    result.node = std::move(node);
    result.check = std::move(name);
    result.status = parse_check_status(status).value_or(CheckStatus::Fail);
    result.detail = std::move(detail);
    result.seconds = 1.5;
    result.recorded_at = "2026-11-30T03:30:00Z";
    return result;
  }

  std::string dir_;
  std::string path_;
};

// "run/node/check=status" for compact exact comparisons.
std::vector<std::string> summary(const std::vector<CheckResult>& results) {
  std::vector<std::string> out;
  for (const auto& r : results) out.push_back(std::to_string(r.run_id) + "/" + r.node + "/" + r.check + "=" + std::string(check_status_name(r.status)));
  return out;
}

// "run/node/phase=status" for compact exact comparisons.
std::vector<std::string> summary(const std::vector<PhaseResult>& results) {
  std::vector<std::string> out;
  for (const auto& r : results) {
    out.push_back(std::to_string(r.run_id) + "/" + r.node + "/" + r.phase + "=" + to_string(r.status));
  }
  return out;
}

// A pid that existed and is gone: a child that exited and was reaped.
pid_t dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// ---------------------------------------------------------------------------

TEST(StateStatus, NamesRoundTrip) {
  EXPECT_EQ(to_string(RunStatus::Interrupted), "interrupted");
  EXPECT_EQ(to_string(PhaseStatus::RolledBack), "rolled-back");
  for (auto status : {RunStatus::Running, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Interrupted}) {
    EXPECT_EQ(parse_run_status(to_string(status)), status);
  }
  for (auto status : {PhaseStatus::Running, PhaseStatus::Succeeded, PhaseStatus::Unchanged, PhaseStatus::Failed,
                      PhaseStatus::RolledBack, PhaseStatus::Skipped}) {
    EXPECT_EQ(parse_phase_status(to_string(status)), status);
  }
  EXPECT_EQ(parse_run_status("Running"), std::nullopt);
  EXPECT_EQ(parse_phase_status("rolled_back"), std::nullopt);
}

TEST_F(StateStoreTest, OpenCreatesDirectoryWalAndCurrentSchema) {
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->path(), path_);
  EXPECT_EQ(store->schema_version(), StateStore::kSchemaVersion);
  EXPECT_EQ(StateStore::kSchemaVersion, 6);
  EXPECT_TRUE(fs::is_directory(dir_ + "/.gpuexpand"));
  EXPECT_EQ(sql(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(sql(path_, "PRAGMA user_version"), "6");
  EXPECT_EQ(sql(path_,
                "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name)"),
            "audit,check_results,checkpoints,events,locks,package_answers,phase_results,run_nodes,runs");
}

TEST_F(StateStoreTest, RunLifecycle) {
  auto store = open();
  ASSERT_TRUE(store);
  RunRecord input = apply_run({"node-02", "node-01", "node-02"});
  input.status = RunStatus::Failed;  // ignored: a new run is running
  input.exit_code = 9;
  int64_t id = begin(*store, input);
  EXPECT_EQ(id, 1);

  auto loaded = store->run(id);
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  const RunRecord& run = **loaded;
  EXPECT_EQ(run.id, 1);
  EXPECT_EQ(run.command, "apply");
  EXPECT_EQ(run.spec_file, "cluster.yaml");
  EXPECT_EQ(run.spec_sha256, "aa11");
  EXPECT_EQ(run.plan_sha256, "bb22");
  EXPECT_EQ(run.started_at, "2026-11-30T03:00:00Z");
  EXPECT_EQ(run.finished_at, "");
  EXPECT_EQ(run.status, RunStatus::Running);
  EXPECT_EQ(run.exit_code, -1);
  EXPECT_EQ(run.holder, "alice@elsewhere.invalid pid 4242");
  EXPECT_EQ(run.nodes, (std::vector<std::string>{"node-02", "node-01"}));  // order kept, duplicate dropped
  EXPECT_EQ(sql(path_, "SELECT node, run_id, holder, since FROM locks ORDER BY node"),
            "node-01|1|alice@elsewhere.invalid pid 4242|2026-11-30T03:00:00Z\n"
            "node-02|1|alice@elsewhere.invalid pid 4242|2026-11-30T03:00:00Z");

  ASSERT_TRUE(store->finish_run(id, RunStatus::Failed, 3, "2026-11-30T03:10:00Z").ok());
  loaded = store->run(id);
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((*loaded)->status, RunStatus::Failed);
  EXPECT_EQ((*loaded)->exit_code, 3);
  EXPECT_EQ((*loaded)->finished_at, "2026-11-30T03:10:00Z");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM locks"), "0");

  int64_t second = begin(*store, apply_run({"node-03"}, "2026-11-30T04:00:00Z"));
  EXPECT_EQ(second, 2);
  auto all = store->runs(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, 2);  // newest first
  EXPECT_EQ((*all)[1].id, 1);
  auto one = store->runs(1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().id, 2);

  auto missing = store->run(99);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  auto bad = store->finish_run(99, RunStatus::Succeeded, 0, "t");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "state store " + path_ + ": finishing run 99: no such run");
  auto running = store->finish_run(2, RunStatus::Running, 0, "t");
  ASSERT_FALSE(running.ok());
  EXPECT_EQ(running.error().message, "state store " + path_ + ": finishing run 2: a finished run cannot be running");
}

TEST_F(StateStoreTest, PhaseResultsUpsertOnRunNodePhase) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t id = begin(*store, apply_run({"n1", "n2"}));
  ASSERT_TRUE(store->record_phase(phase(id, "n1", "packages", PhaseStatus::Running)).ok());
  ASSERT_TRUE(store->record_phase(phase(id, "n2", "packages", PhaseStatus::Running)).ok());
  PhaseResult failed = phase(id, "n1", "packages", PhaseStatus::Failed, 2);
  failed.failed_step = "install nvidia-driver";
  failed.message = "apt-get exited 100";
  ASSERT_TRUE(store->record_phase(failed).ok());

  auto results = store->phase_results(id);
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 2u);  // updated in place, first-recorded order kept
  const PhaseResult& first = (*results)[0];
  EXPECT_EQ(first.run_id, id);
  EXPECT_EQ(first.node, "n1");
  EXPECT_EQ(first.phase, "packages");
  EXPECT_EQ(first.status, PhaseStatus::Failed);
  EXPECT_EQ(first.changes, 2);
  EXPECT_EQ(first.started_at, "2026-11-30T03:00:01Z");
  EXPECT_EQ(first.finished_at, "2026-11-30T03:00:04Z");
  EXPECT_DOUBLE_EQ(first.duration_s, 3.25);
  EXPECT_EQ(first.failed_step, "install nvidia-driver");
  EXPECT_EQ(first.message, "apt-get exited 100");
  EXPECT_EQ((*results)[1].node, "n2");
  EXPECT_EQ((*results)[1].status, PhaseStatus::Running);

  auto orphan = store->record_phase(phase(99, "n1", "packages", PhaseStatus::Running));
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.error().message,
            "state store " + path_ + ": recording phase packages of n1 in run 99: FOREIGN KEY constraint failed");
}

TEST_F(StateStoreTest, LatestPhaseResultsPicksTheNewestRun) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t first = begin(*store, apply_run({"n1", "n2"}));
  for (const char* node : {"n1", "n2"}) {
    ASSERT_TRUE(store->record_phase(phase(first, node, "base", PhaseStatus::Succeeded, 1)).ok());
    ASSERT_TRUE(store->record_phase(phase(first, node, "drivers", PhaseStatus::Failed)).ok());
  }
  ASSERT_TRUE(store->finish_run(first, RunStatus::Failed, 3, "t1").ok());
  int64_t second = begin(*store, apply_run({"n1"}));
  ASSERT_TRUE(store->record_phase(phase(second, "n1", "drivers", PhaseStatus::Succeeded, 4)).ok());
  ASSERT_TRUE(store->record_phase(phase(second, "n1", "fabric", PhaseStatus::Running)).ok());

  auto all = store->latest_phase_results({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(summary(*all),
            (std::vector<std::string>{"1/n1/base=succeeded", "2/n1/drivers=succeeded", "2/n1/fabric=running",
                                      "1/n2/base=succeeded", "1/n2/drivers=failed"}));
  auto n2 = store->latest_phase_results({"n2", "n9"});
  ASSERT_TRUE(n2.ok());
  EXPECT_EQ(summary(*n2), (std::vector<std::string>{"1/n2/base=succeeded", "1/n2/drivers=failed"}));
  auto none = store->latest_phase_results({"n9"});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(StateStoreTest, CheckpointsNewestFirstUpsertAndRestore) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t first = begin(*store, apply_run({"n1", "n2"}));
  auto checkpoint = [](int64_t run, std::string node, std::string phase_name) {
    CheckpointRecord record;
    record.run_id = run;
    record.node = std::move(node);
    record.phase = std::move(phase_name);
    record.remote_path = "/var/lib/gpuexpand/checkpoints/" + std::to_string(run) + "/" + record.phase;
    record.created_at = "2026-11-30T03:00:0" + std::to_string(run) + "Z";
    record.manifest = {{"files", {"/etc/modprobe.d/nvidia.conf"}}, {"packages", {{"nvidia-driver", "535"}}}};
    return record;
  };
  ASSERT_TRUE(store->record_checkpoint(checkpoint(first, "n1", "base")).ok());
  ASSERT_TRUE(store->record_checkpoint(checkpoint(first, "n1", "drivers")).ok());
  ASSERT_TRUE(store->record_checkpoint(checkpoint(first, "n2", "base")).ok());
  ASSERT_TRUE(store->finish_run(first, RunStatus::Failed, 3, "t").ok());
  int64_t second = begin(*store, apply_run({"n1"}));
  ASSERT_TRUE(store->record_checkpoint(checkpoint(second, "n1", "fabric")).ok());
  CheckpointRecord redo = checkpoint(first, "n1", "base");  // upsert: same place in the order, new content
  redo.remote_path = "/var/lib/gpuexpand/checkpoints/1/base.2";
  redo.manifest = json::object();
  ASSERT_TRUE(store->record_checkpoint(redo).ok());

  auto n1 = store->checkpoints("n1");
  ASSERT_TRUE(n1.ok());
  ASSERT_EQ(n1->size(), 3u);
  EXPECT_EQ((*n1)[0].run_id, 2);
  EXPECT_EQ((*n1)[0].phase, "fabric");
  EXPECT_EQ((*n1)[1].run_id, 1);
  EXPECT_EQ((*n1)[1].phase, "drivers");
  EXPECT_EQ((*n1)[1].remote_path, "/var/lib/gpuexpand/checkpoints/1/drivers");
  EXPECT_EQ((*n1)[1].created_at, "2026-11-30T03:00:01Z");
  EXPECT_EQ((*n1)[1].manifest.dump(),
            R"({"files":["/etc/modprobe.d/nvidia.conf"],"packages":{"nvidia-driver":"535"}})");
  EXPECT_FALSE((*n1)[1].restored);
  EXPECT_EQ((*n1)[2].phase, "base");
  EXPECT_EQ((*n1)[2].remote_path, "/var/lib/gpuexpand/checkpoints/1/base.2");
  EXPECT_EQ((*n1)[2].manifest.dump(), "{}");

  ASSERT_TRUE(store->mark_checkpoint_restored(first, "n1", "drivers").ok());
  n1 = store->checkpoints("n1");
  ASSERT_TRUE(n1.ok());
  EXPECT_TRUE((*n1)[1].restored);
  EXPECT_FALSE((*n1)[0].restored);
  auto missing = store->mark_checkpoint_restored(first, "n2", "drivers");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(
      missing.error().message,
      "state store " + path_ + ": marking the checkpoint before drivers on n2 in run 1 restored: no such checkpoint");
  auto n2 = store->checkpoints("n2");
  ASSERT_TRUE(n2.ok());
  ASSERT_EQ(n2->size(), 1u);
  EXPECT_EQ(n2->front().phase, "base");
}

TEST_F(StateStoreTest, LockConflictOnOverlappingNodesOnly) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t holder = begin(*store, apply_run({"n1", "n2", "n3"}));

  LockConflict found = conflict(*store, apply_run({"n4", "n3", "n2"}, "2026-11-30T05:00:00Z", "bob@b pid 1"));
  EXPECT_EQ(found.run_id, holder);
  EXPECT_EQ(found.holder, "alice@elsewhere.invalid pid 4242");
  EXPECT_EQ(found.since, "2026-11-30T03:00:00Z");
  EXPECT_EQ(found.nodes, (std::vector<std::string>{"n3", "n2"}));  // in the order asked
  EXPECT_TRUE(found.holder_alive);                                 // another host: assumed alive
  EXPECT_EQ(describe(found),
            "nodes n3, n2 are locked by run 1 (alice@elsewhere.invalid pid 4242) since 2026-11-30T03:00:00Z");
  // Nothing was written for the refused run.
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM runs"), "1");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM run_nodes"), "3");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM locks WHERE node = 'n4'"), "0");

  int64_t disjoint = begin(*store, apply_run({"n4", "n5"}));
  EXPECT_EQ(disjoint, 2);
  // Two holders: the oldest run is named.
  LockConflict both = conflict(*store, apply_run({"n5", "n1"}));
  EXPECT_EQ(both.run_id, holder);
  EXPECT_EQ(both.nodes, (std::vector<std::string>{"n1"}));
  EXPECT_EQ(describe(both), "node n1 is locked by run 1 (alice@elsewhere.invalid pid 4242) since 2026-11-30T03:00:00Z");

  ASSERT_TRUE(store->finish_run(holder, RunStatus::Succeeded, 0, "t").ok());
  LockConflict next = conflict(*store, apply_run({"n1", "n5"}));
  EXPECT_EQ(next.run_id, disjoint);
  EXPECT_EQ(next.nodes, (std::vector<std::string>{"n5"}));
  EXPECT_EQ(begin(*store, apply_run({"n1", "n2", "n3"})), 3);  // free after finish_run
}

TEST_F(StateStoreTest, DeadHolderDetection) {
  const std::string host = hostname();
  pid_t gone = dead_pid();
  EXPECT_TRUE(holder_alive(lock_holder_identity()));
  EXPECT_EQ(lock_holder_identity().substr(lock_holder_identity().find('@')),
            "@" + host + " pid " + std::to_string(getpid()));
  EXPECT_FALSE(holder_alive("root@" + host + " pid " + std::to_string(gone)));
  EXPECT_TRUE(holder_alive("root@" + host + " pid 1"));  // exists (EPERM or not): alive
  EXPECT_TRUE(holder_alive("root@elsewhere.invalid pid " + std::to_string(gone)));
  EXPECT_TRUE(holder_alive("somebody"));
  EXPECT_TRUE(holder_alive("root@" + host + " pid x"));
  EXPECT_TRUE(holder_alive("root@" + host + " pid 99999999999"));

  auto store = open();
  ASSERT_TRUE(store);
  std::string dead = "root@" + host + " pid " + std::to_string(gone);
  begin(*store, apply_run({"n1"}, "2026-11-30T03:00:00Z", dead));
  LockConflict found = conflict(*store, apply_run({"n1"}));
  EXPECT_FALSE(found.holder_alive);
  EXPECT_EQ(describe(found), "node n1 is locked by run 1 (" + dead +
                                 ") since 2026-11-30T03:00:00Z — that process is gone; run `gpuexpand unlock "
                                 "--force` if no other apply is running");
  auto left = store->interrupted_runs();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(left->front().id, 1);
  // A live run is not "interrupted". No holder given: this process.
  begin(*store, apply_run({"n2"}, "t", ""));
  EXPECT_EQ((*store->run(2))->holder, lock_holder_identity());
  left = store->interrupted_runs();
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->size(), 1u);
}

TEST_F(StateStoreTest, ForceUnlockReleasesMarksAndLogs) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t a = begin(*store, apply_run({"n1", "n2"}));
  int64_t b = begin(*store, apply_run({"n3"}, "2026-11-30T04:00:00Z", "bob@elsewhere.invalid pid 7"));

  // Partial: n1 only. Run a still holds n2, so it stays running.
  auto partial = store->force_unlock({"n1"}, "root@lab pid 99", "2026-11-30T06:00:00Z");
  ASSERT_TRUE(partial.ok()) << partial.error().message;
  ASSERT_EQ(partial->size(), 1u);
  EXPECT_EQ(partial->front().run_id, a);
  EXPECT_EQ(partial->front().nodes, (std::vector<std::string>{"n1"}));
  EXPECT_EQ((*store->run(a))->status, RunStatus::Running);
  EXPECT_EQ(begin(*store, apply_run({"n1"})), 3);
  ASSERT_TRUE(store->finish_run(3, RunStatus::Succeeded, 0, "t").ok());

  // All.
  auto all = store->force_unlock({}, "root@lab pid 100", "2026-11-30T07:00:00Z");
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].run_id, a);
  EXPECT_EQ((*all)[0].nodes, (std::vector<std::string>{"n2"}));
  EXPECT_EQ((*all)[1].run_id, b);
  EXPECT_EQ((*all)[1].holder, "bob@elsewhere.invalid pid 7");
  EXPECT_EQ((*all)[1].since, "2026-11-30T04:00:00Z");
  EXPECT_EQ((*all)[1].nodes, (std::vector<std::string>{"n3"}));
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM locks"), "0");
  for (int64_t id : {a, b}) {
    auto run = store->run(id);
    ASSERT_TRUE(run.ok() && run->has_value());
    EXPECT_EQ((*run)->status, RunStatus::Interrupted);
    EXPECT_EQ((*run)->finished_at, "2026-11-30T07:00:00Z");
    EXPECT_EQ((*run)->exit_code, -1);
  }
  EXPECT_EQ((*store->run(3))->status, RunStatus::Succeeded);  // finished runs are left alone

  // Nothing held: still logged.
  auto nothing = store->force_unlock({"n9"}, "root@lab pid 101", "2026-11-30T08:00:00Z");
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->empty());

  auto events = store->events();
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].kind, "force-unlock");
  EXPECT_EQ((*events)[0].who, "root@lab pid 99");
  EXPECT_EQ((*events)[0].at, "2026-11-30T06:00:00Z");
  EXPECT_EQ((*events)[0].detail.dump(),
            R"({"nodes":["n1"],"released":[{"holder":"alice@elsewhere.invalid pid 4242","holder_alive":true,)"
            R"("nodes":["n1"],"run_id":1,"since":"2026-11-30T03:00:00Z"}]})");
  EXPECT_EQ((*events)[1].detail["nodes"].dump(), "[]");
  EXPECT_EQ((*events)[1].detail["released"].size(), 2u);
  EXPECT_EQ((*events)[2].detail.dump(), R"({"nodes":["n9"],"released":[]})");
  EXPECT_EQ(begin(*store, apply_run({"n1", "n2", "n3"})), 4);
}

// gpuexpand audit: who ran what, filtered by run and node; names are data, not SQL.
TEST_F(StateStoreTest, TheAuditTrailFiltersByRunAndNodeAndKeepsWhoRanIt) {
  auto store = open();
  ASSERT_TRUE(store);
  const int64_t first = begin(*store, apply_run({"n1", "n2"}));
  const int64_t second = begin(*store, apply_run({"n3"}));  // the audit rows need not be its nodes
  AuditEntry fed{first, "n1", "install -m 0600 /dev/stdin /etc/munge/munge.key", 0, "ok", 7, "t1"};
  fed.user = "ops";
  fed.sudo = true;
  fed.stdin_bytes = 1024;
  fed.stdin_sha256 = std::string(64, 'a');
  ASSERT_TRUE(store->record_audit({fed, {first, "n2", "true", 0, "ok", 1, "t2"}}).ok());
  ASSERT_TRUE(store->record_audit({{second, "n1", "false", 1, "command failed", 2, "t3"},
                                   {second, "x' OR '1'='1", "true", 0, "ok", 1, "t4"}})
                  .ok());
  auto names = [](const std::vector<AuditEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back(std::to_string(e.run_id) + "/" + e.node + "/" + e.command);
    return out;
  };
  EXPECT_EQ(names(*store->audit_trail(0, {})),
            (std::vector<std::string>{std::to_string(first) + "/n1/" + fed.command, std::to_string(first) + "/n2/true",
                                      std::to_string(second) + "/n1/false", std::to_string(second) + "/x' OR '1'='1/true"}));
  EXPECT_EQ(names(*store->audit_trail(0, {"n1"})),
            (std::vector<std::string>{std::to_string(first) + "/n1/" + fed.command, std::to_string(second) + "/n1/false"}));
  EXPECT_EQ(names(*store->audit_trail(second, {"n2", "n1"})),
            (std::vector<std::string>{std::to_string(second) + "/n1/false"}));
  EXPECT_EQ(store->audit_trail(0, {"' OR 1=1 --"})->size(), 0u);
  const auto kept = (*store->audit_trail(first, {"n1"}))[0];
  EXPECT_EQ(kept.user, "ops");
  EXPECT_TRUE(kept.sudo);
  EXPECT_EQ(kept.stdin_bytes, 1024);
  EXPECT_EQ(kept.stdin_sha256, std::string(64, 'a'));
  EXPECT_EQ(nlohmann::json(kept)["user"], "ops");
}

TEST_F(StateStoreTest, AuditBatchesAreAllOrNothing) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t id = begin(*store, apply_run({"n1"}));
  std::vector<AuditEntry> batch = {
      {id, "n1", "apt-get install -y nvidia-driver-535", 0, "ok", 1234, "2026-11-30T03:00:02Z"},
      {id, "n1", "modprobe nvidia", 1, "command failed", 15, "2026-11-30T03:00:03Z"},
  };
  ASSERT_TRUE(store->record_audit(batch).ok());
  ASSERT_TRUE(store->record_audit({}).ok());

  std::vector<AuditEntry> broken = {
      {id, "n1", "true", 0, "ok", 1, "t"},
      {99, "n1", "false", 1, "command failed", 1, "t"},  // no run 99: the whole batch fails
  };
  auto refused = store->record_audit(broken);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "state store " + path_ + ": recording the audit of 2 commands: FOREIGN KEY constraint failed");

  auto entries = store->audit(id);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  const AuditEntry& second = (*entries)[1];
  EXPECT_EQ(second.run_id, id);
  EXPECT_EQ(second.node, "n1");
  EXPECT_EQ(second.command, "modprobe nvidia");
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_EQ(second.failure, "command failed");
  EXPECT_EQ(second.duration_ms, 15);
  EXPECT_EQ(second.at, "2026-11-30T03:00:03Z");
  EXPECT_EQ((*entries)[0].command, "apt-get install -y nvidia-driver-535");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM audit"), "2");
}

TEST_F(StateStoreTest, CheckResultsUpsertOnRunNodeCheck) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t id = begin(*store, apply_run({"n1", "n2"}));
  ASSERT_TRUE(store
                  ->record_checks({check(id, "n1", "scheduler", "pass", "slurmd idle"),
                                   check(id, "n1", "gpu", "fail", "7 GPUs, expected 8"),
                                   check(id, "n1", "network", "skip", "no RDMA hardware (rdma.kind none)")})
                  .ok());
  ASSERT_TRUE(store->record_checks({check(id, "n2", "gpu", "pass")}).ok());
  ASSERT_TRUE(store->record_checks({}).ok());
  CheckResult again = check(id, "n1", "gpu", "pass", "8 GPUs");  // upsert: same place, new content
  again.seconds = 2.25;
  again.recorded_at = "2026-11-30T03:40:00Z";
  ASSERT_TRUE(store->record_checks({again}).ok());

  auto results = store->checks_of_run(id);
  ASSERT_TRUE(results.ok()) << results.error().message;
  EXPECT_EQ(summary(*results),
            (std::vector<std::string>{"1/n1/scheduler=pass", "1/n1/gpu=pass", "1/n1/network=skip", "1/n2/gpu=pass"}));
  const CheckResult& gpu = (*results)[1];
  EXPECT_EQ(gpu.detail, "8 GPUs");
  EXPECT_DOUBLE_EQ(gpu.seconds, 2.25);
  EXPECT_EQ(gpu.recorded_at, "2026-11-30T03:40:00Z");
  EXPECT_EQ((*results)[2].detail, "no RDMA hardware (rdma.kind none)");
  EXPECT_DOUBLE_EQ((*results)[2].seconds, 1.5);
  EXPECT_EQ((*results)[2].recorded_at, "2026-11-30T03:30:00Z");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM check_results"), "4");

  // A bad result refuses the whole batch.
  // (A status is a CheckStatus: no other word can be recorded. One written past the table's
  // CHECK constraint by hand is an error when read, never taken for a failure.)
  sql(path_, "PRAGMA ignore_check_constraints = ON; UPDATE check_results SET status = 'ok' WHERE node = 'n2'");
  auto edited = store->checks_of_run(id);
  ASSERT_FALSE(edited.ok());
  EXPECT_NE(edited.error().message.find("check_results: unknown status 'ok' (pass, fail or skip)"), std::string::npos)
      << edited.error().message;
  sql(path_, "UPDATE check_results SET status = 'pass' WHERE node = 'n2'");
  auto unnamed = store->record_checks({check(id, "n2", "", "pass")});
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.error().message, "state store " + path_ +
                                         ": recording the acceptance checks of n2 in run 1: a check result needs a "
                                         "node and a check");
  auto orphan = store->record_checks({check(id, "n1", "storage", "pass"), check(99, "n1", "storage", "pass")});
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.error().message,
            "state store " + path_ + ": recording 2 acceptance check results: FOREIGN KEY constraint failed");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM check_results"), "4");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM check_results WHERE check_name = 'storage'"), "0");

  auto none = store->checks_of_run(99);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(StateStoreTest, LatestChecksPickTheNewestRun) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t first = begin(*store, apply_run({"n1", "n2"}));
  ASSERT_TRUE(store
                  ->record_checks({check(first, "n1", "gpu", "fail", "7 GPUs, expected 8"),
                                   check(first, "n1", "network", "skip", "no RDMA")})
                  .ok());
  ASSERT_TRUE(store->record_checks({check(first, "n2", "gpu", "pass"), check(first, "n2", "storage", "fail")}).ok());
  ASSERT_TRUE(store->finish_run(first, RunStatus::Failed, 3, "t1").ok());
  RunRecord verify = apply_run({"n1"});
  verify.command = "verify";
  int64_t second = begin(*store, verify);
  ASSERT_TRUE(store->record_checks({check(second, "n1", "gpu", "pass"), check(second, "n1", "storage", "pass")}).ok());

  auto all = store->latest_checks({});
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(summary(*all), (std::vector<std::string>{"1/n1/network=skip", "2/n1/gpu=pass", "2/n1/storage=pass",
                                                     "1/n2/gpu=pass", "1/n2/storage=fail"}));
  EXPECT_EQ((*all)[1].detail, "");
  auto n2 = store->latest_checks({"n2", "n9"});
  ASSERT_TRUE(n2.ok());
  EXPECT_EQ(summary(*n2), (std::vector<std::string>{"1/n2/gpu=pass", "1/n2/storage=fail"}));
  auto none = store->latest_checks({"n9"});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // The older result stays on record with its run.
  EXPECT_EQ(summary(*store->checks_of_run(first)),
            (std::vector<std::string>{"1/n1/gpu=fail", "1/n1/network=skip", "1/n2/gpu=pass", "1/n2/storage=fail"}));
}

// The console side of a StoreJournal: what it was handed on.
class RecordingJournal final : public RunJournal {
 public:
  void phase_started(const std::string&, const std::string&) override {}
  void phase_finished(const PhaseRecord&) override {}
  void checkpoint_taken(const std::string&, const std::string&, const std::string&, const nlohmann::json&) override {}
  void checkpoint_restored(const std::string&, const std::string&) override {}
  void checks_recorded(const std::string& node, const std::vector<CheckResult>& results) override {
    for (const auto& r : results) seen.push_back(node + ":" + r.check + "@" + std::to_string(r.run_id));
  }
  void node_finished(const std::string&, NodeResult, const std::string&) override {}
  void batch_stopped(const std::string&) override {}
  std::vector<std::string> seen;
};

TEST_F(StateStoreTest, StoreJournalRecordsChecksUnderItsRun) {
  auto store = open();
  ASSERT_TRUE(store);
  int64_t id = begin(*store, apply_run({"n1"}));
  RecordingJournal console;
  StoreJournal journal(*store, id, &console, [] { return std::string("2026-11-30T05:00:00Z"); });

  CheckResult measured;  // run, node and time left to the journal
  measured.check = "storage";
  measured.status = CheckStatus::Pass;
  measured.detail = "412 MB/s write";
  measured.seconds = 12.5;
  CheckResult timed = check(0, "", "gpu", "fail", "7 GPUs, expected 8");  // its own recorded_at is kept
  AuditRecord listed;
  listed.node = "n1";
  listed.command = "nvidia-smi -L";
  listed.exit_code = 0;
  listed.duration = std::chrono::milliseconds(40);
  journal.audit(listed);
  journal.checks_recorded("n1", {measured, timed});
  EXPECT_TRUE(journal.errors().empty());
  EXPECT_EQ(console.seen, (std::vector<std::string>{"n1:storage@1", "n1:gpu@1"}));
  EXPECT_EQ(store->audit(id)->size(), 1u);  // flushed with the results

  auto stored = store->checks_of_run(id);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ(json((*stored)[0]).dump(),
            R"({"check":"storage","detail":"412 MB/s write","node":"n1","recorded_at":"2026-11-30T05:00:00Z",)"
            R"("run_id":1,"seconds":12.5,"status":"pass"})");
  EXPECT_EQ((*stored)[1].node, "n1");
  EXPECT_EQ((*stored)[1].recorded_at, "2026-11-30T03:30:00Z");

  // A store error is kept for the end of the run; the console still hears of the results.
  journal.checks_recorded("n1", {check(0, "", "", "pass")});
  ASSERT_EQ(journal.errors().size(), 1u);
  EXPECT_EQ(journal.errors().front(), "state store " + path_ +
                                          ": recording the acceptance checks of n1 in run 1: a check result needs a "
                                          "node and a check");
  EXPECT_EQ(console.seen.back(), "n1:@1");
  EXPECT_EQ(store->checks_of_run(id)->size(), 2u);
}

TEST_F(StateStoreTest, ReopenPersistsEverything) {
  {
    auto store = open();
    ASSERT_TRUE(store);
    int64_t id = begin(*store, apply_run({"n1", "n2"}));
    ASSERT_TRUE(store->record_phase(phase(id, "n1", "base", PhaseStatus::Unchanged)).ok());
    CheckpointRecord checkpoint{id, "n1", "base", "/var/lib/gpuexpand/cp/1", "t", json{{"k", 1}}, false};
    ASSERT_TRUE(store->record_checkpoint(checkpoint).ok());
    ASSERT_TRUE(store->record_audit({{id, "n1", "uname -r", 0, "ok", 3, "t"}}).ok());
    ASSERT_TRUE(store->record_checks({check(id, "n1", "gpu", "pass", "8 GPUs")}).ok());
    ASSERT_TRUE(store->force_unlock({"n2"}, "root", "t2").ok());
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto run = store->run(1);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ((*run)->status, RunStatus::Running);  // still holds n1
  EXPECT_EQ(summary(*store->phase_results(1)), (std::vector<std::string>{"1/n1/base=unchanged"}));
  EXPECT_EQ(store->checkpoints("n1")->front().manifest.dump(), R"({"k":1})");
  EXPECT_EQ(store->audit(1)->front().command, "uname -r");
  EXPECT_EQ(store->latest_checks({"n1"})->front().detail, "8 GPUs");
  EXPECT_EQ(store->events()->size(), 1u);
  EXPECT_EQ(conflict(*store, apply_run({"n1"})).nodes, (std::vector<std::string>{"n1"}));
  EXPECT_EQ(begin(*store, apply_run({"n2"})), 2);
}

TEST_F(StateStoreTest, JsonForStatus) {
  RunRecord run = apply_run({"n1"});
  run.id = 5;
  EXPECT_EQ(json(run).dump(),
            R"({"command":"apply","exit_code":-1,"finished_at":"","holder":"alice@elsewhere.invalid pid 4242",)"
            R"("id":5,"nodes":["n1"],"plan_sha256":"bb22","spec_file":"cluster.yaml","spec_sha256":"aa11",)"
            R"("started_at":"2026-11-30T03:00:00Z","status":"running"})");
  PhaseResult result = phase(5, "n1", "fabric", PhaseStatus::RolledBack, 1);
  EXPECT_EQ(json(result).dump(),
            R"({"changes":1,"duration_s":3.25,"failed_step":"","finished_at":"2026-11-30T03:00:04Z","message":"",)"
            R"("node":"n1","phase":"fabric","run_id":5,"started_at":"2026-11-30T03:00:01Z","status":"rolled-back"})");
  AuditEntry entry{5, "n1", "true", 0, "ok", 2, "t"};
  EXPECT_EQ(json(entry).dump(),
            R"({"at":"t","command":"true","duration_ms":2,"exit_code":0,"failure":"ok","node":"n1","run_id":5,"stdin_bytes":0,"stdin_sha256":"","sudo":false,"user":""})");
  EXPECT_EQ(json(check(5, "n1", "gpu", "fail", "7 GPUs, expected 8")).dump(),
            R"({"check":"gpu","detail":"7 GPUs, expected 8","node":"n1","recorded_at":"2026-11-30T03:30:00Z",)"
            R"("run_id":5,"seconds":1.5,"status":"fail"})");
}

// ---------------------------------------------------------------------------
// Schema versions.

// Schema version 1 exactly as released: a store written by that gpuexpand.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, command TEXT NOT NULL, spec_file TEXT NOT NULL,
  spec_sha256 TEXT NOT NULL, plan_sha256 TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  exit_code INTEGER NOT NULL, holder TEXT NOT NULL);
CREATE TABLE run_nodes (run_id INTEGER NOT NULL REFERENCES runs (id), position INTEGER NOT NULL,
  node TEXT NOT NULL, PRIMARY KEY (run_id, node));
CREATE TABLE phase_results (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs (id),
  node TEXT NOT NULL, phase TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'unchanged', 'failed', 'rolled-back', 'skipped')),
  changes INTEGER NOT NULL, started_at TEXT NOT NULL, finished_at TEXT NOT NULL, duration_s REAL NOT NULL,
  failed_step TEXT NOT NULL, message TEXT NOT NULL, UNIQUE (run_id, node, phase));
CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs (id),
  node TEXT NOT NULL, phase TEXT NOT NULL, remote_path TEXT NOT NULL, created_at TEXT NOT NULL,
  manifest TEXT NOT NULL, restored INTEGER NOT NULL CHECK (restored IN (0, 1)), UNIQUE (run_id, node, phase));
CREATE INDEX checkpoints_by_node ON checkpoints (node, run_id);
CREATE TABLE audit (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs (id), node TEXT NOT NULL,
  command TEXT NOT NULL, exit_code INTEGER NOT NULL, failure TEXT NOT NULL, duration_ms INTEGER NOT NULL,
  at TEXT NOT NULL);
CREATE INDEX audit_by_run ON audit (run_id);
CREATE TABLE locks (node TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs (id), holder TEXT NOT NULL,
  since TEXT NOT NULL);
CREATE INDEX locks_by_run ON locks (run_id);
PRAGMA user_version = 1;
)sql";

TEST_F(StateStoreTest, MigratesAVersion1Store) {
  fs::create_directories(dir_ + "/.gpuexpand");
  sql(path_, kSchemaV1);
  sql(path_,
      "INSERT INTO runs VALUES (1, 'apply', 'c.yaml', 's', '', '2026-01-01T00:00:00Z', '', 'running', -1, "
      "'old@elsewhere.invalid pid 5');"
      "INSERT INTO run_nodes VALUES (1, 0, 'n1');"
      "INSERT INTO locks VALUES ('n1', 1, 'old@elsewhere.invalid pid 5', '2026-01-01T00:00:00Z');"
      "INSERT INTO phase_results VALUES (1, 1, 'n1', 'base', 'succeeded', 2, 'a', 'b', 1.5, '', '');"
      "INSERT INTO audit VALUES (1, 1, 'n1', 'uname -r', 0, 'ok', 4, '2026-01-01T00:00:01Z');");
  ASSERT_EQ(sql(path_, "PRAGMA journal_mode"), "delete");

  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), StateStore::kSchemaVersion);
  EXPECT_EQ(sql(path_, "PRAGMA user_version"), "6");
  EXPECT_EQ(sql(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(sql(path_,
                "SELECT name FROM sqlite_master WHERE name IN ('events', 'phase_results_latest', 'check_results', "
                "'check_results_latest') ORDER BY name"),
            "check_results\ncheck_results_latest\nevents\nphase_results_latest");
  auto run = store->run(1);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->holder, "old@elsewhere.invalid pid 5");
  EXPECT_EQ(summary(*store->latest_phase_results({"n1"})), (std::vector<std::string>{"1/n1/base=succeeded"}));
  EXPECT_EQ(conflict(*store, apply_run({"n1"})).run_id, 1);
  // A command audited before v5 reads with no user and no stdin.
  auto audit = store->audit_trail(0, {});
  ASSERT_TRUE(audit.ok()) << audit.error().message;
  ASSERT_EQ(audit->size(), 1u);
  EXPECT_EQ((*audit)[0].command, "uname -r");
  EXPECT_EQ((*audit)[0].user, "");
  EXPECT_EQ((*audit)[0].stdin_bytes, 0);
  auto released = store->force_unlock({}, "root", "t");
  ASSERT_TRUE(released.ok()) << released.error().message;
  EXPECT_EQ(store->events()->size(), 1u);
}

// Version 2's step exactly as released: applied on top of kSchemaV1, a store written by that gpuexpand.
constexpr const char* kSchemaV2Step = R"sql(
CREATE TABLE events (id INTEGER PRIMARY KEY, at TEXT NOT NULL, who TEXT NOT NULL, kind TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX phase_results_latest ON phase_results (node, phase, run_id);
PRAGMA user_version = 2;
)sql";

TEST_F(StateStoreTest, MigratesAVersion2Store) {
  fs::create_directories(dir_ + "/.gpuexpand");
  sql(path_, kSchemaV1);
  sql(path_, kSchemaV2Step);
  sql(path_,
      "INSERT INTO runs VALUES (1, 'apply', 'c.yaml', 's', '', '2026-01-01T00:00:00Z', '2026-01-01T00:10:00Z', "
      "'failed', 3, 'old@elsewhere.invalid pid 5');"
      "INSERT INTO run_nodes VALUES (1, 0, 'n1');"
      "INSERT INTO phase_results VALUES (1, 1, 'n1', 'base', 'succeeded', 2, 'a', 'b', 1.5, '', '');"
      "INSERT INTO events VALUES (1, 't', 'root', 'force-unlock', '{\"nodes\":[],\"released\":[]}');");
  ASSERT_EQ(sql(path_, "PRAGMA user_version"), "2");

  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), StateStore::kSchemaVersion);
  EXPECT_EQ(sql(path_, "PRAGMA user_version"), "6");
  EXPECT_EQ(sql(path_, "SELECT name FROM sqlite_master WHERE name LIKE 'check_results%' ORDER BY name"),
            "check_results\ncheck_results_latest");
  // What version 2 wrote is all there.
  EXPECT_EQ((*store->run(1))->status, RunStatus::Failed);
  EXPECT_EQ(summary(*store->latest_phase_results({"n1"})), (std::vector<std::string>{"1/n1/base=succeeded"}));
  EXPECT_EQ(store->events()->front().detail.dump(), R"({"nodes":[],"released":[]})");
  // And checks can be recorded against an old run.
  EXPECT_TRUE(store->latest_checks({})->empty());
  ASSERT_TRUE(store->record_checks({check(1, "n1", "gpu", "pass")}).ok());
  EXPECT_EQ(summary(*store->latest_checks({})), (std::vector<std::string>{"1/n1/gpu=pass"}));
  // A node of a run written before results were recorded did not finish,
  // as far as `--limit @failed` knows: it is retried, not skipped.
  auto unfinished = store->unfinished_nodes_of_last("apply");
  ASSERT_TRUE(unfinished.ok()) << unfinished.error().message;
  ASSERT_TRUE(unfinished->has_value());
  EXPECT_EQ((*unfinished)->first, 1);
  EXPECT_EQ((*unfinished)->second, (std::vector<std::string>{"n1"}));
  EXPECT_EQ(sql(path_, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(sql(path_, "PRAGMA foreign_key_check"), "");
}

TEST_F(StateStoreTest, NodeResultsNameTheLastApplysUnfinishedNodes) {
  auto store = open();
  ASSERT_TRUE(store);
  auto none = store->unfinished_nodes_of_last("apply");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());  // no apply yet

  int64_t first = begin(*store, apply_run({"n3", "n1", "n2", "n4", "n5"}));
  ASSERT_TRUE(store->record_node_result(first, "n1", "changed", "").ok());
  ASSERT_TRUE(store->record_node_result(first, "n2", "unchanged", "").ok());
  ASSERT_TRUE(store->record_node_result(first, "n3", "failed", "n3: phase os-init, step base-packages: exit 100").ok());
  ASSERT_TRUE(store->record_node_result(first, "n4", "unreachable", "n4 (10.0.0.4): connection refused").ok());
  // n5 never recorded: its controller died first.
  auto unknown = store->record_node_result(first, "n9", "failed", "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "state store " + path_ + ": recording how n9 ended in run 1: the node is not in the run");
  EXPECT_EQ(sql(path_, "SELECT result || '|' || message FROM run_nodes WHERE node = 'n3'"),
            "failed|n3: phase os-init, step base-packages: exit 100");
  ASSERT_TRUE(store->finish_run(first, RunStatus::Failed, 3, "t1").ok());

  auto last = store->unfinished_nodes_of_last("apply");
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->first, first);
  EXPECT_EQ((*last)->second, (std::vector<std::string>{"n3", "n4", "n5"}));  // run order

  // A verify in between is not an apply; the newest apply counts.
  RunRecord verify = apply_run({"n3"});
  verify.command = "verify";
  ASSERT_TRUE(store->finish_run(begin(*store, verify), RunStatus::Succeeded, 0, "t2").ok());
  EXPECT_EQ((*store->unfinished_nodes_of_last("apply"))->first, first);
  int64_t retry = begin(*store, apply_run({"n3", "n4", "n5"}));
  for (const char* node : {"n3", "n4", "n5"}) ASSERT_TRUE(store->record_node_result(retry, node, "changed", "").ok());
  last = store->unfinished_nodes_of_last("apply");
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->first, retry);
  EXPECT_TRUE((*last)->second.empty());
}

TEST_F(StateStoreTest, KeepsEachNodesNewestPackageAnswer) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->keep_package_answers({{"node-01", "k1", "in-1", "out-1", "2026-12-07T00:00:00Z"},
                                           {"node-02", "k1", "in-2", "out-2", "2026-12-07T00:00:00Z"}}));
  ASSERT_TRUE(store->keep_package_answers({{"node-01", "k2", "in-1b", "out-1b", "2026-12-07T01:00:00Z"}}));
  auto all = store->package_answers({});
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).node, "node-01");
  EXPECT_EQ(all->at(0).key, "k2");
  EXPECT_EQ(all->at(0).inputs, "in-1b");
  EXPECT_EQ(all->at(0).output, "out-1b");
  EXPECT_EQ(all->at(0).saved_at, "2026-12-07T01:00:00Z");
  EXPECT_EQ(all->at(1).output, "out-2");
  auto one = store->package_answers({"node-02", "node-09"});
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->at(0).node, "node-02");
  // A batch with a nameless answer writes nothing of the batch.
  EXPECT_FALSE(store->keep_package_answers({{"node-03", "k", "i", "o", "t"}, {"", "k", "i", "o", "t"}}));
  EXPECT_EQ(store->package_answers({"node-03"})->size(), 0u);
}

TEST_F(StateStoreTest, StoredPackageAnswersReadOnceAndWriteWhatTheRunKept) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->keep_package_answers({{"node-01", "k", "in-1", "out-1", "2026-12-07T00:00:00Z"},
                                           {"node-09", "k", "in-9", "out-9", "2026-12-07T00:00:00Z"}}));
  {
    StoredPackageAnswers answers(*store, {"node-01", "node-02"}, [] { return std::string("2026-12-07T01:00:00Z"); });
    ASSERT_TRUE(answers.earlier("node-01"));
    EXPECT_EQ(answers.earlier("node-01")->inputs, "in-1");
    EXPECT_EQ(answers.earlier("node-01")->output, "out-1");
    EXPECT_FALSE(answers.earlier("node-02"));
    EXPECT_FALSE(answers.earlier("node-09")) << "only the run's nodes are read";
    answers.keep("node-02", {"k", "in-2", "out-2"});
    answers.keep("node-01", {"k", "in-1b", "out-1b"});
    EXPECT_EQ(answers.earlier("node-02")->inputs, "in-2") << "a later probe of the run sees what an earlier kept";
    EXPECT_EQ(store->package_answers({"node-02"})->size(), 0u) << "nothing is written before flush";
    ASSERT_TRUE(answers.flush());
  }
  auto rows = store->package_answers({});
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ(rows->at(0).inputs, "in-1b");
  EXPECT_EQ(rows->at(0).saved_at, "2026-12-07T01:00:00Z");
  EXPECT_EQ(rows->at(1).output, "out-2");
  EXPECT_EQ(rows->at(2).saved_at, "2026-12-07T00:00:00Z") << "a node the run did not probe keeps its row";
}

TEST_F(StateStoreTest, AnEmptyFileIsANewStore) {
  fs::create_directories(dir_ + "/.gpuexpand");
  std::ofstream(path_).close();
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(sql(path_, "PRAGMA user_version"), "6");
}

TEST_F(StateStoreTest, RefusesANewerSchema) {
  fs::create_directories(dir_ + "/.gpuexpand");
  sql(path_, "CREATE TABLE future (x); PRAGMA user_version = 7;");
  auto store = StateStore::open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(
      store.error().message,
      "state store " + path_ + ": schema version 7 is newer than this gpuexpand understands (6); upgrade gpuexpand");
  // Left exactly as it was.
  EXPECT_EQ(sql(path_, "PRAGMA user_version"), "7");
  EXPECT_EQ(sql(path_, "PRAGMA journal_mode"), "delete");
}

TEST_F(StateStoreTest, RefusesAFileThatIsNotADatabase) {
  fs::create_directories(dir_ + "/.gpuexpand");
  std::ofstream(path_) << std::string(4096, 'x');
  auto store = StateStore::open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, "state store " + path_ + ": cannot read: file is not a database");
}

// A store damaged inside (one page overwritten, its header intact): apply
// would otherwise record runs into it and fail somewhere later. Refused at
// open with quick_check's words, and left byte for byte as it was.
TEST_F(StateStoreTest, RefusesADamagedStoreAndWritesNothingToIt) {
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 20; ++i) {
      const int64_t run = begin(*store, apply_run({"n" + std::to_string(i)}));
      ASSERT_TRUE(store->finish_run(run, RunStatus::Succeeded, 0, "2026-11-30T03:01:00Z").ok());
    }
  }
  const int page_size = std::stoi(sql(path_, "PRAGMA page_size"));
  const int pages = std::stoi(sql(path_, "PRAGMA page_count"));
  ASSERT_GE(pages, 3);
  {
    // Page 2 on: the tables' b-tree pages (page 1 holds the header and the schema).
    std::fstream file(path_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(page_size);
    const std::string garbage(static_cast<size_t>(page_size), '\x77');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const auto contents = [this] {
    std::ifstream in(path_, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string before = contents();
  auto store = StateStore::open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.error().message.starts_with("state store " + path_ + ": it is damaged: SQLite's quick_check says \""))
      << store.error().message;
  EXPECT_NE(store.error().message.find("Restore it from a backup, or move it aside"), std::string::npos);
  EXPECT_EQ(store.error().message.find('\n'), std::string::npos) << "one line: " << store.error().message;
  EXPECT_EQ(store.error().message.find("*** in database"), std::string::npos) << store.error().message;
  EXPECT_TRUE(contents() == before) << "the damaged store was written to";
  EXPECT_FALSE(fs::exists(path_ + "-wal"));
}

// ---------------------------------------------------------------------------
// Kill safety: a controller SIGKILLed at any moment leaves a consistent store.

// The child: a controller's writes as fast as it can, until killed. Each run
// has 3 nodes, 3 phases, 3 checkpoints, 3 audit batches of 10 commands and a batch of 3 check results.
[[noreturn]] void write_until_killed(const std::string& path, int child) {
  auto opened = StateStore::open(path);
  if (!opened.ok()) _exit(10);
  StateStore& store = **opened;
  for (int k = 0;; ++k) {
    std::string prefix = "kill-" + std::to_string(child) + "-" + std::to_string(k) + "-";
    RunRecord run;
    run.command = "apply";
    run.started_at = "s";
    run.holder = lock_holder_identity();
    run.nodes = {prefix + "a", prefix + "b", prefix + "c"};
    auto begun = store.begin_run(run);
    if (!begun.ok() || !std::holds_alternative<int64_t>(*begun)) _exit(11);
    int64_t id = std::get<int64_t>(*begun);
    for (const char* name : {"base", "drivers", "fabric"}) {
      PhaseResult result{id,     prefix + "a",
                         name,   PhaseStatus::Succeeded,
                         7,      "s",
                         "f",    1.5,
                         "step", "m-" + std::to_string(id) + "-" + name};
      if (!store.record_phase(result).ok()) _exit(12);
      std::vector<AuditEntry> batch;
      for (int i = 0; i < 10; ++i) {
        batch.push_back({id, prefix + "a", "batch-" + std::to_string(id) + "-" + name, 0, "ok", i, "t"});
      }
      if (!store.record_audit(batch).ok()) _exit(13);
      if (!store.record_checkpoint({id, prefix + "a", name, "/cp", "t", json{{"n", 1}}, false}).ok()) _exit(14);
    }
    std::vector<CheckResult> checks;
    for (const char* name : {"scheduler", "gpu", "network"}) {
      checks.push_back({id, prefix + "a", name, CheckStatus::Pass, "d-" + std::to_string(id), 0.5, "t"});
    }
    if (!store.record_checks(checks).ok()) _exit(16);
    if (!store.finish_run(id, RunStatus::Succeeded, 0, "f").ok()) _exit(15);
  }
}

TEST_F(StateStoreTest, SigkillAtAnyMomentLeavesAConsistentStore) {
  ASSERT_TRUE(open());  // created and closed: no connection crosses the fork
  std::random_device seed_source;
  unsigned seed = seed_source();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> delay_us(500, 25000);
  // The last children live longer, so that runs also finish when the
  // writer is slow (a sanitizer build) and the test always writes something.
  std::uniform_int_distribution<int> long_delay_us(200000, 400000);
  for (int child = 0; child < 20; ++child) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) write_until_killed(path_, child);
    std::this_thread::sleep_for(std::chrono::microseconds(child < 15 ? delay_us(random) : long_delay_us(random)));
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child " << child << " stopped by itself: exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }

  EXPECT_EQ(sql(path_, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(sql(path_, "PRAGMA foreign_key_check"), "");
  // Something was written at all (otherwise this test proves nothing).
  EXPECT_NE(sql(path_, "SELECT count(*) FROM runs WHERE status = 'succeeded'"), "0");
  // Audit batches: all 10 or none.
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM (SELECT command FROM audit GROUP BY command HAVING count(*) != 10)"), "0");
  EXPECT_EQ(sql(path_, "SELECT count(*) % 10 FROM audit"), "0");
  // Phase rows and checkpoints are complete.
  EXPECT_EQ(sql(path_,
                "SELECT count(*) FROM phase_results WHERE status != 'succeeded' OR changes != 7 OR "
                "started_at != 's' OR finished_at != 'f' OR duration_s != 1.5 OR failed_step != 'step' OR "
                "message != 'm-' || run_id || '-' || phase"),
            "0");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM checkpoints WHERE manifest != '{\"n\":1}' OR remote_path != '/cp'"), "0");
  // A node's check results: all 3 or none, complete.
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM (SELECT run_id FROM check_results GROUP BY run_id HAVING count(*) != 3)"),
            "0");
  EXPECT_EQ(sql(path_, "SELECT count(*) FROM check_results WHERE detail != 'd-' || run_id OR seconds != 0.5"), "0");
  // A run and its nodes and locks were written together; finishing released the locks together.
  EXPECT_EQ(
      sql(path_, "SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM run_nodes n WHERE n.run_id = r.id) != 3"),
      "0");
  EXPECT_EQ(sql(path_,
                "SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM locks l WHERE l.run_id = r.id) != "
                "CASE r.status WHEN 'running' THEN 3 ELSE 0 END"),
            "0");
  EXPECT_EQ(
      sql(path_, "SELECT count(*) FROM runs WHERE status = 'succeeded' AND (exit_code != 0 OR finished_at != 'f')"),
      "0");

  // And the store opens, naming the runs the kills left behind.
  auto store = open();
  ASSERT_TRUE(store);
  auto left = store->interrupted_runs();
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(std::to_string(left->size()), sql(path_, "SELECT count(*) FROM runs WHERE status = 'running'"));
}

// The resume story end to end: a controller dies mid-phase; the next apply is
// refused with a hint, unlock --force frees the nodes, and the finished phases are known.
TEST_F(StateStoreTest, AfterAKilledControllerTheNextApplyCanResume) {
  ASSERT_TRUE(open());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto opened = StateStore::open(path_);
    if (!opened.ok()) _exit(10);
    auto begun = (*opened)->begin_run(apply_run({"n1", "n2"}, "2026-11-30T03:00:00Z", lock_holder_identity()));
    if (!begun.ok() || !std::holds_alternative<int64_t>(*begun)) _exit(11);
    int64_t id = std::get<int64_t>(*begun);
    for (const char* node : {"n1", "n2"}) {
      if (!(*opened)->record_phase(phase(id, node, "base", PhaseStatus::Succeeded)).ok()) _exit(12);
    }
    if (!(*opened)->record_phase(phase(id, "n1", "drivers", PhaseStatus::Running)).ok()) _exit(13);
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);

  auto store = open();
  ASSERT_TRUE(store);
  auto left = store->interrupted_runs();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(left->front().id, 1);
  EXPECT_EQ(left->front().holder.substr(left->front().holder.rfind(' ') + 1), std::to_string(pid));

  LockConflict found = conflict(*store, apply_run({"n2", "n1"}, "2026-11-30T04:00:00Z", lock_holder_identity()));
  EXPECT_FALSE(found.holder_alive);
  EXPECT_EQ(found.nodes, (std::vector<std::string>{"n2", "n1"}));
  EXPECT_NE(describe(found).find("that process is gone"), std::string::npos);

  ASSERT_TRUE(store->force_unlock({}, "root@lab pid 1", "2026-11-30T04:00:00Z").ok());
  EXPECT_EQ((*store->run(1))->status, RunStatus::Interrupted);
  EXPECT_TRUE(store->interrupted_runs()->empty());
  EXPECT_EQ(begin(*store, apply_run({"n2", "n1"}, "2026-11-30T04:00:01Z", lock_holder_identity())), 2);
  EXPECT_EQ(summary(*store->latest_phase_results({"n1", "n2"})),
            (std::vector<std::string>{"1/n1/base=succeeded", "1/n1/drivers=running", "1/n2/base=succeeded"}));
}

}  // namespace
}  // namespace gpuexpand
