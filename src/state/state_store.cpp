#include "gpuexpand/state/state_store.hpp"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "sqlite_helpers.hpp"

namespace gpuexpand {

using sqlite::Statement;
using sqlite::Transaction;

// ---------------------------------------------------------------------------
// Schema. Each step runs once, in its own transaction together with the
// `PRAGMA user_version = N` that records it, so a crash mid-migration leaves
// the previous version intact. Never edit a released step: append a new one
// (and raise kSchemaVersion) so existing stores are carried forward.
// Text columns are NOT NULL with '' for "none" so that reads need no NULL cases.

namespace {

struct Migration {
  int version;
  const char* sql;
};

constexpr std::array kMigrations{
    Migration{1, R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: the largest id is the newest run
  command TEXT NOT NULL,
  spec_file TEXT NOT NULL,
  spec_sha256 TEXT NOT NULL,
  plan_sha256 TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  exit_code INTEGER NOT NULL,
  holder TEXT NOT NULL
);
CREATE TABLE run_nodes (
  run_id INTEGER NOT NULL REFERENCES runs (id),
  position INTEGER NOT NULL,
  node TEXT NOT NULL,
  PRIMARY KEY (run_id, node)
);
-- An explicit INTEGER PRIMARY KEY keeps the order rows were first written
-- (VACUUM may renumber an implicit rowid).
CREATE TABLE phase_results (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  node TEXT NOT NULL,
  phase TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK (status IN ('running', 'succeeded', 'unchanged', 'failed', 'rolled-back', 'skipped')),
  changes INTEGER NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  duration_s REAL NOT NULL,
  failed_step TEXT NOT NULL,
  message TEXT NOT NULL,
  UNIQUE (run_id, node, phase)
);
CREATE TABLE checkpoints (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  node TEXT NOT NULL,
  phase TEXT NOT NULL,
  remote_path TEXT NOT NULL,
  created_at TEXT NOT NULL,
  manifest TEXT NOT NULL,  -- JSON
  restored INTEGER NOT NULL CHECK (restored IN (0, 1)),
  UNIQUE (run_id, node, phase)
);
CREATE INDEX checkpoints_by_node ON checkpoints (node, run_id);
CREATE TABLE audit (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  node TEXT NOT NULL,
  command TEXT NOT NULL,
  exit_code INTEGER NOT NULL,
  failure TEXT NOT NULL,
  duration_ms INTEGER NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX audit_by_run ON audit (run_id);
CREATE TABLE locks (
  node TEXT PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  holder TEXT NOT NULL,
  since TEXT NOT NULL
);
CREATE INDEX locks_by_run ON locks (run_id);
)sql"},
    Migration{2, R"sql(
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  who TEXT NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL  -- JSON
);
CREATE INDEX phase_results_latest ON phase_results (node, phase, run_id);
)sql"},
    Migration{3, R"sql(
-- Acceptance checks (the acceptance phase of apply, verify). CHECK is an SQL
-- keyword: the column is check_name.
CREATE TABLE check_results (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  node TEXT NOT NULL,
  check_name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pass', 'fail', 'skip')),
  detail TEXT NOT NULL,
  seconds REAL NOT NULL,
  recorded_at TEXT NOT NULL,
  UNIQUE (run_id, node, check_name)
);
CREATE INDEX check_results_latest ON check_results (node, check_name, run_id);
)sql"},
};
static_assert(kMigrations.back().version == StateStore::kSchemaVersion, "append a migration step for each version");

Error prefixed(const std::string& path, const std::string& doing, const Error& cause) {
  return make_error("state store " + path + ": " + doing + ": " + cause.message);
}

Result<int> read_user_version(sqlite3* db) {
  auto stmt = Statement::prepare(db, "PRAGMA user_version");
  if (!stmt) return stmt.error();
  auto row = stmt->step();
  if (!row) return row.error();
  return *row ? stmt->integer(0) : 0;
}

Error newer_schema(const std::string& path, int version) {
  return make_error("state store " + path + ": schema version " + std::to_string(version) +
                    " is newer than this gpuexpand understands (" + std::to_string(StateStore::kSchemaVersion) +
                    "); upgrade gpuexpand");
}

// Runs `body` inside BEGIN IMMEDIATE … COMMIT; any error rolls everything back.
template <class Body>
Result<void> in_transaction(sqlite3* db, Body&& body) {
  auto tx = Transaction::begin(db);
  if (!tx) return tx.error();
  Result<void> done = body();
  if (!done) return done;
  return tx->commit();
}

// Text for a JSON column. `replace`: invalid UTF-8 in a name must not throw out of the API.
std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A JSON array of strings, bound to `json_each(?)` for "node IN (…)" filters.
std::string json_list(const std::vector<std::string>& items) { return dump_json(nlohmann::json(items)); }

// WAL: readers never block the writer, and a killed writer leaves only an
// uncommitted tail of the log that the next open ignores. synchronous=NORMAL
// is durable against process crashes (only power loss can drop the last commits).
Result<void> configure(sqlite3* db) {
  {
    auto mode = Statement::prepare(db, "PRAGMA journal_mode = WAL");
    if (!mode) return mode.error();
    auto row = mode->step();
    if (!row) return row.error();
    std::string got = *row ? mode->text(0) : "unknown";
    if (got != "wal") return make_error("journal mode is " + got + ", not wal");
  }
  return sqlite::exec(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON");
}

std::string this_hostname() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

}  // namespace

// ---------------------------------------------------------------------------
// Status names.

std::string to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Running:
      return "running";
    case RunStatus::Succeeded:
      return "succeeded";
    case RunStatus::Failed:
      return "failed";
    case RunStatus::Interrupted:
      return "interrupted";
  }
  return "running";
}

