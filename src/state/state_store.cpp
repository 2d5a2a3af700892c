#include "gpuexpand/state/state_store.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <map>
#include <set>

#include "sqlite_helpers.hpp"

#include "store_support.hpp"

namespace gpuexpand {

using sqlite::Statement;
using sqlite::Transaction;
using namespace store_detail;  // NOLINT: this layer's own helpers

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

Result<void> StateStore::record_node_result(int64_t run_id, const std::string& node, const std::string& result,
                                            const std::string& message) {
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto update =
        Statement::prepare(db_, "UPDATE run_nodes SET result = ?3, message = ?4 WHERE run_id = ?1 AND node = ?2");
    if (!update) return update.error();
    update->bind(1, run_id).bind(2, node).bind(3, result).bind(4, message);
    if (auto ran = update->run(); !ran) return ran;
    if (sqlite3_changes(db_) == 0) return make_error("the node is not in the run");
    return {};
  });
  if (!done) return error("recording how " + node + " ended in run " + std::to_string(run_id), done.error());
  return {};
}

Result<void> StateStore::record_audit(const std::vector<AuditEntry>& entries) {
  if (entries.empty()) return {};
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto insert = Statement::prepare(db_,
                                     "INSERT INTO audit (run_id, node, command, exit_code, failure, duration_ms, at, "
                                     "user, sudo, stdin_bytes, stdin_sha256) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    if (!insert) return insert.error();
    for (const auto& entry : entries) {
      insert->reset();
      insert->bind(1, entry.run_id).bind(2, entry.node).bind(3, entry.command).bind(4, entry.exit_code);
      insert->bind(5, entry.failure).bind(6, entry.duration_ms).bind(7, entry.at);
      insert->bind(8, entry.user).bind(9, entry.sudo ? 1 : 0).bind(10, entry.stdin_bytes).bind(11, entry.stdin_sha256);
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

Result<void> StateStore::keep_package_answers(const std::vector<StoredPackageAnswer>& answers) {
  if (answers.empty()) return {};
  auto done = in_transaction(db_, [&]() -> Result<void> {
    auto upsert = Statement::prepare(db_,
                                     "INSERT INTO package_answers (node, answer_key, inputs, output, saved_at) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (node) DO UPDATE SET "
                                     "answer_key = excluded.answer_key, inputs = excluded.inputs, "
                                     "output = excluded.output, saved_at = excluded.saved_at");
    if (!upsert) return upsert.error();
    for (const auto& answer : answers) {
      if (answer.node.empty()) return make_error("a package answer needs a node");
      upsert->reset();
      upsert->bind(1, answer.node).bind(2, answer.key).bind(3, answer.inputs).bind(4, answer.output);
      upsert->bind(5, answer.saved_at);
      if (auto ran = upsert->run(); !ran) return ran;
    }
    return {};
  });
  if (!done) return error("keeping the package answers of " + std::to_string(answers.size()) + " nodes", done.error());
  return {};
}

}  // namespace gpuexpand
