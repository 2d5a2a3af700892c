#include "gpuexpand/view/report_view.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand {
namespace {

std::string html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string md(const std::string& text) {  // a Markdown table cell
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string fixed(double value, int decimals = 1) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// How a node's phase ended, for the grid: a result row or nothing (the
// phase had nothing to change, or the node stopped before it).
struct Cell {
  std::string css, text, title;
};

Cell cell_for(const PhaseResult* r, const std::string& node_result) {
  if (!r) {
    if (node_result == "unreachable") return {"unreachable", "—", "unreachable"};
    return {"none", "", "nothing to change"};
  }
  switch (r->status) {
    case PhaseStatus::Succeeded:
      return {"changed", std::to_string(r->changes), std::to_string(r->changes) + " change(s), " + fixed(r->duration_s) + " s"};
    case PhaseStatus::RolledBack:
      return {"failed", "rolled back", r->failed_step + ": " + r->message};
    case PhaseStatus::Failed:
      return {"failed", "FAILED", r->failed_step + ": " + r->message};
    case PhaseStatus::Running:
      return {"running", "running", "still running, or the controller died"};
    default:
      return {"none", "", ""};
  }
}

struct Figure {
  std::string node;
  double value;
  std::string unit;
};

// The first "NUMBER UNIT" of a passed check's detail ("412 MB/s write").
std::map<std::string, std::vector<Figure>> figures_of(const std::vector<CheckResult>& checks) {
  static const std::regex number_unit(R"((\d+(?:\.\d+)?)\s*(MB/s|GB/s|Gb/s|Mb/s|ms|us|GiB|MiB))");
  std::map<std::string, std::vector<Figure>> out;
  for (const auto& c : checks) {
    std::smatch m;
    if (c.status == CheckStatus::Pass && std::regex_search(c.detail, m, number_unit)) {
      out[c.check].push_back({c.node, std::stod(m[1].str()), m[2].str()});
    }
  }
  return out;
}

const char* const kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
td:first-child { white-space: nowrap; }
td.changed { background: #c8e6c9; } td.failed { background: #ffcdd2; font-weight: bold; }
td.unreachable { background: #e0e0e0; } td.running { background: #fff9c4; } td.none { background: #fafafa; }
.summary span, .legend span { margin-right: 16px; } .fail { color: #b71c1c; } .pass { color: #1b5e20; }
)css";

}  // namespace

long long rfc3339_seconds(const std::string& text) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &year, &month, &day, &hour, &minute, &second) != 6) return -1;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<long long>(timegm(&tm));
}