std::string to_string(PhaseStatus status) {
  switch (status) {
    case PhaseStatus::Running:
      return "running";
    case PhaseStatus::Succeeded:
      return "succeeded";
    case PhaseStatus::Unchanged:
      return "unchanged";
    case PhaseStatus::Failed:
      return "failed";
    case PhaseStatus::RolledBack:
      return "rolled-back";
    case PhaseStatus::Skipped:
      return "skipped";
  }
  return "running";
}

std::optional<RunStatus> parse_run_status(std::string_view text) {
  for (auto status : {RunStatus::Running, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Interrupted}) {
    if (to_string(status) == text) return status;
  }
  return std::nullopt;
}

std::optional<PhaseStatus> parse_phase_status(std::string_view text) {
  for (auto status : {PhaseStatus::Running, PhaseStatus::Succeeded, PhaseStatus::Unchanged, PhaseStatus::Failed,
                      PhaseStatus::RolledBack, PhaseStatus::Skipped}) {
    if (to_string(status) == text) return status;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Lock holders.

std::string lock_holder_identity() {
  std::string user;
  std::array<char, 4096> buffer{};
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    user = found->pw_name;
  } else if (const char* env = std::getenv("USER"); env != nullptr && *env != '\0') {
    user = env;
  } else {
    user = std::to_string(geteuid());
  }
  return user + "@" + this_hostname() + " pid " + std::to_string(getpid());
}

bool holder_alive(std::string_view holder) {
  constexpr std::string_view kPid = " pid ";
  size_t pid_at = holder.rfind(kPid);
  if (pid_at == std::string_view::npos) return true;
  std::string_view who = holder.substr(0, pid_at);
  std::string_view digits = holder.substr(pid_at + kPid.size());
  size_t at = who.rfind('@');
  std::string_view host = at == std::string_view::npos ? who : who.substr(at + 1);
  long pid = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0 || pid > INT_MAX) return true;
  if (host != this_hostname()) return true;  // another machine: we cannot tell
  // EPERM means the process exists under another user: alive.
  return !(kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
}

std::string describe(const LockConflict& conflict) {
  std::string nodes;
  for (const auto& node : conflict.nodes) nodes += (nodes.empty() ? "" : ", ") + node;
  std::string text = (conflict.nodes.size() == 1 ? "node " + nodes + " is" : "nodes " + nodes + " are") +
                     " locked by run " + std::to_string(conflict.run_id) + " (" + conflict.holder + ") since " +
                     conflict.since;
  if (!conflict.holder_alive) {
    text += " — that process is gone; run `gpuexpand unlock --force` if no other apply is running";
  }
  return text;
}

// ---------------------------------------------------------------------------
// JSON.

void to_json(nlohmann::json& out, const RunRecord& run) {
  out = {{"id", run.id},
         {"command", run.command},
         {"spec_file", run.spec_file},
         {"spec_sha256", run.spec_sha256},
         {"plan_sha256", run.plan_sha256},
         {"started_at", run.started_at},
         {"finished_at", run.finished_at},
         {"status", to_string(run.status)},
         {"exit_code", run.exit_code},
         {"holder", run.holder},
         {"nodes", run.nodes}};
}

void to_json(nlohmann::json& out, const PhaseResult& result) {
  out = {{"run_id", result.run_id},
         {"node", result.node},
         {"phase", result.phase},
         {"status", to_string(result.status)},
         {"changes", result.changes},
         {"started_at", result.started_at},
         {"finished_at", result.finished_at},
         {"duration_s", result.duration_s},
         {"failed_step", result.failed_step},
         {"message", result.message}};
}

void to_json(nlohmann::json& out, const CheckpointRecord& checkpoint) {
  out = {{"run_id", checkpoint.run_id},         {"node", checkpoint.node},
         {"phase", checkpoint.phase},           {"remote_path", checkpoint.remote_path},
         {"created_at", checkpoint.created_at}, {"manifest", checkpoint.manifest},
         {"restored", checkpoint.restored}};
}

void to_json(nlohmann::json& out, const AuditEntry& entry) {
  out = {{"run_id", entry.run_id},
         {"node", entry.node},
         {"command", entry.command},
         {"exit_code", entry.exit_code},
         {"failure", entry.failure},
         {"duration_ms", entry.duration_ms},
         {"at", entry.at}};
}

void to_json(nlohmann::json& out, const LockConflict& conflict) {
  out = {{"run_id", conflict.run_id},
         {"holder", conflict.holder},
         {"since", conflict.since},
         {"nodes", conflict.nodes},
         {"holder_alive", conflict.holder_alive}};
}

void to_json(nlohmann::json& out, const EventRecord& event) {
  out = {{"id", event.id}, {"at", event.at}, {"who", event.who}, {"kind", event.kind}, {"detail", event.detail}};
}

void to_json(nlohmann::json& out, const CheckResult& result) {
  out = {{"run_id", result.run_id},          {"node", result.node},     {"check", result.check},
         {"status", check_status_name(result.status)}, {"detail", result.detail}, {"seconds", result.seconds},
         {"recorded_at", result.recorded_at}};
}

// ---------------------------------------------------------------------------
// Opening and migrating.

Result<std::unique_ptr<StateStore>> StateStore::open(const std::string& path) {
  auto fail = [&](const std::string& doing, const Error& cause) { return prefixed(path, doing, cause); };

  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) return fail("cannot create directory " + parent.string(), make_error(ec.message()));
  }

  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  // Owned from here: closed on every early return below.
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close_v2);
  if (rc != SQLITE_OK) return fail("cannot open", make_error(sqlite::last_error(raw)));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 5000);

  // Refuse a newer schema before changing anything in the file.
  auto version = read_user_version(raw);
  if (!version) return fail("cannot read", version.error());
  if (*version > kSchemaVersion) return newer_schema(path, *version);

  if (auto configured = configure(raw); !configured) return fail("cannot configure", configured.error());

  for (const auto& step : kMigrations) {
    if (step.version <= *version) continue;
    // Re-read inside the write lock: another process may have migrated meanwhile.
    std::optional<Error> refused;
    auto migrated = in_transaction(raw, [&]() -> Result<void> {
      auto current = read_user_version(raw);
      if (!current) return current.error();
      if (*current > kSchemaVersion) refused = newer_schema(path, *current);
      if (refused) return *refused;
      if (*current >= step.version) return {};
      if (auto applied = sqlite::exec(raw, step.sql); !applied) return applied.error();
      return sqlite::exec(raw, "PRAGMA user_version = " + std::to_string(step.version));
    });
    if (refused) return *refused;
    if (!migrated) return fail("migrating to schema version " + std::to_string(step.version), migrated.error());
    *version = step.version;
  }
  return std::unique_ptr<StateStore>(new StateStore(db.release(), path, kSchemaVersion));
}

