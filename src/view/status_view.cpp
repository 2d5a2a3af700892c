#include "gpuexpand/view/status_view.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "gpuexpand/playbook/playbook.hpp"

namespace gpuexpand {
namespace {

void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);  // an empty last column leaves no trailing blanks
    out << line << "\n";
  }
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", seconds);
  return text;
}

// The latest acceptance checks, a summary line per node, then its failed and skipped checks.
// Nothing at all when no check was ever recorded.
void print_latest_checks(std::ostream& out, const std::vector<CheckResult>& checks) {
  if (checks.empty()) return;
  std::map<std::string, std::vector<const CheckResult*>> by_node;
  size_t width = 0;
  for (const auto& c : checks) {
    by_node[c.node].push_back(&c);
    width = std::max(width, c.node.size());
  }
  out << "\nAcceptance checks, latest per node:\n";
  for (const auto& [node, results] : by_node) {
    int passed = 0, failed = 0, skipped = 0;
    std::set<int64_t> runs;
    for (const auto* c : results) {
      ++(c->status == CheckStatus::Pass ? passed : c->status == CheckStatus::Fail ? failed : skipped);
      runs.insert(c->run_id);
    }
    std::string run_list;
    for (int64_t id : runs) run_list += (run_list.empty() ? "" : ", ") + std::to_string(id);
    out << "  " << node << std::string(width - node.size() + 2, ' ') << passed << " passed, " << failed
              << " failed, " << skipped << " skipped (run" << (runs.size() == 1 ? " " : "s ") << run_list << ")\n";
    for (CheckStatus status : {CheckStatus::Fail, CheckStatus::Skip}) {
      for (const auto* c : results) {
        if (c->status != status) continue;
        out << "    " << (c->status == CheckStatus::Fail ? "FAIL " : "skip ") << c->check
                  << (c->detail.empty() ? "" : ": " + c->detail) << "\n";
      }
    }
  }
}

std::string stdin_text(const AuditEntry& c) {
  if (c.stdin_bytes == 0) return "-";
  std::string text = std::to_string(c.stdin_bytes) + " B";
  if (!c.stdin_sha256.empty()) text += " sha256:" + c.stdin_sha256.substr(0, 12);
  return text;
}

