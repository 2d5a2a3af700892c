#include "gpuexpand/facts/facts_compare.hpp"

#include <set>

#include "gpuexpand/steps/params.hpp"
#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

// Facts that are a node's own by design, or move on their own.
bool left_out(const std::string& path) {
  static const std::set<std::string> kTopLevel = {"collected_at", "node", "schema_version", "hostname",
                                                  "disk_free_bytes", "unreachable"};
  const std::string top = path.substr(0, path.find_first_of(".["));
  if (kTopLevel.count(top)) return true;
  const auto ends_with = [&](const std::string& tail) {
    return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  // Each device's own serial-like identity: alike nodes never share it.
  for (const char* tail : {".mac", ".port_guid", ".uuid", ".serial"}) {
    if (ends_with(tail)) return true;
  }
  return (top == "network" && ends_with(".addresses")) || ends_with(".temperature_c") || ends_with(".uptime_s");
}

std::string replace_all(std::string text, const std::string& value, const std::string& with) {
  if (value.empty()) return text;
  for (size_t at = text.find(value); at != std::string::npos; at = text.find(value, at + with.size())) {
    text.replace(at, value.size(), with);
  }
  return text;
}

struct Own {
  const NodeSpec& node;
  std::string hostname;  // as the node reports it: a bare node's factory name
};

void flatten(const json& value, const std::string& path, const Own& own, std::map<std::string, std::string>& out) {
  const NodeSpec& node = own.node;
  if (!path.empty() && left_out(path)) return;
  if (value.is_object()) {
    if (value.empty()) out[path] = "{}";
    // A file whose content is known: its size and digest say nothing more.
    const bool content_known = path.rfind("files.", 0) == 0 && value.contains("content");
    for (const auto& [key, item] : value.items()) {
      if (content_known && (key == "size" || key == "sha256")) continue;
      flatten(item, path.empty() ? key : path + "." + key, own, out);
    }
    return;
  }
  if (value.is_array()) {
    bool keyed = !value.empty();
    for (const auto& item : value) keyed = keyed && item.is_object() && !list_element_name(item).empty();
    if (keyed) {
      for (const auto& item : value) flatten(item, path + "[" + list_element_name(item) + "]", own, out);
      return;
    }
    bool scalars = true;
    for (const auto& item : value) scalars = scalars && item.is_primitive();
    if (scalars) {
      std::string joined;
      for (const auto& item : value) joined += (joined.empty() ? "" : ", ") + (item.is_string() ? item.get<std::string>() : item.dump());
      out[path] = value.empty() ? "[]" : joined;
      return;
    }
    out[path] = value.dump();
    return;
  }
  if (value.is_null()) {
    out[path] = "-";  // reported as absent (a package not installed)
    return;
  }
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  text = replace_all(text, node.name, "{node.name}");
  if (!node.address.empty() && node.address != node.name) text = replace_all(text, node.address, "{node.address}");
  // In a file (/etc/hosts, /etc/hostname) the node's hostname is its own too.
  if (path.rfind("files.", 0) == 0 && own.hostname.size() >= 3) text = replace_all(text, own.hostname, "{hostname}");
  out[path] = text;
}

struct SideValue {
  std::string text;
  bool agreed = true;
};

// One side's value of `fact`: the value when its nodes agree, else each
// value with its nodes.
SideValue side_value(const std::vector<const NodeSpec*>& side,
                       const std::map<std::string, std::map<std::string, std::string>>& flat, const std::string& fact) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> nodes_by_value;
  for (const auto* node : side) {
    const auto facts = flat.find(node->name);
    if (facts == flat.end()) continue;
    const auto found = facts->second.find(fact);
    const std::string value = found == facts->second.end() ? "-" : found->second;
    auto& nodes = nodes_by_value[value];
    if (nodes.empty()) order.push_back(value);
    nodes.push_back(node->name);
  }
  if (order.size() <= 1) return {order.empty() ? "-" : order.front(), true};
  std::string text;
  for (const auto& value : order) text += (text.empty() ? "" : "; ") + value + " (" + fold_hostlist(nodes_by_value[value]) + ")";
  return {text, false};
}

}  // namespace

std::map<std::string, std::string> flatten_facts(const json& facts, const NodeSpec& node) {
  std::map<std::string, std::string> out;
  const Own own{node, facts.contains("hostname") && facts["hostname"].is_string() ? facts["hostname"].get<std::string>() : ""};
  flatten(facts, "", own, out);
  return out;
}

FactComparison compare_facts(const FactsByNode& facts, const std::vector<const NodeSpec*>& a,
                                          const std::vector<const NodeSpec*>& b) {
  std::map<std::string, std::map<std::string, std::string>> flat;
  std::set<std::string> all_facts;
  for (const auto& side : {a, b}) {
    for (const auto* node : side) {
      const auto found = facts.find(node->name);
      if (found == facts.end() || found->second.contains("unreachable") || flat.count(node->name)) continue;
      auto& mine = flat[node->name] = flatten_facts(found->second, *node);
      for (const auto& [fact, _] : mine) all_facts.insert(fact);
    }
  }
  FactComparison comparison;
  comparison.facts = all_facts.size();
  auto& differences = comparison.differences;
  for (const auto& fact : all_facts) {
    const SideValue in_a = side_value(a, flat, fact), in_b = side_value(b, flat, fact);
    if (in_a.text != in_b.text || !in_a.agreed || !in_b.agreed) differences.push_back({fact, in_a.text, in_b.text, !in_a.agreed || !in_b.agreed});
  }
  return comparison;
}

}  // namespace gpuexpand