StateStore::~StateStore() { sqlite3_close_v2(db_); }

Error StateStore::error(const std::string& doing, const Error& cause) const { return prefixed(path_, doing, cause); }

// ---------------------------------------------------------------------------
// Runs and locks.

Result<std::variant<int64_t, LockConflict>> StateStore::begin_run(RunRecord run) {
  const std::string doing = "beginning the " + run.command + " run";
  if (run.holder.empty()) run.holder = lock_holder_identity();
  std::vector<std::string> nodes;
  std::set<std::string> seen;
  for (auto& node : run.nodes) {
    if (seen.insert(node).second) nodes.push_back(std::move(node));
  }

  auto tx = Transaction::begin(db_);
  if (!tx) return error(doing, tx.error());

  // Conflicts: locks on our nodes held by runs that are still running. A lock
  // of a run that is over (should not exist: finish_run releases) is stale and taken over.
  auto held = Statement::prepare(db_,
                                 "SELECT l.run_id, l.holder, l.since FROM locks l JOIN runs r ON r.id = l.run_id "
                                 "WHERE l.node = ?1 AND r.status = 'running'");
  if (!held) return error(doing, held.error());
  std::map<int64_t, LockConflict> conflicts;  // by run id: the oldest is reported
  for (const auto& node : nodes) {
    held->reset();
    held->bind(1, node);
    auto row = held->step();
    if (!row) return error(doing, row.error());
    if (!*row) continue;
    auto& conflict = conflicts[held->int64(0)];
    if (conflict.nodes.empty()) {
      conflict.run_id = held->int64(0);
      conflict.holder = held->text(1);
      conflict.since = held->text(2);
      conflict.holder_alive = holder_alive(conflict.holder);
    }
    conflict.nodes.push_back(node);
  }
  if (!conflicts.empty()) return std::variant<int64_t, LockConflict>(conflicts.begin()->second);  // rolls back

  auto insert =
      Statement::prepare(db_,
                         "INSERT INTO runs (command, spec_file, spec_sha256, plan_sha256, started_at, "
                         "finished_at, status, exit_code, holder) VALUES (?1, ?2, ?3, ?4, ?5, '', ?6, -1, ?7)");
  if (!insert) return error(doing, insert.error());
  insert->bind(1, run.command).bind(2, run.spec_file).bind(3, run.spec_sha256).bind(4, run.plan_sha256);
  insert->bind(5, run.started_at).bind(6, to_string(RunStatus::Running)).bind(7, run.holder);
  if (auto done = insert->run(); !done) return error(doing, done.error());
  int64_t run_id = sqlite3_last_insert_rowid(db_);

  auto member = Statement::prepare(db_, "INSERT INTO run_nodes (run_id, position, node) VALUES (?1, ?2, ?3)");
  if (!member) return error(doing, member.error());
  auto lock = Statement::prepare(db_,
                                 "INSERT INTO locks (node, run_id, holder, since) VALUES (?1, ?2, ?3, ?4) "
                                 "ON CONFLICT (node) DO UPDATE SET run_id = excluded.run_id, "
                                 "holder = excluded.holder, since = excluded.since");
  if (!lock) return error(doing, lock.error());
  int position = 0;
  for (const auto& node : nodes) {
    member->reset();
    member->bind(1, run_id).bind(2, position++).bind(3, node);
    if (auto done = member->run(); !done) return error(doing, done.error());
    lock->reset();
    lock->bind(1, node).bind(2, run_id).bind(3, run.holder).bind(4, run.started_at);
    if (auto done = lock->run(); !done) return error(doing, done.error());
  }
  if (auto committed = tx->commit(); !committed) return error(doing, committed.error());
  return std::variant<int64_t, LockConflict>(run_id);
}

