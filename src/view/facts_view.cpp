#include "gpuexpand/view/facts_view.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string cell(const json& facts, const json::json_pointer& at, const std::string& fallback = "-") {
  if (!facts.contains(at) || facts.at(at).is_null()) return fallback;
  const auto& v = facts.at(at);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string facts_table(const std::vector<const NodeSpec*>& nodes, const FactsByNode& facts) {
  std::vector<std::vector<std::string>> rows = {{"NODE", "OS", "KERNEL", "HOSTNAME", "GPUS", "DRIVER"}};
  std::vector<std::string> unreachable;
  for (const auto* node : nodes) {
    const auto found = facts.find(node->name);
    if (found == facts.end()) continue;
    const json& f = found->second;
    if (f.contains("unreachable")) {
      unreachable.push_back(f["unreachable"].is_string() ? f["unreachable"].get<std::string>() : node->name);
      continue;
    }
    const json& model = f.contains("/gpus/model"_json_pointer) ? f.at("/gpus/model"_json_pointer) : json();
    const std::string gpus = cell(f, "/gpus/count"_json_pointer, "0") + (model.is_string() ? " x " + model.get<std::string>() : "");
    rows.push_back({node->name, cell(f, "/os/pretty_name"_json_pointer), cell(f, "/os/kernel"_json_pointer),
                    cell(f, "/hostname"_json_pointer), gpus, cell(f, "/gpus/driver_version"_json_pointer)});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += "\n";
  }
  for (const auto& reason : unreachable) out += "unreachable: " + reason + "\n";
  return out;
}

namespace {

// Columns on a terminal: UTF-8 continuation bytes take none.
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return width;
}

std::string one_line(std::string text) {
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 2)) text.replace(at, 1, "\\n");
  if (display_width(text) > 60) {
    size_t cut = 59;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    text = text.substr(0, cut) + "…";
  }
  return text;
}

// The lines of a text; a final newline ends the last line, it starts none.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    lines.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return lines;
}

// Two contents of a file, by the first line where they part:
// "line 4: 198.18.0.99 extra-host" against "line 4: (end)".
std::pair<std::string, std::string> first_differing_line(const std::string& a, const std::string& b) {
  const auto la = lines_of(a), lb = lines_of(b);
  size_t i = 0;
  while (i < la.size() && i < lb.size() && la[i] == lb[i]) ++i;
  const auto at = [i](const std::vector<std::string>& lines) {
    return "line " + std::to_string(i + 1) + ": " + (i < lines.size() ? lines[i] : "(end)");
  };
  return {at(la), at(lb)};
}

}  // namespace

std::string facts_diff_table(const std::string& a, const std::string& b, const std::vector<FactDifference>& differences,
                             size_t facts_compared) {
  if (differences.empty()) {
    return "No differences between " + a + " and " + b + " in " + std::to_string(facts_compared) + " facts\n";
  }
  std::vector<std::vector<std::string>> rows = {{"FACT", a, b}};
  for (const auto& d : differences) {
    const bool multiline = d.a.find('\n') != std::string::npos || d.b.find('\n') != std::string::npos;
    if (multiline && !d.mixed && d.a != "-" && d.b != "-") {
      const auto [a_line, b_line] = first_differing_line(d.a, d.b);
      rows.push_back({d.fact, one_line(a_line), one_line(b_line)});
    } else {
      rows.push_back({d.fact, one_line(d.a), one_line(d.b)});
    }
  }
  std::vector<size_t> widths(3, 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < 2; ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    out += row[0] + std::string(widths[0] - display_width(row[0]) + 2, ' ') + row[1] +
           std::string(widths[1] - display_width(row[1]) + 2, ' ') + row[2] + "\n";
  }
  return out + std::to_string(differences.size()) + (differences.size() == 1 ? " fact differs" : " facts differ") +
         " (of " + std::to_string(facts_compared) + ")\n";
}

std::string consistency_text(const ConsistencyReport& report, const std::string& when) {
  std::string out;
  if (report.reference_nodes.empty()) {
    out += "Consistency not checked: no reference node answered\n";
    for (const auto& [node, why] : report.unreachable) out += "  " + node + ": " + why + "\n";
    return out;
  }
  const std::string reference = fold_hostlist(report.reference_nodes);
  const std::string nodes = fold_hostlist(report.nodes);
  const size_t node_count = report.nodes.size();
  if (report.consistent()) {
    return "Consistent: " + (nodes.empty() ? std::string("no node") : nodes) + (node_count == 1 ? " matches" : " match") +
           " the reference nodes " + reference + " in " + std::to_string(report.facts) + " facts (" + when + ")\n";
  }
  out += "Consistency with the reference nodes " + reference + " (" + std::to_string(report.facts) + " facts, the nodes " +
         when + "):\n";
  for (const auto& [node, why] : report.unreachable) out += "  reference node " + node + " unreachable: " + why + "\n";
  for (const auto& [fact, values] : report.reference_disagreements) {
    std::string listed;
    for (const auto& v : values) listed += (listed.empty() ? "" : "; ") + one_line(v.value) + " (" + fold_hostlist(v.nodes) + ")";
    out += "  the reference nodes disagree on " + fact + ": " + listed + "\n";
  }
  std::set<std::string> differing;
  for (const auto& d : report.differences) {
    std::string value = d.value, expected = d.reference;
    if (value.find('\n') != std::string::npos || expected.find('\n') != std::string::npos) {
      if (value != "-" && expected != "-") std::tie(value, expected) = first_differing_line(value, expected);
    }
    out += "  " + fold_hostlist(d.nodes) + ": " + d.fact + " " + one_line(value) + ", reference " + one_line(expected) +
           " (" + fold_hostlist(d.reference_nodes) + ")\n";
    differing.insert(d.nodes.begin(), d.nodes.end());
  }
  if (!differing.empty()) {
    out += "  " + std::to_string(differing.size()) + " of " + std::to_string(node_count) +
           (node_count == 1 ? " node differs" : " nodes differ") + " from the reference\n";
  }
  return out;
}

std::string facts_summary_line(size_t nodes, size_t unreachable, double seconds, size_t handshake_retries) {
  char timing[96];
  if (handshake_retries > 0) {
    std::snprintf(timing, sizeof timing, " (%.1f s; %zu refused or reset handshake%s tried again)", seconds,
                  handshake_retries, handshake_retries == 1 ? "" : "s");
  } else {
    std::snprintf(timing, sizeof timing, " (%.1f s)", seconds);
  }
  return std::to_string(nodes) + (nodes == 1 ? " node: " : " nodes: ") + std::to_string(nodes - unreachable) +
         " answered, " + std::to_string(unreachable) + " unreachable" + timing + "\n";
}

}  // namespace gpuexpand