std::string one_line(const std::string& command) {
  std::string out;
  for (char c : command) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string audit_text(const std::vector<AuditEntry>& commands) {
  std::ostringstream out;
  if (commands.empty()) return "No remote commands recorded\n";
  std::vector<std::vector<std::string>> rows = {{"RUN", "AT", "NODE", "USER", "EXIT", "MS", "STDIN", "COMMAND"}};
  std::set<std::string> nodes;
  std::set<int64_t> runs;
  size_t not_ok = 0;
  for (const auto& c : commands) {
    const bool ran = c.failure == "ok" || c.failure == "command failed";
    if (!ran || c.exit_code != 0) ++not_ok;
    nodes.insert(c.node);
    runs.insert(c.run_id);
    const std::string user = c.user.empty() ? "?" : c.user + (c.sudo ? "+sudo" : "");
    rows.push_back({std::to_string(c.run_id), c.at, c.node, user, ran ? std::to_string(c.exit_code) : c.failure,
                    std::to_string(c.duration_ms), stdin_text(c), one_line(c.command)});
  }
  print_table(out, rows);
  out << commands.size() << (commands.size() == 1 ? " command" : " commands") << " on " << nodes.size()
      << (nodes.size() == 1 ? " node" : " nodes") << " in " << runs.size() << (runs.size() == 1 ? " run" : " runs")
      << "; " << not_ok << " did not exit 0\n";
  return out.str();
}

std::string run_text(const RunRecord& run, const std::vector<PhaseResult>& results,
                     const std::vector<CheckResult>& checks, const std::vector<NodeOutcome>& nodes,
                     const std::vector<AuditEntry>& commands) {
  std::ostringstream out;
  out << "Run " << run.id << ": " << run.command << " " << run.spec_file << ", " << to_string(run.status)
      << " (exit " << run.exit_code << "), " << run.started_at << " .. " << run.finished_at << "\n";
  std::vector<std::vector<std::string>> rows = {{"NODE", "PHASE", "STATUS", "CHANGES", "SECONDS", "DETAIL"}};
  for (const auto& r : results) {
    rows.push_back({r.node, r.phase, to_string(r.status), std::to_string(r.changes), seconds_text(r.duration_s),
                    r.failed_step.empty() ? r.message : r.failed_step + ": " + r.message});
  }
  print_table(out, rows);
  if (!checks.empty()) {
    out << "Acceptance checks:\n";
    std::vector<std::vector<std::string>> check_rows = {{"NODE", "CHECK", "STATUS", "SECONDS", "DETAIL"}};
    for (const auto& c : checks) {
      check_rows.push_back(
          {c.node, c.check, std::string(check_status_name(c.status)), seconds_text(c.seconds), c.detail});
    }
    print_table(out, check_rows);
  }
  bool any_outcome = false;
  for (const auto& n : nodes) any_outcome = any_outcome || !n.result.empty();
  if (any_outcome) {
    out << "Nodes:\n";
    std::vector<std::vector<std::string>> node_rows = {{"NODE", "RESULT", "DETAIL"}};
    for (const auto& n : nodes) {
      const bool finished = n.result == "changed" || n.result == "unchanged";
      node_rows.push_back({n.node, n.result.empty() ? "-" : n.result, finished ? "" : n.message});
    }
    print_table(out, node_rows);
  }
  out << "Remote commands (" << commands.size() << "):\n";
  if (!commands.empty()) {
    std::vector<std::vector<std::string>> command_rows = {{"AT", "NODE", "EXIT", "MS", "COMMAND"}};
    for (const auto& c : commands) {
      std::string line = c.command.substr(0, c.command.find('\n'));
      if (line.size() > 120 || line.size() < c.command.size()) line = line.substr(0, 120) + " …";
      const bool ran = c.failure == "ok" || c.failure == "command failed";
      command_rows.push_back({c.at, c.node, ran ? std::to_string(c.exit_code) : c.failure,
                              std::to_string(c.duration_ms), line});
    }
    print_table(out, command_rows);
  }
  return out.str();
}

std::string status_overview_text(const std::vector<RunRecord>& runs, const std::vector<PhaseResult>& latest,
                                 const std::vector<CheckResult>& latest_checks) {
  std::ostringstream out;
  out << "Runs, newest first:\n";
  std::vector<std::vector<std::string>> rows = {{"RUN", "COMMAND", "STARTED", "STATUS", "EXIT", "NODES"}};
  for (const auto& r : runs) {
    rows.push_back({std::to_string(r.id), r.command, r.started_at, to_string(r.status),
                    r.status == RunStatus::Running ? "-" : std::to_string(r.exit_code), std::to_string(r.nodes.size())});
  }
  print_table(out, rows);

  // Latest state per node, phases in their fixed order.
  std::map<std::string, std::map<std::string, const PhaseResult*>> by_node;
  for (const auto& r : latest) by_node[r.node][r.phase] = &r;
  out << "\nLatest state per node and phase:\n";
  std::vector<std::vector<std::string>> grid = {{"NODE"}};
  for (const auto& phase : phase_order()) grid[0].push_back(phase);
  std::vector<std::string> failures;
  for (const auto& [node, phases] : by_node) {
    std::vector<std::string> row = {node};
    for (const auto& phase : phase_order()) {
      auto it = phases.find(phase);
      row.push_back(it == phases.end() ? "-" : to_string(it->second->status));
      if (it != phases.end() && (it->second->status == PhaseStatus::Failed || it->second->status == PhaseStatus::RolledBack)) {
        failures.push_back(node + " " + phase + " (run " + std::to_string(it->second->run_id) + "): " +
                           (it->second->failed_step.empty() ? "" : "step " + it->second->failed_step + ": ") +
                           it->second->message);
      }
    }
    grid.push_back(row);
  }
  print_table(out, grid);
  if (!failures.empty()) {
    out << "\nFailures:\n";
    for (const auto& f : failures) out << "  " << f << "\n";
  }
  print_latest_checks(out, latest_checks);
  return out.str();
}

std::string unlock_text(const std::vector<LockConflict>& released, bool only_some_nodes) {
  if (released.empty()) return std::string("No locks held") + (only_some_nodes ? " on those nodes" : "") + "\n";
  std::string out;
  for (const auto& conflict : released) out += "released: " + describe(conflict) + "\n";
  return out;
}

}  // namespace gpuexpand
