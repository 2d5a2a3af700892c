#include "gpuexpand/view/plan_text.hpp"

#include <map>

#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

// Replaces whole-token occurrences of `word` ("n1" must not match inside
// "n10") so plans that differ only in the node's own name fold together.
std::string replace_token(const std::string& text, const std::string& word, const std::string& with) {
  if (word.empty()) return text;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t at = text.find(word, pos);
    if (at == std::string::npos) break;
    const bool left_ok = at == 0 || !is_name_char(text[at - 1]);
    const size_t end = at + word.size();
    const bool right_ok = end >= text.size() || !is_name_char(text[end]) ||
                          (text[end] == '.' && (end + 1 >= text.size() || !is_name_char(text[end + 1])));
    out.append(text, pos, at - pos);
    out += (left_ok && right_ok) ? with : word;
    pos = end;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

std::string color_marker(char marker, bool color) {
  if (!color) return std::string(1, marker);
  const char* code = marker == '+' ? "32" : marker == '~' ? "33" : marker == '-' ? "31" : "36";
  return std::string("\033[") + code + "m" + marker + "\033[0m";
}

std::string change_line(const PlannedChange& c, const PlanTextOptions& options) {
  std::string line = "    " + color_marker(action_marker(c.action), options.color) + " " + c.target + ": " + c.reason;
  if (options.show_steps) line += "  [" + c.step + "]";
  return line;
}

// The body of a node's plan with its own name and address abstracted.
std::string node_body(const NodePlan& node, const PlanTextOptions& options, bool abstract) {
  std::string body;
  for (const auto& phase : node.phases) {
    body += "  " + phase.phase + "\n";
    for (const auto& change : phase.changes) body += change_line(change, options) + "\n";
  }
  if (abstract) {
    // The longer values first: a compute address may contain the
    // management address ("10.40.1.1" in "10.40.1.11/24" is no token, but
    // "10.40.1.1/24" has it as one).
    for (const auto& [placeholder, value] : node.own_values) body = replace_token(body, value, placeholder);
    body = replace_token(body, node.node, "{node.name}");
    if (node.address != node.node) body = replace_token(body, node.address, "{node.address}");
  }
  return body;
}

// What the placeholders of a folded group mean, for its header.
std::string placeholders_note(const NodePlan& first, const std::string& body) {
  for (const auto& [placeholder, _] : first.own_values) {
    if (body.find(placeholder) != std::string::npos) {
      return "{node.name}, {node.address} and {INTERFACE.address} stand for each node's own";
    }
  }
  return "{node.name} and {node.address} stand for each node's own";
}

}  // namespace

std::string plan_summary_line(const Plan& plan) {
  const PlanSummary s = plan.summary();
  std::string line = std::to_string(s.nodes) + (s.nodes == 1 ? " node: " : " nodes: ") + std::to_string(s.to_change) +
                     " to change, " + std::to_string(s.unchanged) + " unchanged, " + std::to_string(s.unreachable) +
                     " unreachable";
  if (s.errors > 0) line += ", " + std::to_string(s.errors) + " failed to plan";
  return line;
}

std::string render_plan_text(const Plan& plan, const PlanTextOptions& options) {
  std::string out = "Plan for cluster " + plan.cluster + " (" + plan.spec_file + ")\n";

  // Groups keep the order in which their first node appears in the spec.
  struct Group {
    std::vector<std::string> names;
    std::string header_suffix;
    std::string body;
    const NodePlan* first = nullptr;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> index_by_key;
  for (const auto& node : plan.nodes) {
    std::string key, suffix, body;
    switch (node.status) {
      case NodeStatus::Unchanged:
        key = "unchanged";
        suffix = ": no changes";
        break;
      case NodeStatus::Unreachable:
        key = "unreachable\n" + node.message;
        suffix = ": unreachable: " + node.message;
        break;
      case NodeStatus::Error:
        key = "error\n" + node.message;
        suffix = ": cannot plan: " + node.message;
        break;
      case NodeStatus::Changes:
        body = node_body(node, options, options.fold);
        key = "changes\n" + body;
        break;
    }
    if (!options.fold) key += "\n" + node.node;
    auto [it, fresh] = index_by_key.emplace(key, groups.size());
    if (fresh) groups.push_back({{}, suffix, body, &node});
    groups[it->second].names.push_back(node.node);
  }

  for (const auto& group : groups) {
    out += "\n";
    const bool several = group.names.size() > 1;
    if (!group.body.empty()) {
      if (several) {
        out += fold_hostlist(group.names) + " (" + std::to_string(group.names.size()) + " nodes, same plan; " +
               placeholders_note(*group.first, group.body) + ")\n";
        out += group.body;
      } else {
        // A single node is shown with its real values.
        out += group.names.front() + "\n" + node_body(*group.first, options, false);
      }
    } else {
      out += fold_hostlist(group.names) + group.header_suffix + "\n";
    }
  }
  out += "\n" + plan_summary_line(plan) + "\n";
  return out;
}

std::string plan_incomplete_line(const PlanSummary& summary) {
  return "gpuexpand: the plan is incomplete: " + std::to_string(summary.unreachable) + " unreachable, " +
         std::to_string(summary.errors) + " failed to plan\n";
}

}  // namespace gpuexpand