Result<void> StateStore::finish_run(int64_t run_id, RunStatus status, int exit_code, const std::string& finished_at) {
  const std::string doing = "finishing run " + std::to_string(run_id);
  if (status == RunStatus::Running) return error(doing, make_error("a finished run cannot be running"));
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto update =
        Statement::prepare(db_, "UPDATE runs SET status = ?1, exit_code = ?2, finished_at = ?3 WHERE id = ?4");
    if (!update) return update.error();
    update->bind(1, to_string(status)).bind(2, exit_code).bind(3, finished_at).bind(4, run_id);
    if (auto ran = update->run(); !ran) return ran;
    if (sqlite3_changes(db_) == 0) return make_error("no such run");
    auto release = Statement::prepare(db_, "DELETE FROM locks WHERE run_id = ?1");
    if (!release) return release.error();
    release->bind(1, run_id);
    return release->run();
  });
  if (!done) return error(doing, done.error());
  return {};
}

Result<std::vector<LockConflict>> StateStore::force_unlock(const std::vector<std::string>& nodes,
                                                           const std::string& who, const std::string& at) {
  const std::string doing = "force-unlocking";
  const std::string filter = "(?1 = 0 OR node IN (SELECT value FROM json_each(?2)))";
  std::vector<LockConflict> released;
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto held = Statement::prepare(
        db_, "SELECT run_id, holder, since, node FROM locks WHERE " + filter + " ORDER BY run_id, node");
    if (!held) return held.error();
    held->bind(1, !nodes.empty()).bind(2, json_list(nodes));
    for (;;) {
      auto row = held->step();
      if (!row) return row.error();
      if (!*row) break;
      if (released.empty() || released.back().run_id != held->int64(0)) {
        released.push_back({held->int64(0), held->text(1), held->text(2), {}, holder_alive(held->text(1))});
      }
      released.back().nodes.push_back(held->text(3));
    }

    auto release = Statement::prepare(db_, "DELETE FROM locks WHERE " + filter);
    if (!release) return release.error();
    release->bind(1, !nodes.empty()).bind(2, json_list(nodes));
    if (auto ran = release->run(); !ran) return ran;

    // A run that still holds locks on other nodes stays running: its remaining locks keep protecting them.
    auto interrupt =
        Statement::prepare(db_,
                           "UPDATE runs SET status = 'interrupted', finished_at = ?1 WHERE id = ?2 "
                           "AND status = 'running' AND NOT EXISTS (SELECT 1 FROM locks WHERE run_id = ?2)");
    if (!interrupt) return interrupt.error();
    nlohmann::json detail = {{"nodes", nodes}, {"released", released}};
    for (const auto& conflict : released) {
      interrupt->reset();
      interrupt->bind(1, at).bind(2, conflict.run_id);
      if (auto ran = interrupt->run(); !ran) return ran;
    }

    auto log =
        Statement::prepare(db_, "INSERT INTO events (at, who, kind, detail) VALUES (?1, ?2, 'force-unlock', ?3)");
    if (!log) return log.error();
    log->bind(1, at).bind(2, who).bind(3, dump_json(detail));
    return log->run();
  });
  if (!done) return error(doing, done.error());
  return released;
}

