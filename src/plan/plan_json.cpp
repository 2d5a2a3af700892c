// The plan document, folded: nodes whose phases are the same once their
// own values (name, address, compute addresses) are placeholders share one
// entry of "plans". The text plan folds the same way (view/plan_text.cpp);
// here the fold is also checked to be exact: a node's phases are shared
// only when expanding the shared entry with its values gives back exactly
// its own, so no reader can be shown content a node would not get.

#include <map>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;
using Values = std::vector<std::pair<std::string, std::string>>;  // placeholder, value

bool digit(char c) { return c >= '0' && c <= '9'; }

// `value` replaced by `placeholder` wherever it is not part of a longer
// number ("node-01" inside "accept-node-01" is the node's; inside "node-012"
// or "10.0.0.1" inside "10.0.0.12" it is not).
std::string abstract_word(const std::string& text, const std::string& value, const std::string& placeholder) {
  if (value.empty()) return text;
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(value); at != std::string::npos; at = text.find(value, at + 1)) {
    if (at < from) continue;
    const size_t end = at + value.size();
    if ((digit(value.front()) && at > 0 && digit(text[at - 1])) ||
        (digit(value.back()) && end < text.size() && digit(text[end]))) {
      continue;
    }
    out += text.substr(from, at - from) + placeholder;
    from = end;
  }
  return out + text.substr(from);
}

std::string expand_all(std::string text, const std::string& placeholder, const std::string& value) {
  for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size())) {
    text.replace(at, placeholder.size(), value);
  }
  return text;
}

// Every string in `j`, object keys too, through `f`.
template <class F>
json map_strings(const json& j, const F& f) {
  if (j.is_string()) return f(j.get<std::string>());
  if (j.is_array()) {
    json out = json::array();
    for (const auto& item : j) out.push_back(map_strings(item, f));
    return out;
  }
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [key, item] : j.items()) out[f(key)] = map_strings(item, f);
    return out;
  }
  return j;
}

}  // namespace

json node_phases_json(const NodePlan& node) {
  json phases = json::array();
  for (const auto& phase : node.phases) {
    json p = {{"name", phase.phase}, {"changes", json::array()}};
    for (const auto& c : phase.changes) {
      json change = {{"step", c.step}, {"type", c.type}, {"action", action_name(c.action)},
                     {"target", c.target}, {"reason", c.reason}};
      if (!c.variant.empty()) change["variant"] = c.variant;
      p["changes"].push_back(std::move(change));
    }
    p["steps"] = json::array();
    for (const auto& step : phase.steps) {
      p["steps"].push_back({{"key", step.key}, {"id", step.id}, {"type", step.type}, {"params", step.params}});
    }
    phases.push_back(std::move(p));
  }
  return phases;
}

namespace {

Values own_values(const NodePlan& node) {
  Values values = node.own_values;  // the longer, more specific values first
  values.emplace_back("{node.name}", node.node);
  if (node.address != node.node) values.emplace_back("{node.address}", node.address);
  return values;
}

// The node's phases with its own values as placeholders, or as they are
// when that would not expand back exactly.
json shareable_phases(const NodePlan& node, const json& phases) {
  const Values values = own_values(node);
  bool exact = true;  // every string expands back to itself
  json abstracted = map_strings(phases, [&](const std::string& text) {
    // Most strings hold none of the node's values and no brace: as they are.
    bool touched = text.find('{') != std::string::npos;
    for (size_t i = 0; i < values.size() && !touched; ++i) touched = !values[i].second.empty() && text.find(values[i].second) != std::string::npos;
    if (!touched) return text;
    std::string out = text;
    for (const auto& [placeholder, value] : values) out = abstract_word(out, value, placeholder);
    std::string back = out;
    for (auto it = values.rbegin(); it != values.rend(); ++it) back = expand_all(back, it->first, it->second);
    exact = exact && back == text;
    return out;
  });
  return exact ? abstracted : phases;
}

}  // namespace

json plan_to_json(const Plan& plan) {
  const PlanSummary s = plan.summary();
  json out = {
      {"format_version", Plan::kFormatVersion},
      {"kind", "gpuexpand-plan"},
      {"created_at", plan.created_at},
      {"cluster", plan.cluster},
      {"spec", {{"file", plan.spec_file}, {"sha256", plan.spec_sha256}}},
      {"playbooks_sha256", plan.playbooks_sha256},
      {"summary",
       {{"nodes", s.nodes}, {"to_change", s.to_change}, {"unchanged", s.unchanged},
        {"unreachable", s.unreachable}, {"errors", s.errors}, {"changes", s.changes}, {"reboots", s.reboots}}},
      {"nodes", json::array()},
      {"plans", json::array()},
  };
  std::map<std::string, size_t> plan_by_content;
  std::vector<std::vector<std::string>> members;
  for (const auto& node : plan.nodes) {
    json n = {{"name", node.node},   {"address", node.address},          {"rack", node.rack},
              {"groups", node.groups}, {"status", status_name(node.status)}};
    if (!node.message.empty()) n["message"] = node.message;
    if (!node.facts_sha256.empty()) n["facts_sha256"] = node.facts_sha256;
    if (!node.own_values.empty()) {
      n["values"] = json::object();
      for (const auto& [placeholder, value] : node.own_values) n["values"][placeholder] = value;
    }
    if (node.status == NodeStatus::Changes || node.status == NodeStatus::Unchanged) {
      json phases = shareable_phases(node, node_phases_json(node));
      const std::string key = phases.dump();
      auto [it, fresh] = plan_by_content.emplace(key, members.size());
      if (fresh) {
        members.emplace_back();
        out["plans"].push_back({{"nodes", ""}, {"phases", std::move(phases)}});
      }
      members[it->second].push_back(node.node);
      n["plan"] = it->second;
    }
    out["nodes"].push_back(std::move(n));
  }
  for (size_t i = 0; i < members.size(); ++i) out["plans"][i]["nodes"] = fold_hostlist(members[i]);
  return out;
}

}  // namespace gpuexpand
