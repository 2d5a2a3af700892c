#include "gpuexpand/exec/run_log.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace gpuexpand {
namespace fs = std::filesystem;

namespace {

// Each line of `text` (no trailing newline of its own) after `mark`.
void add_lines(std::string& out, const std::string& mark, const std::string& text) {
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    out += "  " + mark + text.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
}

void add_output(std::string& out, const std::string& mark, const std::string& text) {
  if (text.size() <= RunLog::kOutputKept) {
    add_lines(out, mark, text);
    return;
  }
  size_t cut = text.size() - RunLog::kOutputKept;
  const size_t newline = text.find('\n', cut);  // start at a whole line
  if (newline != std::string::npos && newline + 1 < text.size()) cut = newline + 1;
  out += "  " + mark + "(" + std::to_string(cut) + " bytes before this not kept)\n";
  add_lines(out, mark, text.substr(cut));
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", seconds);
  return text;
}

// Keeps the newest kRunsKept run folders (numbered) under `runs`.
void prune_old_runs(const fs::path& runs, int64_t current) {
  std::error_code ec;
  std::vector<int64_t> ids;
  for (const auto& entry : fs::directory_iterator(runs, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    try {
      ids.push_back(std::stoll(name));
    } catch (...) {
      continue;  // a name too long to be a run
    }
  }
  std::sort(ids.begin(), ids.end(), std::greater<>());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i >= static_cast<size_t>(RunLog::kRunsKept) && ids[i] != current) fs::remove_all(runs / std::to_string(ids[i]), ec);
  }
}

}  // namespace

std::string RunLog::runs_directory(const std::string& store_path) {
  return (fs::path(store_path).parent_path() / "runs").string();
}

std::string RunLog::directory(const std::string& store_path, int64_t run_id) {
  return (fs::path(runs_directory(store_path)) / std::to_string(run_id)).string();
}

RunLog::RunLog(const std::string& store_path, int64_t run_id, std::string (*now)())
    : dir_(directory(store_path, run_id)), now_(now) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    error_ = "the run's logs are not kept: cannot make " + dir_ + ": " + ec.message();
    return;
  }
  prune_old_runs(runs_directory(store_path), run_id);
}

void RunLog::append(const std::string& node, const std::string& text) {
  if (!error_.empty()) return;
  // A node name is checked by the spec's schema; still, never a path.
  if (node.empty() || node.find('/') != std::string::npos || node == "." || node == "..") return;
  const std::string path = dir_ + "/" + node + ".log";
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
  out.flush();
  if (!out) error_ = "the run's logs are incomplete: cannot write " + path;
}

void RunLog::command(const AuditRecord& r) {
  std::string entry = now_() + " $ ";
  const size_t first_newline = r.command.find('\n');
  entry += r.command.substr(0, first_newline) + "\n";
  if (first_newline != std::string::npos) add_lines(entry, "> ", r.command.substr(first_newline + 1));
  if (r.stdin_bytes > 0) {
    entry += "  stdin: " + std::to_string(r.stdin_bytes) + " bytes, sha256 " + r.stdin_sha256 + "\n";
  }
  add_output(entry, "| ", r.out);
  add_output(entry, "! ", r.err);
  const double seconds = std::chrono::duration<double>(r.duration).count();
  if (r.failure == FailureKind::None || r.failure == FailureKind::CommandFailed) {
    entry += "  = exit " + std::to_string(r.exit_code) + " (" + seconds_text(seconds) + ")\n";
  } else {
    entry += "  = " + std::string(failure_name(r.failure)) + " (" + seconds_text(seconds) + ")" +
             (r.message.empty() ? "" : ": " + r.message) + "\n";
  }
  append(r.node, entry);
}

void RunLog::phase_started(const std::string& node, const std::string& phase) {
  append(node, now_() + " phase " + phase + ": started\n");
}

void RunLog::phase_finished(const PhaseRecord& r) {
  std::string line = now_() + " phase " + r.phase + ": ";
  if (r.status == PhaseStatus::Succeeded) {
    line += "changed (" + std::to_string(r.changes) + (r.changes == 1 ? " change, " : " changes, ") +
            seconds_text(r.seconds) + ")";
  } else {
    line += std::string(r.status == PhaseStatus::RolledBack ? "FAILED, rolled back" : "FAILED") + " (" +
            seconds_text(r.seconds) + ")" + (r.failed_step.empty() ? "" : " at step " + r.failed_step) + ": " + r.message;
  }
  append(r.node, line + "\n");
}

void RunLog::checks(const std::string& node, const std::vector<CheckResult>& results) {
  std::string text;
  for (const auto& r : results) {
    const char* status = r.status == CheckStatus::Pass ? "pass" : r.status == CheckStatus::Fail ? "fail" : "skip";
    text += now_() + " check " + r.check + ": " + status + (r.detail.empty() ? "" : ": " + r.detail) + "\n";
  }
  append(node, text);
}

void RunLog::node_finished(const std::string& node, NodeResult result, const std::string& message) {
  append(node, now_() + " node: " + to_string(result) + (message.empty() ? "" : ": " + message) + "\n");
}

namespace {

struct Entry {
  std::string text;  // its lines, each ending in '\n'
  std::string phase;  // the phase it belongs to ("" outside phases)
  bool failed = false;
};

// "TIME WORD…": what follows the time stamp.
std::string after_time(const std::string& line) {
  const size_t space = line.find(' ');
  return space == std::string::npos ? "" : line.substr(space + 1);
}

std::vector<Entry> split_entries(const std::string& log) {
  std::vector<Entry> entries;
  std::string current_phase;
  size_t begin = 0;
  while (begin < log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(begin, end - begin);
    begin = end + 1;
    if (line.rfind("  ", 0) == 0 && !entries.empty()) {
      entries.back().text += line + "\n";
      if (line.rfind("  = ", 0) == 0 && line.rfind("  = exit 0 ", 0) != 0) entries.back().failed = true;
      continue;
    }
    Entry entry{line + "\n", current_phase, false};
    const std::string what = after_time(line);
    if (what.rfind("phase ", 0) == 0) {
      const size_t colon = what.find(": ");
      const std::string phase = what.substr(6, colon == std::string::npos ? std::string::npos : colon - 6);
      entry.phase = phase;
      const bool started = colon != std::string::npos && what.compare(colon + 2, std::string::npos, "started") == 0;
      current_phase = started ? phase : "";
      entry.failed = what.find(": FAILED") != std::string::npos;
    } else if (what.rfind("check ", 0) == 0) {
      entry.failed = what.find(": fail") != std::string::npos;
    } else if (what.rfind("node: ", 0) == 0) {
      entry.failed = what.rfind("node: changed", 0) != 0 && what.rfind("node: unchanged", 0) != 0;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

std::string filter_run_log(const std::string& log, const std::string& phase, bool failed_only) {
  if (phase.empty() && !failed_only) return log;
  std::string out;
  for (const Entry& entry : split_entries(log)) {
    if (!phase.empty() && entry.phase != phase) continue;
    if (failed_only && !entry.failed) continue;
    out += entry.text;
  }
  return out;
}

}  // namespace gpuexpand