// ---------------------------------------------------------------------------
// Phase results, checkpoints, audit.

Result<void> StateStore::record_phase(const PhaseResult& result) {
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto upsert = Statement::prepare(
        db_,
        "INSERT INTO phase_results (run_id, node, phase, status, changes, started_at, finished_at, duration_s, "
        "failed_step, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
        "ON CONFLICT (run_id, node, phase) DO UPDATE SET status = excluded.status, changes = excluded.changes, "
        "started_at = excluded.started_at, finished_at = excluded.finished_at, duration_s = excluded.duration_s, "
        "failed_step = excluded.failed_step, message = excluded.message");
    if (!upsert) return upsert.error();
    upsert->bind(1, result.run_id).bind(2, result.node).bind(3, result.phase).bind(4, to_string(result.status));
    upsert->bind(5, result.changes).bind(6, result.started_at).bind(7, result.finished_at);
    upsert->bind(8, result.duration_s).bind(9, result.failed_step).bind(10, result.message);
    return upsert->run();
  });
  if (!done) {
    return error("recording phase " + result.phase + " of " + result.node + " in run " + std::to_string(result.run_id),
                 done.error());
  }
  return {};
}

Result<void> StateStore::record_checkpoint(const CheckpointRecord& checkpoint) {
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto upsert = Statement::prepare(
        db_,
        "INSERT INTO checkpoints (run_id, node, phase, remote_path, created_at, manifest, restored) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (run_id, node, phase) DO UPDATE SET "
        "remote_path = excluded.remote_path, created_at = excluded.created_at, manifest = excluded.manifest, "
        "restored = excluded.restored");
    if (!upsert) return upsert.error();
    upsert->bind(1, checkpoint.run_id).bind(2, checkpoint.node).bind(3, checkpoint.phase);
    upsert->bind(4, checkpoint.remote_path).bind(5, checkpoint.created_at);
    upsert->bind(6, dump_json(checkpoint.manifest));
    upsert->bind(7, checkpoint.restored);
    return upsert->run();
  });
  if (!done) {
    return error("recording the checkpoint before " + checkpoint.phase + " on " + checkpoint.node + " in run " +
                     std::to_string(checkpoint.run_id),
                 done.error());
  }
  return {};
}

