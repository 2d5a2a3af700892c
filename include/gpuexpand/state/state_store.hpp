#pragma once
// The controller's memory: runs, per-node phase results, checkpoints, the
// audit of every remote command, and the node locks that keep two applies
// off the same nodes. SQLite in WAL mode, every write in one transaction, so
// a controller killed at any moment (SIGKILL) leaves a consistent store and
// the next apply can resume from the last finished phase.
//
// One StateStore per thread; several processes may share the file (SQLite
// locks it, writers wait up to 5 s).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/accept/check_result.hpp"
#include "gpuexpand/util/result.hpp"

struct sqlite3;

namespace gpuexpand {

enum class RunStatus { Running, Succeeded, Failed, Interrupted };
enum class PhaseStatus { Running, Succeeded, Unchanged, Failed, RolledBack, Skipped };

// "running", "succeeded", "failed", "interrupted"
std::string to_string(RunStatus status);
// "running", "succeeded", "unchanged", "failed", "rolled-back", "skipped"
std::string to_string(PhaseStatus status);
std::optional<RunStatus> parse_run_status(std::string_view text);
std::optional<PhaseStatus> parse_phase_status(std::string_view text);

struct RunRecord {
  int64_t id = 0;
  std::string command;  // "apply", "rollback", "verify"
  std::string spec_file, spec_sha256, plan_sha256 /* may be empty */, started_at, finished_at /* empty while running */;
  RunStatus status = RunStatus::Running;
  int exit_code = -1;
  std::string holder;  // "user@host pid 1234" (see lock_holder_identity)
  std::vector<std::string> nodes;
};

struct PhaseResult {
  int64_t run_id = 0;
  std::string node, phase;
  PhaseStatus status = PhaseStatus::Running;
  int changes = 0;
  std::string started_at, finished_at;
  double duration_s = 0;
  std::string failed_step, message;
};

struct CheckpointRecord {
  int64_t run_id = 0;
  std::string node, phase, remote_path, created_at;
  nlohmann::json manifest;  // what the checkpoint holds
  bool restored = false;
};

struct AuditEntry {
  int64_t run_id = 0;
  std::string node, command /* already redacted by the caller */;
  int exit_code = -1;
  std::string failure;  // failure_name()
  int64_t duration_ms = 0;
  std::string at;
  // v5: who ran it (the SSH login; sudo: through `sudo -n`), and its stdin
  // by size and SHA-256 only (it may carry a secret file's content).
  std::string user = {};  // (initialised: older brace lists of the first seven stay complete)
  bool sudo = false;
  int64_t stdin_bytes = 0;
  std::string stdin_sha256 = {};
};

// How a node of a run ended ("changed", "failed", "unreachable", …; ""
// while it runs or when its controller died first) and why.
struct NodeOutcome {
  std::string node, result, message;
};

struct LockConflict {
  int64_t run_id = 0;
  std::string holder, since;
  std::vector<std::string> nodes;  // the overlapping ones
  bool holder_alive = true;        // false: same host and the pid is gone
};

// One line of the `events` table: acts on the store itself (unlock --force).
struct EventRecord {
  int64_t id = 0;
  std::string at, who, kind;  // kind: "force-unlock"
  // force-unlock: {"nodes": [the nodes asked for; empty: all], "released": [LockConflict as JSON, …]}
  nlohmann::json detail;
};

// A node's last answer to its probe's package sections, kept for the next
// probe (FactsRequest::earlier_packages says what the fields hold).
struct StoredPackageAnswer {
  std::string node;
  std::string key;
  std::string inputs;
  std::string output;
  std::string saved_at;
};

// "nodes a, b are locked by run 12 (root@lab pid 4242) since 2026-11-30T03:00:00Z", plus a hint to
// `gpuexpand unlock --force` when the holder is known to be dead.
std::string describe(const LockConflict& conflict);

// "user@host pid N" for this process: the holder written into runs and locks.
std::string lock_holder_identity();

// False only when `holder` names this host and its pid no longer exists (kill(pid, 0) gives ESRCH).
// Holders on other hosts, or not in "user@host pid N" form, count as alive: we cannot tell.
bool holder_alive(std::string_view holder);

// JSON for `status --output json`: the fields as named above, statuses as text.
void to_json(nlohmann::json& out, const RunRecord& run);
void to_json(nlohmann::json& out, const PhaseResult& result);
void to_json(nlohmann::json& out, const CheckpointRecord& checkpoint);
void to_json(nlohmann::json& out, const AuditEntry& entry);
void to_json(nlohmann::json& out, const LockConflict& conflict);
void to_json(nlohmann::json& out, const EventRecord& event);
void to_json(nlohmann::json& out, const CheckResult& result);

class StateStore {
 public:
  // v1: runs, run_nodes, phase_results, checkpoints, audit, locks. v2: events, status indexes.
  // v3: check_results (acceptance checks). v4: run_nodes.result and .message (--limit @failed).
  // v5: audit.user, .sudo, .stdin_bytes, .stdin_sha256 (gpuexpand audit).
  // v6: package_answers (a probe's reusable package sections).
  static constexpr int kSchemaVersion = 6;

