#include "gpuexpand/state/state_store.hpp"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>

#include "sqlite_helpers.hpp"

#include "gpuexpand/util/enum_names.hpp"
#include "store_support.hpp"

namespace gpuexpand {

using sqlite::Statement;
using sqlite::Transaction;
using namespace store_detail;  // NOLINT: this layer's own helpers

// ---------------------------------------------------------------------------
// Status names.

constexpr EnumNames<RunStatus, 4> kRunStatusNames{{{RunStatus::Running, "running"},
                                                   {RunStatus::Succeeded, "succeeded"},
                                                   {RunStatus::Failed, "failed"},
                                                   {RunStatus::Interrupted, "interrupted"}}};
constexpr EnumNames<PhaseStatus, 6> kPhaseStatusNames{{{PhaseStatus::Running, "running"},
                                                       {PhaseStatus::Succeeded, "succeeded"},
                                                       {PhaseStatus::Unchanged, "unchanged"},
                                                       {PhaseStatus::Failed, "failed"},
                                                       {PhaseStatus::RolledBack, "rolled-back"},
                                                       {PhaseStatus::Skipped, "skipped"}}};

std::string to_string(RunStatus status) { return std::string(name_of(kRunStatusNames, status)); }
std::string to_string(PhaseStatus status) { return std::string(name_of(kPhaseStatusNames, status)); }
std::optional<RunStatus> parse_run_status(std::string_view text) { return parse_name(kRunStatusNames, text); }
std::optional<PhaseStatus> parse_phase_status(std::string_view text) { return parse_name(kPhaseStatusNames, text); }

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
         {"at", entry.at},
         {"user", entry.user},
         {"sudo", entry.sudo},
         {"stdin_bytes", entry.stdin_bytes},
         {"stdin_sha256", entry.stdin_sha256}};
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

}  // namespace gpuexpand
