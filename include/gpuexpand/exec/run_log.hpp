#pragma once
// Every remote command of a run, its output and timing, in one text file
// per node beside the state store: <store dir>/runs/<run>/<node>.log. The
// operator reads what apt printed on node-17 at 3 a.m. without ssh, with
// `gpuexpand logs node-17`, `less` or `grep`.
//
// An entry starts in column 0 with its time; its further lines are
// indented two spaces and marked, so output never looks like an entry:
//
//   2026-12-02T23:10:01Z phase os-init: started
//   2026-12-02T23:10:01Z $ apt-get install -y -q chrony
//     > the second line of a multi-line command
//     stdin: 1234 bytes, sha256 0123456789abcdef…
//     | a line the command printed on stdout
//     ! a line it printed on stderr
//     = exit 0 (0.12 s)                 (or "= exit 100 …", "= command timed out: MESSAGE")
//   2026-12-02T23:10:03Z phase os-init: FAILED, rolled back at step base-packages: MESSAGE
//   2026-12-02T23:10:05Z check gpu: pass: 8 x NVIDIA H200
//   2026-12-02T23:10:09Z node: failed: MESSAGE
//
// stdin is kept only by size and digest: it carries file contents, a
// secret file's among them. A sensitive request's output is not kept.

#include <cstdint>
#include <string>
#include <vector>

#include "gpuexpand/exec/executor.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

class RunLog {
 public:
  // Output beyond this many bytes per stream keeps its end (where the error is).
  static constexpr size_t kOutputKept = 64 * 1024;
  // Runs whose logs are kept; older runs' folders go when a new run starts.
  static constexpr int kRunsKept = 50;

  // Logs of `run_id` beside the store at `store_path`; `now` stamps entries.
  RunLog(const std::string& store_path, int64_t run_id, std::string (*now)());

  void command(const AuditRecord& record);
  void phase_started(const std::string& node, const std::string& phase);
  void phase_finished(const PhaseRecord& record);
  void checks(const std::string& node, const std::vector<CheckResult>& results);
  void node_finished(const std::string& node, NodeResult result, const std::string& message);

  // The first problem writing (disk full, a folder not writable), once; the
  // run goes on without its log: the nodes do not depend on it.
  const std::string& error() const { return error_; }

  // <dir of store_path>/runs/<run_id>
  static std::string directory(const std::string& store_path, int64_t run_id);
  // <dir of store_path>/runs
  static std::string runs_directory(const std::string& store_path);

 private:
  void append(const std::string& node, const std::string& text);

  std::string dir_;
  std::string (*now_)();
  std::string error_;
};

// What `gpuexpand logs` shows of one node's log: everything, or only the
// entries of one phase, or only what failed (commands that did not exit 0,
// failed phases and checks, a node that did not finish), or both.
std::string filter_run_log(const std::string& log, const std::string& phase, bool failed_only);

}  // namespace gpuexpand
