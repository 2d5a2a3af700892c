// The live view of `apply` on a terminal (view/apply_progress.hpp): frames
// as events arrive, with a clock the test moves; the escape stream puts
// event lines above the block and redraws the block in place.

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "gpuexpand/view/apply_progress.hpp"

namespace gpuexpand {
namespace {

using Clock = std::chrono::steady_clock;

TEST(ApplyProgress, FramesFollowTheRun) {
  Clock::time_point now{};
  std::atomic<bool> stop{false};
  std::ostringstream out;
  ApplyProgressOptions options;
  options.nodes = {"node-01", "node-02", "node-03"};
  options.phases = {"os-init", "gpu-driver"};
  options.stop_requested = &stop;
  options.refresh_thread = false;
  options.clock = [&now] { return now; };
  auto progress = make_apply_progress(out, options);

  progress->phase_started("node-01", "os-init");
  progress->phase_started("node-02", "os-init");
  now += std::chrono::seconds(4);
  progress->phase_finished({"node-01", "os-init", PhaseStatus::Succeeded, 3, 4.0, "", ""});
  progress->node_finished("node-03", NodeResult::Unreachable, "node-03 (10.0.0.3): connection refused");
  now += std::chrono::seconds(3);
  EXPECT_EQ(progress->frame(),
            "  os-init     [##########..........] 1/2 done, 1 changed, 0 failed, 1 running\n"
            "  gpu-driver  [....................] nothing yet\n"
            "  nodes: 1/3 finished: 0 changed, 0 unchanged, 0 failed, 1 unreachable; elapsed 7 s\n"
            "  slowest now: node-02 os-init 7 s\n");

  progress->phase_finished({"node-02", "os-init", PhaseStatus::RolledBack, 0, 7.0, "base-packages", "apt-get exited 100"});
  progress->node_finished("node-02", NodeResult::Failed, "phase os-init");
  progress->phase_started("node-01", "gpu-driver");
  stop = true;
  now += std::chrono::seconds(65);
  EXPECT_EQ(progress->frame(),
            "  os-init     [####################] 2/2 done, 1 changed, 1 failed, 0 running\n"
            "  gpu-driver  [....................] 0/1 done, 0 changed, 0 failed, 1 running\n"
            "  nodes: 2/3 finished: 0 changed, 0 unchanged, 1 failed, 1 unreachable; elapsed 1m12s\n"
            "  slowest now: node-01 gpu-driver 1m05s\n"
            "  stopping (Ctrl-C): waiting for 1 running phase(s) to finish their step and roll back; nothing new starts\n");
  progress->stop();

  const std::string stream = out.str();
  // What must be seen scrolls above the block, once each.
  EXPECT_NE(stream.find("\033[2Knode-03  UNREACHABLE: node-03 (10.0.0.3): connection refused\n"), std::string::npos);
  EXPECT_NE(stream.find("\033[2Knode-02  os-init  FAILED, rolled back at step base-packages: apt-get exited 100\n"),
            std::string::npos);
  EXPECT_EQ(stream.find("node-01  os-init  changed"), std::string::npos) << "successes are counted, not listed";
  // Each redraw moves up over the previous block (4 lines after the first events).
  EXPECT_NE(stream.find("\033[4F"), std::string::npos);
}

// A failure line longer than the terminal wraps onto the rows below it:
// the old block is cleared whole before anything is written (a redraw that
// cleared line by line left the old block's ends beside the wrapped text,
// seen on the lab in tmux), and block lines are cut to the width so each is
// one row.
TEST(ApplyProgress, RedrawsClearTheOldBlockAndFitTheWidth) {
  Clock::time_point now{};
  std::ostringstream out;
  ApplyProgressOptions options;
  options.nodes = {"node-01"};
  options.phases = {"os-init", "gpu-driver"};
  options.refresh_thread = false;
  options.columns = 40;
  options.colour = true;
  options.clock = [&now] { return now; };
  auto progress = make_apply_progress(out, options);
  progress->phase_started("node-01", "os-init");
  const std::string why(120, 'x');
  progress->phase_finished({"node-01", "os-init", PhaseStatus::RolledBack, 0, 1.0, "base-packages", why});
  progress->stop();
  const std::string stream = out.str();
  EXPECT_NE(stream.find("\033[4F\033[J\033[2K\033[31mnode-01  os-init  FAILED"), std::string::npos)
      << "up over the old block, cleared whole, then the event";
  EXPECT_NE(stream.find(why + "\033[0m\n"), std::string::npos) << "the event line itself is never cut";
  std::istringstream lines(stream);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("FAILED") != std::string::npos) continue;
    std::string visible;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\033') {
        i = line.find_first_of("mFJK", i);
        continue;
      }
      visible += line[i];
    }
    EXPECT_LT(visible.size(), 40u) << "a block line fits in one row: " << visible;
  }
}

}  // namespace
}  // namespace gpuexpand
