#include "gpuexpand/view/apply_view.hpp"

#include <cstdio>
#include <sstream>

namespace gpuexpand {
namespace {

class ApplyConsole final : public RunJournal {
 public:
  ApplyConsole(std::ostream& out, bool quiet) : out_(out), quiet_(quiet) {}
  void phase_started(const std::string&, const std::string&) override {}
  void phase_finished(const PhaseRecord& r) override {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f s", r.seconds);
    std::string line = r.node + "  " + r.phase + "  ";
    if (r.status == PhaseStatus::Succeeded) {
      if (quiet_) return;
      line += "changed (" + std::to_string(r.changes) + (r.changes == 1 ? " change, " : " changes, ") + seconds + ")";
    } else {
      line += (r.status == PhaseStatus::RolledBack ? "FAILED, rolled back" : "FAILED") + std::string(" (") + seconds + ")" +
              (r.failed_step.empty() ? "" : " at step " + r.failed_step) + ": " + r.message;
    }
    out_ << line << std::endl;
  }
  void checkpoint_taken(const std::string&, const std::string&, const std::string&, const nlohmann::json&) override {}
  void checkpoint_restored(const std::string&, const std::string&) override {}
  void checks_recorded(const std::string& node, const std::vector<CheckResult>& results) override {
    if (results.size() == 1 && results.front().check == "multinode") {  // the run-wide job, after the nodes
      const CheckResult& r = results.front();
      if (quiet_ && r.status == CheckStatus::Pass) return;
      out_ << node << "  acceptance  " << (r.status == CheckStatus::Pass ? "pass " : "FAIL ") << r.check << ": " << r.detail
                << std::endl;
      return;
    }
    int passed = 0, failed = 0, skipped = 0;
    for (const auto& r : results) ++(r.status == CheckStatus::Pass ? passed : r.status == CheckStatus::Fail ? failed : skipped);
    if (quiet_ && failed == 0) return;
    out_ << node << "  acceptance  " << passed << " passed, " << failed << " failed, " << skipped << " skipped"
              << std::endl;
    for (CheckStatus status : {CheckStatus::Fail, CheckStatus::Skip}) {
      if (quiet_ && status == CheckStatus::Skip) continue;
      for (const auto& r : results) {
        if (r.status != status) continue;
        out_ << node << "  acceptance  " << (r.status == CheckStatus::Fail ? "FAIL " : "skip ") << r.check << ": " << r.detail
                  << std::endl;
      }
    }
  }
  void node_finished(const std::string& node, NodeResult result, const std::string& message) override {
    if (result == NodeResult::Unchanged && !quiet_) out_ << node << "  nothing to change" << std::endl;
    if (result == NodeResult::Unreachable) out_ << node << "  UNREACHABLE: " << message << std::endl;
  }
  void batch_stopped(const std::string& reason) override {
    out_ << "stopping: " << reason << "; no further batches are started" << std::endl;
  }
 private:
  std::ostream& out_;
  bool quiet_;
};

}  // namespace

std::unique_ptr<RunJournal> make_apply_console(std::ostream& out, bool quiet) {
  return std::make_unique<ApplyConsole>(out, quiet);
}

std::string apply_summary_line(const ExecutionReport& report, size_t nodes, double seconds) {
  std::ostringstream out;
  char timing[32];
  std::snprintf(timing, sizeof timing, " (%.1f s)", seconds);
  out << nodes << (nodes == 1 ? " node: " : " nodes: ") << report.count(NodeResult::Changed) << " changed, "
      << report.count(NodeResult::Unchanged) << " unchanged, " << report.count(NodeResult::Failed) << " failed, "
      << report.count(NodeResult::Unreachable) << " unreachable";
  if (const size_t skipped = report.count(NodeResult::NotStarted)) out << ", " << skipped << " not started";
  if (const size_t stopped = report.count(NodeResult::Interrupted)) out << ", " << stopped << " interrupted";
  out << timing << "\n";
  return out.str();
}

std::string check_result_lines(const std::string& node, const std::vector<CheckResult>& results) {
  std::string out;
  for (const auto& r : results) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f s", r.seconds);
    const char* mark = r.status == CheckStatus::Pass ? "pass" : r.status == CheckStatus::Fail ? "FAIL" : "skip";
    out += node + "  " + mark + "  " + r.check + " (" + seconds + "): " + r.detail + "\n";
  }
  return out;
}

std::string unreachable_node_line(const std::string& node, const std::string& reason) {
  return node + "  UNREACHABLE: " + reason + "\n";
}

std::string verify_summary_line(size_t nodes, size_t passed, size_t failed, size_t unreachable, double seconds) {
  char timing[32];
  std::snprintf(timing, sizeof timing, " (%.1f s)", seconds);
  return std::to_string(nodes) + (nodes == 1 ? " node: " : " nodes: ") + std::to_string(passed) + " passed, " +
         std::to_string(failed) + " failed, " + std::to_string(unreachable) + " unreachable" + timing + "\n";
}

}  // namespace gpuexpand