Result<void> StateStore::mark_checkpoint_restored(int64_t run_id, const std::string& node, const std::string& phase) {
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto update =
        Statement::prepare(db_, "UPDATE checkpoints SET restored = 1 WHERE run_id = ?1 AND node = ?2 AND phase = ?3");
    if (!update) return update.error();
    update->bind(1, run_id).bind(2, node).bind(3, phase);
    if (auto ran = update->run(); !ran) return ran;
    if (sqlite3_changes(db_) == 0) return make_error("no such checkpoint");
    return {};
  });
  if (!done) {
    return error(
        "marking the checkpoint before " + phase + " on " + node + " in run " + std::to_string(run_id) + " restored",
        done.error());
  }
  return {};
}

Result<void> StateStore::record_audit(const std::vector<AuditEntry>& entries) {
  if (entries.empty()) return {};
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto insert = Statement::prepare(db_,
                                     "INSERT INTO audit (run_id, node, command, exit_code, failure, duration_ms, at) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!insert) return insert.error();
    for (const auto& entry : entries) {
      insert->reset();
      insert->bind(1, entry.run_id).bind(2, entry.node).bind(3, entry.command).bind(4, entry.exit_code);
      insert->bind(5, entry.failure).bind(6, entry.duration_ms).bind(7, entry.at);
      if (auto ran = insert->run(); !ran) return ran;
    }
    return {};
  });
  if (!done) return error("recording the audit of " + std::to_string(entries.size()) + " commands", done.error());
  return {};
}

Result<void> StateStore::record_checks(const std::vector<CheckResult>& results) {
  if (results.empty()) return {};
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto upsert =
        Statement::prepare(db_,
                           "INSERT INTO check_results (run_id, node, check_name, status, detail, seconds, recorded_at) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (run_id, node, check_name) DO UPDATE SET "
                           "status = excluded.status, detail = excluded.detail, seconds = excluded.seconds, "
                           "recorded_at = excluded.recorded_at");
    if (!upsert) return upsert.error();
    for (const auto& result : results) {
      if (result.node.empty() || result.check.empty()) return make_error("a check result needs a node and a check");
      upsert->reset();
      upsert->bind(1, result.run_id).bind(2, result.node).bind(3, result.check).bind(4, std::string(check_status_name(result.status)));
      upsert->bind(5, result.detail).bind(6, result.seconds).bind(7, result.recorded_at);
      if (auto ran = upsert->run(); !ran) return ran;
    }
    return {};
  });
  if (!done) {
    // One node and run (the journal's case) is named; a mixed batch is counted.
    bool one_node = true;
    for (const auto& result : results) {
      one_node = one_node && result.node == results.front().node && result.run_id == results.front().run_id;
    }
    return error(one_node ? "recording the acceptance checks of " + results.front().node + " in run " +
                                std::to_string(results.front().run_id)
                          : "recording " + std::to_string(results.size()) + " acceptance check results",
                 done.error());
  }
  return {};
}

// ---------------------------------------------------------------------------
// Queries.

