#pragma once
// The result of one acceptance check: what the acceptance phase of `apply`,
// `verify` and the fault drill produce, the state store keeps and `status`
// shows. A plain value, so the pure layers (accept, plan) can make it
// without knowing the store.

#include <cstdint>
#include <string>

namespace gpuexpand {

// One acceptance check on one node in one run (`check_results`): written by the
// acceptance phase of `apply` and by `verify`, shown by `status`.
struct CheckResult {
  int64_t run_id = 0;
  std::string node;
  std::string check;   // "scheduler", "gpu", "network", "storage", "monitoring", "multinode", "fault-drill"
  std::string status;  // "pass", "fail" or "skip"
  std::string detail;  // why it failed / was skipped, or what was measured ("412 MB/s write")
  double seconds = 0;
  std::string recorded_at;  // RFC 3339 UTC, set by the caller
};

}  // namespace gpuexpand
