#pragma once
// The result of one acceptance check: what the acceptance phase of `apply`,
// `verify` and the fault drill produce, the state store keeps and `status`
// shows. A plain value, so the pure layers (accept, plan) can make it
// without knowing the store.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace gpuexpand {

enum class CheckStatus { Pass, Fail, Skip };
// "pass", "fail", "skip": the words of the check script, the store and JSON.
std::string_view check_status_name(CheckStatus status);
std::optional<CheckStatus> parse_check_status(std::string_view text);
inline std::ostream& operator<<(std::ostream& out, CheckStatus status) { return out << check_status_name(status); }

// One acceptance check on one node in one run (`check_results`): written by the
// acceptance phase of `apply` and by `verify`, shown by `status`.
struct CheckResult {
  int64_t run_id = 0;
  std::string node;
  std::string check;   // "scheduler", "gpu", "network", "storage", "monitoring", "multinode", "fault-drill"
  CheckStatus status = CheckStatus::Fail;
  std::string detail;  // why it failed / was skipped, or what was measured ("412 MB/s write")
  double seconds = 0;
  std::string recorded_at;  // RFC 3339 UTC, set by the caller
};

}  // namespace gpuexpand
