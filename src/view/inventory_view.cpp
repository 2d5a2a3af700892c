#include "gpuexpand/view/inventory_view.hpp"

#include <algorithm>
#include <map>

#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

std::string padded(const std::string& s, size_t width) { return s + std::string(width - s.size() + 2, ' '); }

}  // namespace

std::string inventory_table(const std::vector<const NodeSpec*>& nodes) {
  size_t name_width = 4, address_width = 7, rack_width = 4;
  for (const auto* n : nodes) {
    name_width = std::max(name_width, n->name.size());
    address_width = std::max(address_width, n->address.size());
    rack_width = std::max(rack_width, n->rack.size());
  }
  std::string out = padded("NAME", name_width) + padded("ADDRESS", address_width) + padded("RACK", rack_width) + "GROUPS\n";
  for (const auto* n : nodes) {
    out += padded(n->name, name_width) + padded(n->address, address_width) +
           padded(n->rack.empty() ? "-" : n->rack, rack_width) + (n->groups.empty() ? "-" : join(n->groups)) + "\n";
  }
  return out + std::to_string(nodes.size()) + (nodes.size() == 1 ? " node\n" : " nodes\n");
}

std::string inventory_hostlist(const std::vector<const NodeSpec*>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const auto* n : nodes) names.push_back(n->name);
  return fold_hostlist(names) + "\n";
}

nlohmann::json inventory_json(const std::string& cluster, const std::vector<const NodeSpec*>& nodes) {
  nlohmann::json out = {{"cluster", cluster}, {"count", nodes.size()}, {"nodes", nlohmann::json::array()}};
  for (const auto* n : nodes) {
    out["nodes"].push_back({{"name", n->name}, {"address", n->address}, {"rack", n->rack}, {"groups", n->groups}});
  }
  return out;
}

std::string spec_size(const ClusterSpec& spec) {
  std::map<std::string, size_t> racks;
  for (const auto& node : spec.nodes) {
    if (!node.rack.empty()) ++racks[node.rack];
  }
  std::string text = std::to_string(spec.nodes.size()) + (spec.nodes.size() == 1 ? " node" : " nodes");
  if (!racks.empty()) text += " in " + std::to_string(racks.size()) + (racks.size() == 1 ? " rack" : " racks");
  return text;
}

std::string valid_spec_line(const std::string& path, const ClusterSpec& spec) {
  return path + ": valid (" + spec_size(spec) + ")\n";
}

std::string spec_errors_line(const std::string& path, size_t errors) {
  // As every other command ends on an error (plan on the same spec says the same).
  return "gpuexpand: error: " + path + ": " + std::to_string(errors) + (errors == 1 ? " error" : " errors") + "\n";
}

nlohmann::json validate_json_entry(const std::string& path, const SpecLoadResult& result) {
  nlohmann::json entry = {{"file", path}, {"valid", result.spec.has_value()}, {"errors", nlohmann::json::array()}};
  for (const auto& d : result.diagnostics) {
    entry["errors"].push_back(
        {{"file", d.where.file}, {"line", d.where.line}, {"column", d.where.column}, {"message", d.message}});
  }
  if (result.spec) entry["nodes"] = result.spec->nodes.size();
  return entry;
}

}  // namespace gpuexpand
