#include "gpuexpand/view/apply_view.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "gpuexpand/util/hostlist.hpp"

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

namespace {

bool finished(NodeResult result) { return result == NodeResult::Changed || result == NodeResult::Unchanged; }

// The message without what makes it this node's: a leading "NODE: " and
// any "NODE (ADDRESS): " the transport put in front of a command's output.
std::string reason_of(const NodeReport& node) {
  std::string reason = node.message;
  const std::string lead = node.node + ": ";
  if (reason.rfind(lead, 0) == 0) reason.erase(0, lead.size());
  const std::string named = node.node + " (";
  for (size_t at = reason.find(named); at != std::string::npos; at = reason.find(named, at)) {
    const size_t close = reason.find("): ", at + named.size());
    if (close == std::string::npos) break;
    reason.erase(at, close + 3 - at);
  }
  if (reason.empty()) reason = to_string(node.result);
  return reason;
}

}  // namespace

std::string apply_recap(const ExecutionReport& report, const std::string& retry_command) {
  bool all_finished = true;
  for (const auto& node : report.nodes) all_finished = all_finished && finished(node.result);
  if (all_finished) return "";

  std::ostringstream out;
  out << "\nRecap:\n";
  for (NodeResult result : {NodeResult::Changed, NodeResult::Unchanged, NodeResult::Failed, NodeResult::Unreachable,
                            NodeResult::Interrupted, NodeResult::NotStarted}) {
    std::vector<std::string> names;
    for (const auto& node : report.nodes) {
      if (node.result == result) names.push_back(node.node);
    }
    if (names.empty()) continue;
    std::string label = to_string(result);
    label.resize(std::max<size_t>(label.size(), 11), ' ');
    out << "  " << label << "  " << fold_hostlist(names) << "\n";
  }
  // Reasons in the order their first node is in the run.
  std::vector<std::string> reasons;
  std::map<std::string, std::vector<std::string>> nodes_by_reason;
  for (const auto& node : report.nodes) {
    if (finished(node.result)) continue;
    const std::string reason = reason_of(node);
    auto& names = nodes_by_reason[reason];
    if (names.empty()) reasons.push_back(reason);
    names.push_back(node.node);
  }
  out << "Failures by reason:\n";
  for (const auto& reason : reasons) out << "  " << fold_hostlist(nodes_by_reason[reason]) << ": " << reason << "\n";
  out << "Retry only the nodes that did not finish:\n  " << retry_command << "\n";
  return out.str();
}

}  // namespace gpuexpand
