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

Result<std::vector<NodeOutcome>> StateStore::node_outcomes(int64_t run_id) {
  auto rows = Statement::prepare(db_, "SELECT node, result, message FROM run_nodes WHERE run_id = ?1 ORDER BY position");
  if (!rows) return error("reading run " + std::to_string(run_id), rows.error());
  rows->bind(1, run_id);
  std::vector<NodeOutcome> outcomes;
  for (;;) {
    auto row = rows->step();
    if (!row) return error("reading run " + std::to_string(run_id), row.error());
    if (!*row) break;
    outcomes.push_back({rows->text(0), rows->text(1), rows->text(2)});
  }
  return outcomes;
}

Result<std::optional<std::pair<int64_t, std::vector<std::string>>>> StateStore::unfinished_nodes_of_last(
    const std::string& command) {
  using Found = std::optional<std::pair<int64_t, std::vector<std::string>>>;
  auto last = Statement::prepare(db_, "SELECT max(id) FROM runs WHERE command = ?1");
  if (!last) return error("reading runs", last.error());
  last->bind(1, command);
  auto row = last->step();
  if (!row) return error("reading runs", row.error());
  if (!*row || last->is_null(0)) return Found();
  const int64_t run_id = last->int64(0);
  auto nodes = Statement::prepare(db_,
                                  "SELECT node FROM run_nodes WHERE run_id = ?1 AND result NOT IN ('changed', "
                                  "'unchanged') ORDER BY position");
  if (!nodes) return error("reading run " + std::to_string(run_id), nodes.error());
  nodes->bind(1, run_id);
  std::vector<std::string> unfinished;
  for (;;) {
    auto node = nodes->step();
    if (!node) return error("reading run " + std::to_string(run_id), node.error());
    if (!*node) break;
    unfinished.push_back(nodes->text(0));
  }
  return Found(std::make_pair(run_id, std::move(unfinished)));
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

Result<std::vector<AuditEntry>> StateStore::audit(int64_t run_id) { return audit_trail(run_id, {}); }

Result<std::vector<AuditEntry>> StateStore::audit_trail(int64_t run_id, const std::vector<std::string>& nodes) {
  const std::string doing = run_id > 0 ? "reading the audit of run " + std::to_string(run_id) : "reading the audit";
  // The node filter is a JSON array bound as one value: no SQL is built from names.
  auto select = Statement::prepare(
      db_,
      "SELECT run_id, node, command, exit_code, failure, duration_ms, at, user, sudo, stdin_bytes, stdin_sha256 "
      "FROM audit WHERE (?1 = 0 OR run_id = ?1) AND (?2 = '[]' OR node IN (SELECT value FROM json_each(?2))) "
      "ORDER BY id");
  if (!select) return error(doing, select.error());
  select->bind(1, run_id).bind(2, nlohmann::json(nodes).dump());
  std::vector<AuditEntry> entries;
  for (;;) {
    auto row = select->step();
    if (!row) return error(doing, row.error());
    if (!*row) break;
    AuditEntry e{select->int64(0), select->text(1), select->text(2), select->integer(3), select->text(4),
                 select->int64(5), select->text(6)};
    e.user = select->text(7);
    e.sudo = select->integer(8) != 0;
    e.stdin_bytes = select->int64(9);
    e.stdin_sha256 = select->text(10);
    entries.push_back(std::move(e));
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

Result<std::vector<StoredPackageAnswer>> StateStore::package_answers(const std::vector<std::string>& nodes) {
  const std::string doing = "reading the kept package answers";
  auto select = Statement::prepare(db_,
                                   "SELECT node, answer_key, inputs, output, saved_at FROM package_answers "
                                   "WHERE ?1 = 0 OR node IN (SELECT value FROM json_each(?2)) ORDER BY node");
  if (!select) return error(doing, select.error());
  select->bind(1, !nodes.empty()).bind(2, json_list(nodes));
  std::vector<StoredPackageAnswer> answers;
  for (;;) {
    auto row = select->step();
    if (!row) return error(doing, row.error());
    if (!*row) break;
    answers.push_back({select->text(0), select->text(1), select->text(2), select->text(3), select->text(4)});
  }
  return answers;
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
