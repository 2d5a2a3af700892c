#pragma once
// `apply` on a terminal: a live block at the bottom of the screen, one line
// per phase (a bar, done/changed/failed/running of the nodes that have
// something to change there), the nodes' tally, elapsed time and the
// slowest phases running now; above it, as they happen, only what an
// operator must see (a failed phase with its reason, an unreachable node,
// failed checks, a stopped rollout). Redrawn on each event and every second;
// after Ctrl-C its last line says what the run is waiting for. A pipe or
// `--progress plain` gets the line-per-event console instead
// (view/apply_view.hpp). Tested by frames (tests/unit/views_test.cpp) and
// in a real terminal (tmux, tests/lab/apply-test.sh).

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gpuexpand/exec/executor.hpp"

namespace gpuexpand {

class ApplyProgress : public RunJournal {
 public:
  // Stops the refresh and leaves the last frame on the screen; call before
  // printing the summary. Idempotent.
  virtual void stop() = 0;
  // The block as it would be drawn now, without escape sequences (tests).
  virtual std::string frame() = 0;
};

struct ApplyProgressOptions {
  std::vector<std::string> nodes;
  std::vector<std::string> phases;                 // in order
  const std::atomic<bool>* stop_requested = nullptr;  // Ctrl-C seen
  bool colour = false;
  // The terminal's width (0: unknown): block lines are cut to it, so each
  // is one row and a redraw moves up over exactly the rows it drew.
  size_t columns = 0;
  bool refresh_thread = true;  // tests draw frames themselves
  std::function<std::chrono::steady_clock::time_point()> clock = [] { return std::chrono::steady_clock::now(); };
};

std::unique_ptr<ApplyProgress> make_apply_progress(std::ostream& out, ApplyProgressOptions options);

}  // namespace gpuexpand