std::string run_report_html(const RunReportData& d) {
  std::ostringstream out;
  std::map<std::string, std::string> result_of;
  std::map<std::string, std::string> reason_of;
  for (const auto& n : d.nodes) {
    result_of[n.node] = n.result;
    reason_of[n.node] = n.message;
  }
  std::map<std::pair<std::string, std::string>, const PhaseResult*> by_cell;
  for (const auto& p : d.phases) by_cell[{p.node, p.phase}] = &p;
  std::map<std::string, size_t> tally;
  for (const auto& node : d.run.nodes) ++tally[result_of.count(node) && !result_of[node].empty() ? result_of[node] : "not finished"];

  const std::string title = "gpuexpand run " + std::to_string(d.run.id) + ": " + d.run.command + " " + d.run.spec_file;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << html(title) << "</title><style>"
      << kStyle << "</style></head><body>\n<h1>" << html(title) << "</h1>\n<p class=\"summary\"><span>"
      << html(to_string(d.run.status)) << " (exit " << d.run.exit_code << ")</span><span>" << html(d.run.started_at) << " .. "
      << html(d.run.finished_at) << "</span><span>" << d.run.nodes.size() << " nodes:";
  for (const auto& [result, count] : tally) out << " " << count << " " << html(result) << ";";
  out << "</span><span>" << d.commands << " remote commands</span></p>\n";

  out << "<h2>Nodes and phases</h2>\n<table id=\"grid\"><tr><th>node</th><th>result</th>";
  for (const auto& phase : d.phase_order) out << "<th>" << html(phase) << "</th>";
  out << "</tr>\n";
  for (const auto& node : d.run.nodes) {
    out << "<tr><td>" << html(node) << "</td><td>" << html(result_of[node].empty() ? "-" : result_of[node]) << "</td>";
    for (const auto& phase : d.phase_order) {
      const auto it = by_cell.find({node, phase});
      const Cell c = cell_for(it == by_cell.end() ? nullptr : it->second, result_of[node]);
      out << "<td class=\"" << c.css << "\" title=\"" << html(c.title) << "\">" << html(c.text) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n";

  // The timeline: one row per node, a bar per phase from its start to its end.
  const long long begin = rfc3339_seconds(d.run.started_at);
  long long end = std::max(begin, rfc3339_seconds(d.run.finished_at));
  for (const auto& p : d.phases) end = std::max(end, rfc3339_seconds(p.finished_at));
  const double span = static_cast<double>(std::max<long long>(1, end - begin));
  const int row = 22, label = 140, width = 760;
  static const char* const kColours[] = {"#42a5f5", "#ab47bc", "#26a69a", "#ffa726", "#8d6e63", "#5c6bc0", "#66bb6a"};
  out << "<h2>Timeline</h2>\n<p class=\"legend\">";
  for (size_t k = 0; k < d.phase_order.size(); ++k) {
    out << "<span style=\"border-left: 12px solid " << kColours[k % 7] << "; padding-left: 4px\">" << html(d.phase_order[k])
        << "</span>";
  }
  out << "<span style=\"border-left: 12px solid #e53935; padding-left: 4px\">failed</span></p>\n";
  out << "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label + width + 20
      << "\" height=\"" << row * static_cast<int>(d.run.nodes.size()) + 30 << "\">\n";
  for (size_t i = 0; i < d.run.nodes.size(); ++i) {
    const int y = static_cast<int>(i) * row + 4;
    out << "<text x=\"0\" y=\"" << y + 14 << "\" font-size=\"12\">" << html(d.run.nodes[i]) << "</text>\n";
    for (const auto& p : d.phases) {
      if (p.node != d.run.nodes[i]) continue;
      const long long s = rfc3339_seconds(p.started_at), f = rfc3339_seconds(p.finished_at);
      if (s < 0 || begin < 0) continue;
      const double x = label + (static_cast<double>(s - begin) / span) * width;
      const double w = std::max(2.0, (static_cast<double>(std::max(f, s) - s) / span) * width);
      size_t colour = 0;
      for (size_t k = 0; k < d.phase_order.size(); ++k) {
        if (d.phase_order[k] == p.phase) colour = k % 7;
      }
      const bool failed = p.status == PhaseStatus::Failed || p.status == PhaseStatus::RolledBack;
      out << "<rect class=\"phase\" x=\"" << fixed(x) << "\" y=\"" << y << "\" width=\"" << fixed(w) << "\" height=\"16\" fill=\""
          << (failed ? "#e53935" : kColours[colour]) << "\"><title>" << html(p.node + " " + p.phase + ": " + fixed(p.duration_s) + " s")
          << "</title></rect>\n";
    }
  }
  out << "<text x=\"" << label << "\" y=\"" << row * static_cast<int>(d.run.nodes.size()) + 24
      << "\" font-size=\"11\">0 s</text><text x=\"" << label + width - 40 << "\" y=\""
      << row * static_cast<int>(d.run.nodes.size()) + 24 << "\" font-size=\"11\">" << fixed(span, 0) << " s</text>\n</svg>\n";

  out << "<h2>Failures</h2>\n";
  bool any = false;
  std::ostringstream failures;
  for (const auto& p : d.phases) {
    if (p.status != PhaseStatus::Failed && p.status != PhaseStatus::RolledBack) continue;
    any = true;
    failures << "<li><b>" << html(p.node) << "</b> phase " << html(p.phase) << ", step " << html(p.failed_step) << ": "
             << html(p.message) << (p.status == PhaseStatus::RolledBack ? " (rolled back)" : "") << "</li>\n";
  }
  for (const auto& n : d.nodes) {
    if (n.result != "unreachable") continue;
    any = true;
    failures << "<li><b>" << html(n.node) << "</b> unreachable: " << html(n.message) << "</li>\n";
  }
  out << (any ? "<ul id=\"failures\">\n" + failures.str() + "</ul>\n" : std::string("<p id=\"failures\">None.</p>\n"));

  out << "<h2>Acceptance</h2>\n";
  if (d.checks.empty()) {
    out << "<p>No acceptance checks in this run.</p>\n";
  } else {
    out << "<table id=\"checks\"><tr><th>node</th><th>check</th><th>result</th><th>detail</th></tr>\n";
    for (const auto& c : d.checks) {
      const std::string status(check_status_name(c.status));
      out << "<tr><td>" << html(c.node) << "</td><td>" << html(c.check) << "</td><td class=\""
          << (c.status == CheckStatus::Fail ? "fail" : "pass") << "\">" << html(status) << "</td><td>" << html(c.detail)
          << "</td></tr>\n";
    }
    out << "</table>\n";
    for (const auto& [check, figures] : figures_of(d.checks)) {
      double top = 0;
      for (const auto& f : figures) top = std::max(top, f.value);
      out << "<h3>" << html(check) << " (" << html(figures.front().unit) << ")</h3>\n<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"620\" height=\""
          << figures.size() * 20 + 6 << "\">\n";
      for (size_t i = 0; i < figures.size(); ++i) {
        const double w = top > 0 ? figures[i].value / top * 400 : 0;
        const size_t y = i * 20 + 2;
        out << "<text x=\"0\" y=\"" << y + 13 << "\" font-size=\"12\">" << html(figures[i].node) << "</text><rect x=\"140\" y=\""
            << y << "\" width=\"" << fixed(w) << "\" height=\"15\" fill=\"#42a5f5\"/><text x=\"" << fixed(146 + w) << "\" y=\""
            << y + 13 << "\" font-size=\"12\">" << fixed(figures[i].value) << "</text>\n";
      }
      out << "</svg>\n";
    }
  }
  out << "</body></html>\n";
  return out.str();
}

std::string run_report_markdown(const RunReportData& d) {
  std::ostringstream out;
  std::map<std::string, std::string> result_of;
  for (const auto& n : d.nodes) result_of[n.node] = n.result;
  std::map<std::pair<std::string, std::string>, const PhaseResult*> by_cell;
  for (const auto& p : d.phases) by_cell[{p.node, p.phase}] = &p;
  out << "### gpuexpand run " << d.run.id << ": " << md(d.run.command) << " `" << md(d.run.spec_file) << "`\n\n"
      << md(to_string(d.run.status)) << " (exit " << d.run.exit_code << "), " << md(d.run.started_at) << " .. "
      << md(d.run.finished_at) << ", " << d.run.nodes.size() << " nodes, " << d.commands << " remote commands\n\n"
      << "| node | result |";
  for (const auto& phase : d.phase_order) out << " " << md(phase) << " |";
  out << "\n|---|---|";
  for (size_t i = 0; i < d.phase_order.size(); ++i) out << "---|";
  out << "\n";
  for (const auto& node : d.run.nodes) {
    out << "| " << md(node) << " | " << md(result_of[node].empty() ? "-" : result_of[node]) << " |";
    for (const auto& phase : d.phase_order) {
      const auto it = by_cell.find({node, phase});
      const Cell c = cell_for(it == by_cell.end() ? nullptr : it->second, result_of[node]);
      out << " " << md(c.css == "changed" ? "✓ " + c.text : c.css == "failed" ? "✗ " + c.text : c.text) << " |";
    }
    out << "\n";
  }
  std::vector<std::string> failures;
  for (const auto& p : d.phases) {
    if (p.status == PhaseStatus::Failed || p.status == PhaseStatus::RolledBack) {
      failures.push_back("- **" + md(p.node) + "** phase " + md(p.phase) + ", step " + md(p.failed_step) + ": " + md(p.message));
    }
  }
  for (const auto& n : d.nodes) {
    if (n.result == "unreachable") failures.push_back("- **" + md(n.node) + "** unreachable: " + md(n.message));
  }
  if (!failures.empty()) {
    out << "\n<details><summary>" << failures.size() << " failure(s)</summary>\n\n";
    for (const auto& f : failures) out << f << "\n";
    out << "\n</details>\n";
  }
  return out.str();
}

}  // namespace gpuexpand