  // Opens (creating the file and parent directories), sets WAL, busy_timeout 5000, foreign keys,
  // and migrates the schema to the current version inside one transaction per step.
  // A database with a NEWER schema version is refused:
  // "state store PATH: schema version 7 is newer than this gpuexpand understands (4); upgrade gpuexpand".
  static Result<std::unique_ptr<StateStore>> open(const std::string& path);
  // For commands that only look (status, unlock): a path with no store is
  // refused, naming it, instead of creating folders and an empty store.
  static Result<std::unique_ptr<StateStore>> open_existing(const std::string& path);
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  int schema_version() const { return schema_version_; }
  const std::string& path() const { return path_; }

  // Begins a run AND takes the node locks in ONE transaction (BEGIN IMMEDIATE): if any node is locked
  // by another run that is still running, nothing is written and the conflict is returned (the oldest
  // such run, with the requested nodes it holds). The run is written as Running with exit code -1
  // whatever `run` says; duplicate node names are kept once; an empty holder becomes lock_holder_identity().
  Result<std::variant<int64_t, LockConflict>> begin_run(RunRecord run);
  // Sets the outcome and releases the run's locks. `status` must not be Running.
  Result<void> finish_run(int64_t run_id, RunStatus status, int exit_code, const std::string& finished_at);
  Result<void> record_phase(const PhaseResult& result);                // upsert on (run_id, node, phase)
  Result<void> record_checkpoint(const CheckpointRecord& checkpoint);  // upsert on (run_id, node, phase)
  // Error when there is no such checkpoint.
  Result<void> mark_checkpoint_restored(int64_t run_id, const std::string& node, const std::string& phase);
  Result<void> record_audit(const std::vector<AuditEntry>& entries);  // one transaction for the batch
  // Acceptance check results, one transaction for the batch (all or nothing): upsert on
  // (run_id, node, check), a re-recorded check keeps its place in the order. An empty node or
  // check name refuses the whole batch.
  Result<void> record_checks(const std::vector<CheckResult>& results);
  // How `node` ended in `run_id` ("changed", "failed", … as the executor names
  // it) and why. Error when the node is not one of the run's.
  Result<void> record_node_result(int64_t run_id, const std::string& node, const std::string& result,
                                  const std::string& message);
  // unlock --force: releases every lock (or those of the given nodes), marks a run Interrupted when
  // it is still Running and no longer holds any lock, and records the act in `events` (even when
  // nothing was held). Returns what was released, one entry per run.
  Result<std::vector<LockConflict>> force_unlock(const std::vector<std::string>& nodes, const std::string& who,
                                                 const std::string& at);

  // The newest package answer of each node (upsert on node), one transaction for the batch.
  Result<void> keep_package_answers(const std::vector<StoredPackageAnswer>& answers);

  // Queries
  Result<std::optional<RunRecord>> run(int64_t id);
  // The kept package answers of `nodes` (empty: all), by node.
  Result<std::vector<StoredPackageAnswer>> package_answers(const std::vector<std::string>& nodes);
  Result<std::vector<RunRecord>> runs(int limit);                  // newest first; limit <= 0: all
  Result<std::vector<PhaseResult>> phase_results(int64_t run_id);  // in the order first recorded
  // For each (node, phase) the result of the newest run that recorded it (for `status` and resume).
  // Ordered by node, then by when the row was first recorded; callers order phases by their own list.
  Result<std::vector<PhaseResult>> latest_phase_results(const std::vector<std::string>& nodes /* empty: all */);
  // Checkpoints of a node, newest first (newest run, then last taken), for `rollback --to`.
  Result<std::vector<CheckpointRecord>> checkpoints(const std::string& node);
  Result<std::vector<AuditEntry>> audit(int64_t run_id);  // in the order recorded
  // Every run's (run_id 0) or one run's commands on `nodes` (empty: all), in the order recorded.
  Result<std::vector<AuditEntry>> audit_trail(int64_t run_id, const std::vector<std::string>& nodes);
  Result<std::vector<NodeOutcome>> node_outcomes(int64_t run_id);  // in run order
  Result<std::vector<CheckResult>> checks_of_run(int64_t run_id);  // in the order first recorded
  // For each (node, check) the result of the newest run that recorded it. Ordered by node, then by
  // when the row was first recorded (the order the checks ran in).
  Result<std::vector<CheckResult>> latest_checks(const std::vector<std::string>& nodes /* empty: all */);
  // Runs left "running" whose controller is gone (holder_alive() is false), newest first:
  // for resume messages. A live run, this process's included, is not listed.
  Result<std::vector<RunRecord>> interrupted_runs();
  Result<std::vector<EventRecord>> events();  // oldest first
  // `--limit @failed`: the newest run of `command` (none: nullopt) and its
  // nodes that did not finish, in run order: failed, unreachable,
  // interrupted, not started, or never recorded (its controller died).
  Result<std::optional<std::pair<int64_t, std::vector<std::string>>>> unfinished_nodes_of_last(
      const std::string& command);

 private:
  StateStore(sqlite3* db, std::string path, int version) : db_(db), path_(std::move(path)), schema_version_(version) {}
  // "state store PATH: DOING: CAUSE"
  Error error(const std::string& doing, const Error& cause) const;
  Result<std::vector<RunRecord>> select_runs(const std::string& where_and_order, int64_t bound);

  sqlite3* db_ = nullptr;
  std::string path_;
  int schema_version_ = 0;
};

}  // namespace gpuexpand
