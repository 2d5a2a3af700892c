#include "gpuexpand/view/apply_progress.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace gpuexpand {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(double s) {
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%.0f s", s);
  } else {
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  }
  return text;
}

struct PhaseTally {
  std::set<std::string> started, changed, failed;
};

class Progress final : public ApplyProgress {
 public:
  Progress(std::ostream& out, ApplyProgressOptions options)
      : out_(out), options_(std::move(options)), begun_(options_.clock()) {
    if (options_.refresh_thread) ticker_ = std::thread([this] { tick(); });
  }
  ~Progress() override { stop(); }

  void stop() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
      if (drawn_lines_ > 0) draw_locked({});
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

  std::string frame() override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    for (const auto& line : block_locked(false)) text += line + "\n";
    return text;
  }

  void phase_started(const std::string& node, const std::string& phase) override {
    std::lock_guard<std::mutex> lock(mutex_);
    phases_[phase].started.insert(node);
    running_[node] = {phase, options_.clock()};
    draw_locked({});
  }
  void phase_finished(const PhaseRecord& r) override {
    std::lock_guard<std::mutex> lock(mutex_);
    (r.status == PhaseStatus::Succeeded ? phases_[r.phase].changed : phases_[r.phase].failed).insert(r.node);
    running_.erase(r.node);
    std::vector<std::string> lines;
    if (r.status != PhaseStatus::Succeeded) {
      lines.push_back(paint(r.node + "  " + r.phase + "  " +
                                (r.status == PhaseStatus::RolledBack ? "FAILED, rolled back" : "FAILED") +
                                (r.failed_step.empty() ? "" : " at step " + r.failed_step) + ": " + r.message,
                            "31"));
    }
    draw_locked(lines);
  }
  void checkpoint_taken(const std::string&, const std::string&, const std::string&, const nlohmann::json&) override {}
  void checkpoint_restored(const std::string&, const std::string&) override {}
  void checks_recorded(const std::string& node, const std::vector<CheckResult>& results) override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> lines;
    for (const auto& r : results) {
      if (r.status == CheckStatus::Fail) lines.push_back(paint(node + "  acceptance  FAIL " + r.check + ": " + r.detail, "31"));
    }
    draw_locked(lines);
  }
  void node_finished(const std::string& node, NodeResult result, const std::string& message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    results_[node] = result;
    running_.erase(node);
    std::vector<std::string> lines;
    if (result == NodeResult::Unreachable) lines.push_back(paint(node + "  UNREACHABLE: " + message, "31"));
    draw_locked(lines);
  }
  void batch_stopped(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mutex_);
    draw_locked({paint("stopping: " + reason + "; no further batches are started", "33")});
  }

 private:
  std::string paint(const std::string& text, const char* code) const {
    return options_.colour ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
  }

  std::vector<std::string> block_locked(bool colour) const {
    std::vector<std::string> lines;
    size_t width = 0;
    for (const auto& p : options_.phases) width = std::max(width, p.size());
    const size_t total = options_.nodes.size();
    for (const auto& phase : options_.phases) {
      const auto it = phases_.find(phase);
      const size_t started = it == phases_.end() ? 0 : it->second.started.size();
      const size_t changed = it == phases_.end() ? 0 : it->second.changed.size();
      const size_t failed = it == phases_.end() ? 0 : it->second.failed.size();
      const size_t done = changed + failed;
      const size_t bar = 20;
      const size_t filled = started == 0 ? 0 : done * bar / started;
      std::string line = "  " + phase + std::string(width - phase.size() + 2, ' ') + "[" + std::string(filled, '#') +
                         std::string(bar - filled, '.') + "] ";
      if (started == 0) {
        line += results_.size() == total ? "nothing to change" : "nothing yet";
      } else {
        line += std::to_string(done) + "/" + std::to_string(started) + " done, " + std::to_string(changed) + " changed, " +
                std::to_string(failed) + " failed, " + std::to_string(started - done) + " running";
      }
      if (colour && failed > 0) line = "\033[31m" + line + "\033[0m";
      lines.push_back(line);
    }
    std::map<NodeResult, size_t> by;
    for (const auto& [node, result] : results_) ++by[result];
    const size_t finished = results_.size();
    lines.push_back("  nodes: " + std::to_string(finished) + "/" + std::to_string(total) + " finished: " +
                    std::to_string(by[NodeResult::Changed]) + " changed, " + std::to_string(by[NodeResult::Unchanged]) +
                    " unchanged, " + std::to_string(by[NodeResult::Failed]) + " failed, " +
                    std::to_string(by[NodeResult::Unreachable]) + " unreachable; elapsed " +
                    seconds_text(std::chrono::duration<double>(options_.clock() - begun_).count()));
    // The slowest phases running now: where an operator looks first.
    std::vector<std::pair<double, std::string>> slow;
    for (const auto& [node, running] : running_) {
      slow.push_back({std::chrono::duration<double>(options_.clock() - running.since).count(), node + " " + running.phase});
    }
    std::sort(slow.rbegin(), slow.rend());
    if (!slow.empty()) {
      std::string line = "  slowest now:";
      for (size_t i = 0; i < slow.size() && i < 3; ++i) line += (i ? "," : "") + std::string(" ") + slow[i].second + " " + seconds_text(slow[i].first);
      lines.push_back(line);
    }
    if (options_.stop_requested && options_.stop_requested->load() && !stopped_) {
      lines.push_back("  stopping (Ctrl-C): waiting for " + std::to_string(running_.size()) +
                      " running phase(s) to finish their step and roll back; nothing new starts");
    }
    return lines;
  }

  // Event lines go above the block: move up over the old block and clear
  // it all first (an event line longer than the terminal wraps onto the
  // rows below, which clearing line by line left with the old block's
  // ends on them), then the events, then the block, each of its lines one
  // row.
  void draw_locked(const std::vector<std::string>& events) {
    std::string text;
    if (drawn_lines_ > 0) text += "\033[" + std::to_string(drawn_lines_) + "F";
    text += "\033[J";
    for (const auto& e : events) text += "\033[2K" + e + "\n";
    const auto block = block_locked(options_.colour);
    for (const auto& line : block) text += "\033[2K" + fitted(line) + "\n";
    drawn_lines_ = block.size();
    out_ << text << std::flush;
  }

  // A block line cut to the terminal's width (escape sequences take no
  // columns; the cut keeps the colour's reset).
  std::string fitted(const std::string& line) const {
    if (options_.columns == 0) return line;
    std::string out;
    size_t shown = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\033') {
        const size_t end = line.find('m', i);
        if (end == std::string::npos) break;
        out.append(line, i, end - i + 1);
        i = end;
        continue;
      }
      // UTF-8 continuation bytes take no column of their own.
      if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && ++shown >= options_.columns) break;
      out += line[i];
    }
    if (out.find('\033') != std::string::npos && out.rfind("\033[0m") + 4 != out.size()) out += "\033[0m";
    return out;
  }

  void tick() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopped_) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      if (!stopped_ && drawn_lines_ > 0) draw_locked({});  // nothing before the first event: the run's first line is still coming
    }
  }

  struct Running {
    std::string phase;
    Clock::time_point since;
  };

  std::ostream& out_;
  ApplyProgressOptions options_;
  const Clock::time_point begun_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
  bool stopped_ = false;
  size_t drawn_lines_ = 0;
  std::map<std::string, PhaseTally> phases_;
  std::map<std::string, Running> running_;
  std::map<std::string, NodeResult> results_;
};

}  // namespace

std::unique_ptr<ApplyProgress> make_apply_progress(std::ostream& out, ApplyProgressOptions options) {
  return std::make_unique<Progress>(out, std::move(options));
}

}  // namespace gpuexpand
