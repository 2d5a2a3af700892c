#include "gpuexpand/view/facts_view.hpp"

#include <algorithm>
#include <cstdio>

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

std::string facts_summary_line(size_t nodes, size_t unreachable, double seconds) {
  char timing[64];
  std::snprintf(timing, sizeof timing, " (%.1f s)", seconds);
  return std::to_string(nodes) + (nodes == 1 ? " node: " : " nodes: ") + std::to_string(nodes - unreachable) +
         " answered, " + std::to_string(unreachable) + " unreachable" + timing + "\n";
}

}  // namespace gpuexpand