Result<std::vector<RunRecord>> StateStore::select_runs(const std::string& where_and_order, int64_t bound) {
  auto select = Statement::prepare(db_,
                                   "SELECT id, command, spec_file, spec_sha256, plan_sha256, started_at, finished_at, "
                                   "status, exit_code, holder FROM runs " +
                                       where_and_order);
  if (!select) return error("reading runs", select.error());
  auto members = Statement::prepare(db_, "SELECT node FROM run_nodes WHERE run_id = ?1 ORDER BY position");
  if (!members) return error("reading runs", members.error());
  select->bind(1, bound);
  std::vector<RunRecord> runs;
  for (;;) {
    auto row = select->step();
    if (!row) return error("reading runs", row.error());
    if (!*row) break;
    RunRecord run;
    run.id = select->int64(0);
    run.command = select->text(1);
    run.spec_file = select->text(2);
    run.spec_sha256 = select->text(3);
    run.plan_sha256 = select->text(4);
    run.started_at = select->text(5);
    run.finished_at = select->text(6);
    auto status = parse_run_status(select->text(7));
    if (!status) return error("reading run " + std::to_string(run.id), make_error("unknown status " + select->text(7)));
    run.status = *status;
    run.exit_code = select->integer(8);
    run.holder = select->text(9);
    members->reset();
    members->bind(1, run.id);
    for (;;) {
      auto node = members->step();
      if (!node) return error("reading run " + std::to_string(run.id), node.error());
      if (!*node) break;
      run.nodes.push_back(members->text(0));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

Result<std::optional<RunRecord>> StateStore::run(int64_t id) {
  auto found = select_runs("WHERE id = ?1", id);
  if (!found) return found.error();
  if (found->empty()) return std::optional<RunRecord>();
  return std::optional<RunRecord>(std::move(found->front()));
}

Result<std::vector<RunRecord>> StateStore::runs(int limit) {
  return select_runs("ORDER BY id DESC LIMIT ?1", limit > 0 ? limit : -1);
}

Result<std::vector<RunRecord>> StateStore::interrupted_runs() {
  auto running = select_runs("WHERE status = 'running' ORDER BY id DESC LIMIT ?1", -1);
  if (!running) return running.error();
  std::vector<RunRecord> left;
  for (auto& run : *running) {
    if (!holder_alive(run.holder)) left.push_back(std::move(run));
  }
  return left;
}

namespace {

constexpr const char* kPhaseColumns =
    "run_id, node, phase, status, changes, started_at, finished_at, duration_s, failed_step, message";

Result<std::vector<PhaseResult>> read_phases(Statement& select) {
  std::vector<PhaseResult> results;
  for (;;) {
    auto row = select.step();
    if (!row) return row.error();
    if (!*row) break;
    PhaseResult result;
    result.run_id = select.int64(0);
    result.node = select.text(1);
    result.phase = select.text(2);
    auto status = parse_phase_status(select.text(3));
    if (!status) return make_error("unknown phase status " + select.text(3));
    result.status = *status;
    result.changes = select.integer(4);
    result.started_at = select.text(5);
    result.finished_at = select.text(6);
    result.duration_s = select.real(7);
    result.failed_step = select.text(8);
    result.message = select.text(9);
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace

Result<std::vector<PhaseResult>> StateStore::phase_results(int64_t run_id) {
  const std::string doing = "reading the phases of run " + std::to_string(run_id);
  auto select = Statement::prepare(
      db_, std::string("SELECT ") + kPhaseColumns + " FROM phase_results WHERE run_id = ?1 ORDER BY id");
  if (!select) return error(doing, select.error());
  select->bind(1, run_id);
  auto results = read_phases(*select);
  if (!results) return error(doing, results.error());
  return results;
}

Result<std::vector<PhaseResult>> StateStore::latest_phase_results(const std::vector<std::string>& nodes) {
  const std::string doing = "reading the latest phase results";
  // Newest = the largest run id that recorded that (node, phase): run ids only grow.
  auto select = Statement::prepare(
      db_, std::string("SELECT ") + kPhaseColumns +
               " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY node, phase ORDER BY run_id DESC) AS newest "
               "FROM phase_results WHERE ?1 = 0 OR node IN (SELECT value FROM json_each(?2))) "
               "WHERE newest = 1 ORDER BY node, id");
  if (!select) return error(doing, select.error());
  select->bind(1, !nodes.empty()).bind(2, json_list(nodes));
  auto results = read_phases(*select);
  if (!results) return error(doing, results.error());
  return results;
}

Result<std::vector<CheckpointRecord>> StateStore::checkpoints(const std::string& node) {
  const std::string doing = "reading the checkpoints of " + node;
  auto select = Statement::prepare(db_,
                                   "SELECT run_id, node, phase, remote_path, created_at, manifest, restored "
                                   "FROM checkpoints WHERE node = ?1 ORDER BY run_id DESC, id DESC");
  if (!select) return error(doing, select.error());
  select->bind(1, node);
  std::vector<CheckpointRecord> checkpoints;
  for (;;) {
    auto row = select->step();
    if (!row) return error(doing, row.error());
    if (!*row) break;
    CheckpointRecord checkpoint;
    checkpoint.run_id = select->int64(0);
    checkpoint.node = select->text(1);
    checkpoint.phase = select->text(2);
    checkpoint.remote_path = select->text(3);
    checkpoint.created_at = select->text(4);
    checkpoint.manifest = nlohmann::json::parse(select->text(5), nullptr, /*allow_exceptions=*/false);
    if (checkpoint.manifest.is_discarded()) {
      return error(doing, make_error("the manifest of the checkpoint before " + checkpoint.phase + " in run " +
                                     std::to_string(checkpoint.run_id) + " is not JSON"));
    }
    checkpoint.restored = select->integer(6) != 0;
    checkpoints.push_back(std::move(checkpoint));
  }
  return checkpoints;
}

Result<std::vector<AuditEntry>> StateStore::audit(int64_t run_id) {
  const std::string doing = "reading the audit of run " + std::to_string(run_id);
  auto select = Statement::prepare(db_,
                                   "SELECT run_id, node, command, exit_code, failure, duration_ms, at FROM audit "
                                   "WHERE run_id = ?1 ORDER BY id");
  if (!select) return error(doing, select.error());
  select->bind(1, run_id);
  std::vector<AuditEntry> entries;
  for (;;) {
    auto row = select->step();
    if (!row) return error(doing, row.error());
    if (!*row) break;
    entries.push_back({select->int64(0), select->text(1), select->text(2), select->integer(3), select->text(4),
                       select->int64(5), select->text(6)});
  }
  return entries;
}

namespace {

constexpr const char* kCheckColumns = "run_id, node, check_name, status, detail, seconds, recorded_at";

Result<std::vector<CheckResult>> read_checks(Statement& select) {
  std::vector<CheckResult> results;
  for (;;) {
    auto row = select.step();
    if (!row) return row.error();
    if (!*row) break;
    const std::string status = select.text(3);
    const auto parsed = parse_check_status(status);
    // The table's CHECK constraint allows no other word; a store edited by hand may.
    if (!parsed) return make_error("check_results: unknown status '" + status + "' (pass, fail or skip)");
    results.push_back({select.int64(0), select.text(1), select.text(2), *parsed, select.text(4), select.real(5),
                       select.text(6)});
  }
  return results;
}

}  // namespace

Result<std::vector<CheckResult>> StateStore::checks_of_run(int64_t run_id) {
  const std::string doing = "reading the acceptance checks of run " + std::to_string(run_id);
  auto select = Statement::prepare(
      db_, std::string("SELECT ") + kCheckColumns + " FROM check_results WHERE run_id = ?1 ORDER BY id");
  if (!select) return error(doing, select.error());
  select->bind(1, run_id);
  auto results = read_checks(*select);
  if (!results) return error(doing, results.error());
  return results;
}

Result<std::vector<CheckResult>> StateStore::latest_checks(const std::vector<std::string>& nodes) {
  const std::string doing = "reading the latest acceptance checks";
  // Newest = the largest run id that recorded that (node, check): run ids only grow.
  auto select = Statement::prepare(
      db_, std::string("SELECT ") + kCheckColumns +
               " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY node, check_name ORDER BY run_id DESC) AS newest "
               "FROM check_results WHERE ?1 = 0 OR node IN (SELECT value FROM json_each(?2))) "
               "WHERE newest = 1 ORDER BY node, id");
  if (!select) return error(doing, select.error());
  select->bind(1, !nodes.empty()).bind(2, json_list(nodes));
  auto results = read_checks(*select);
  if (!results) return error(doing, results.error());
  return results;
}

Result<std::vector<EventRecord>> StateStore::events() {
  const std::string doing = "reading events";
  auto select = Statement::prepare(db_, "SELECT id, at, who, kind, detail FROM events ORDER BY id");
  if (!select) return error(doing, select.error());
  std::vector<EventRecord> events;
  for (;;) {
    auto row = select->step();
    if (!row) return error(doing, row.error());
    if (!*row) break;
    EventRecord event{select->int64(0), select->text(1), select->text(2), select->text(3),
                      nlohmann::json::parse(select->text(4), nullptr, /*allow_exceptions=*/false)};
    if (event.detail.is_discarded()) event.detail = select->text(4);  // keep what is there, readable
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace gpuexpand
