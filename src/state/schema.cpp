#include "gpuexpand/state/state_store.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>

#include "gpuexpand/util/text_diff.hpp"
#include "sqlite_helpers.hpp"

#include "store_support.hpp"

namespace gpuexpand {

using sqlite::Statement;
using sqlite::Transaction;
using namespace store_detail;  // NOLINT: this layer's own helpers

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
    Migration{4, R"sql(
-- How each node of a run ended ('' while it runs, or when its controller
-- died first): what `--limit @failed` retries.
ALTER TABLE run_nodes ADD COLUMN result TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN message TEXT NOT NULL DEFAULT '';
)sql"},
    Migration{5, R"sql(
-- Who ran each remote command and what it was fed (`gpuexpand audit`);
-- commands recorded before this version read as user '' and no stdin.
ALTER TABLE audit ADD COLUMN user TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN sudo INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit ADD COLUMN stdin_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit ADD COLUMN stdin_sha256 TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_by_node ON audit (node, run_id);
)sql"},
    Migration{6, R"sql(
-- Each node's last answer to its probe's package sections (dpkg-query,
-- apt-cache), reused while the files they read are unchanged
-- (facts/probe.hpp). A cache: losing a row costs one probe those tools.
CREATE TABLE package_answers (
  node TEXT PRIMARY KEY,
  answer_key TEXT NOT NULL,
  inputs TEXT NOT NULL,
  output TEXT NOT NULL,
  saved_at TEXT NOT NULL
);
)sql"},
};
static_assert(kMigrations.back().version == StateStore::kSchemaVersion, "append a migration step for each version");
Result<int> read_user_version(sqlite3* db) {
  auto stmt = Statement::prepare(db, "PRAGMA user_version");
  if (!stmt) return stmt.error();
  auto row = stmt->step();
  if (!row) return row.error();
  return *row ? stmt->integer(0) : 0;
}

// The first problem PRAGMA quick_check finds; empty when it finds none.
// A file too damaged to read at all is an error, with SQLite's words.
Result<std::string> first_damage(sqlite3* db) {
  auto stmt = Statement::prepare(db, "PRAGMA quick_check(1)");
  if (!stmt) return stmt.error();
  auto row = stmt->step();
  if (!row) return row.error();
  const std::string said = *row ? stmt->text(0) : "ok";
  if (said == "ok") return std::string();
  // One line for the operator: SQLite's "*** in database main ***" header
  // names the only database there is, and its lines become "; ".
  std::string line;
  for (const auto& part : text_lines(said)) {
    if (!part.empty() && part != "*** in database main ***") line += (line.empty() ? "" : "; ") + part;
  }
  return line.empty() ? said : line;
}

Error newer_schema(const std::string& path, int version) {
  return make_error("state store " + path + ": schema version " + std::to_string(version) +
                    " is newer than this gpuexpand understands (" + std::to_string(StateStore::kSchemaVersion) +
                    "); upgrade gpuexpand");
}
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
}  // namespace

// ---------------------------------------------------------------------------
// Opening and migrating.

// Whether the filesystem that holds (or would hold) PATH is mounted
// read-only: SQLite then says only "unable to open database file".
static bool on_read_only_filesystem(const std::string& path) {
  std::filesystem::path at = path;
  std::error_code ec;
  while (!at.empty() && !std::filesystem::exists(at, ec)) at = at.parent_path();
  struct statvfs fs {};
  return ::statvfs(at.empty() ? "." : at.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0;
}

Result<std::unique_ptr<StateStore>> StateStore::open(const std::string& path) {
  auto fail = [&](const std::string& doing, const Error& cause) {
    if (on_read_only_filesystem(path)) {
      return prefixed(path, doing, make_error("its filesystem is mounted read-only (every run is recorded here before "
                                              "it starts: remount it read-write, or copy the store and pass --state)"));
    }
    return prefixed(path, doing, cause);
  };

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
  // A store damaged on disk (a torn page, bytes overwritten) is refused
  // before a run is recorded into it: writing on would spread the damage
  // and a run's record could be lost halfway. quick_check reads every page
  // once (milliseconds for a store of thousands of runs).
  if (*version > 0) {
    if (auto damage = first_damage(raw); !damage) {
      return fail("cannot check", damage.error());
    } else if (!damage->empty()) {
      return prefixed(path, "it is damaged",
                      make_error("SQLite's quick_check says \"" + *damage +
                                 "\"; nothing was written to it. Restore it from a backup, or move it aside to start "
                                 "a new one (which knows no earlier runs, locks or checkpoints)"));
    }
  }

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

Result<std::unique_ptr<StateStore>> StateStore::open_existing(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return make_error("no state store at " + path + " (nothing has run with --state " + path +
                      " here; check the path)");
  }
  return open(path);
}

StateStore::~StateStore() { sqlite3_close_v2(db_); }

Error StateStore::error(const std::string& doing, const Error& cause) const { return prefixed(path_, doing, cause); }

}  // namespace gpuexpand
