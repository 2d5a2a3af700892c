#include "gpuexpand/view/plan_text.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

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
  if (!c.variant.empty()) line += "  (variant: " + c.variant + ")";
  if (options.show_steps) line += "  [" + c.step + "]";
  if (options.diff && !c.diff.empty()) {
    std::string diff = mask_secrets(c.diff);
    if (!diff.empty() && diff.back() == '\n') diff.pop_back();
    size_t start = 0;
    while (start <= diff.size()) {
      const size_t end = std::min(diff.find('\n', start), diff.size());
      line += "\n        " + diff.substr(start, end - start);
      start = end + 1;
    }
  }
  return line;
}

// `text` with the node's own values as placeholders.
std::string abstracted(const NodePlan& node, std::string text) {
  // The longer values first: a compute address may contain the
  // management address ("10.40.1.1" in "10.40.1.11/24" is no token, but
  // "10.40.1.1/24" has it as one).
  for (const auto& [placeholder, value] : node.own_values) text = replace_token(text, value, placeholder);
  text = replace_token(text, node.node, "{node.name}");
  if (node.address != node.node) text = replace_token(text, node.address, "{node.address}");
  return text;
}

// The body of a node's plan with its own name and address abstracted.
std::string node_body(const NodePlan& node, const PlanTextOptions& options, bool abstract) {
  std::string body;
  for (const auto& phase : node.phases) {
    body += "  " + phase.phase + "\n";
    for (const auto& change : phase.changes) body += change_line(change, options) + "\n";
  }
  return abstract ? abstracted(node, body) : body;
}

// What each changed step will write or run (its rendered parameters), by
// step key, with the node's own values abstracted: two nodes whose change
// lines read the same may still get different files (a rack's Slurm
// features in a drop-in), and must not fold together.
std::map<std::string, std::string> node_content(const NodePlan& node) {
  // Parameters are machine text: the node's values stand anywhere in them
  // ("gpuexpand-accept-NODE"), not only as whole words.
  auto replace_all = [](std::string text, const std::string& value, const std::string& with) {
    if (value.empty()) return text;
    for (size_t at = text.find(value); at != std::string::npos; at = text.find(value, at + with.size())) {
      text.replace(at, value.size(), with);
    }
    return text;
  };
  std::map<std::string, std::string> content;
  for (const auto& phase : node.phases) {
    for (const auto& step : phase.steps) {
      std::string text = step.params.dump();
      for (const auto& [placeholder, value] : node.own_values) text = replace_all(text, value, placeholder);
      text = replace_all(text, node.node, "{node.name}");
      if (node.address != node.node) text = replace_all(text, node.address, "{node.address}");
      content[phase.phase + "/" + step.key] = text;
    }
  }
  return content;
}

// The targets of the steps whose content differs between two nodes.
std::string differing_targets(const NodePlan& a, const NodePlan& b) {
  const auto ca = node_content(a), cb = node_content(b);
  std::vector<std::string> targets;
  for (const auto& phase : a.phases) {
    for (const auto& change : phase.changes) {
      const std::string key = phase.phase + "/" + change.step;
      auto ia = ca.find(key), ib = cb.find(key);
      const bool differs = (ia == ca.end()) != (ib == cb.end()) || (ia != ca.end() && ia->second != ib->second);
      const std::string target = abstracted(a, change.target);
      if (differs && std::find(targets.begin(), targets.end(), target) == targets.end()) targets.push_back(target);
    }
  }
  std::string out;
  for (const auto& t : targets) out += (out.empty() ? "" : ", ") + t;
  return out;
}

// `abstracted` undone in a lines_delta where a side is one node (printed
// with its real values elsewhere): `mine` for this group's lines, `theirs`
// for the "instead of" lines; a side of several nodes (nullptr) keeps its
// placeholders.
std::string with_own_values(const NodePlan* mine, const NodePlan* theirs, const std::string& text) {
  std::string out;
  std::istringstream in(text);
  const NodePlan* node = mine;
  for (std::string line; std::getline(in, line);) {
    if (line == "    instead of") node = theirs;
    if (line == "    these" || line == "    also") node = mine;
    if (node) {
      for (const auto& [placeholder, value] : node->own_values) line = replace_token(line, placeholder, value);
      line = replace_token(line, "{node.name}", node->node);
      line = replace_token(line, "{node.address}", node->address);
    }
    out += line + "\n";
  }
  return out;
}

// A group's change lines against an earlier group's, when they differ in a
// few lines only: for each phase where they differ, the earlier group's
// lines ("instead of") and this group's ("these"). "" when they differ in
// their phases or in more than a few lines: the group is then printed
// whole. (One node whose driver differs is not 60 lines again, issue 14.)
std::string lines_delta(const std::string& base, const std::string& body) {
  const auto split = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  const auto is_heading = [](const std::string& line) { return line.size() > 2 && line[2] != ' '; };
  const std::vector<std::string> a = split(base), b = split(body);
  // Only for plans that could differ in a few lines; the table below is
  // a.size() * b.size() (change lines only, no diffs: tens to hundreds).
  const size_t apart = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (b.size() < 8 || apart > 12 || apart * 3 > b.size() || a.size() * b.size() > 250000) return "";
  // Longest common subsequence, by lines.
  std::vector<std::vector<size_t>> lcs(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  struct PhaseDelta {
    std::string phase;
    std::vector<std::string> added, removed;
  };
  std::vector<PhaseDelta> phases;
  std::string phase;
  size_t changed = 0;
  for (size_t i = 0, j = 0; i < a.size() || j < b.size();) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      if (is_heading(a[i])) phase = a[i];
      ++i, ++j;
      continue;
    }
    const bool take_b = j < b.size() && (i == a.size() || lcs[i][j + 1] >= lcs[i + 1][j]);
    const std::string& line = take_b ? b[j] : a[i];
    if (is_heading(line)) return "";  // another set of phases
    if (phases.empty() || phases.back().phase != phase) phases.push_back({phase, {}, {}});
    (take_b ? phases.back().added : phases.back().removed).push_back(line);
    ++changed;
    take_b ? ++j : ++i;
  }
  // Worth it only where it saves most of the group's lines.
  if (changed == 0 || b.size() < 8 || changed * 3 > b.size() || changed > 12) return "";
  std::string out;
  for (const auto& p : phases) {
    out += p.phase + "\n";
    if (!p.removed.empty()) {
      out += "    instead of\n";
      for (const auto& line : p.removed) out += "  " + line + "\n";
    }
    out += p.removed.empty() ? "    also\n" : "    these\n";
    for (const auto& line : p.added) out += "  " + line + "\n";
    if (p.added.empty()) out += "      (nothing)\n";
  }
  return out;
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

std::string mask_secrets(const std::string& text) {
  static const std::regex secret(
      R"re(^([-+ ]\s*[^\n]*?(password|passwd|secret|token|credential|[a-z_]*key)["']?\s*[:=]\s*)(\S.*)$)re",
      std::regex::icase | std::regex::multiline);
  return std::regex_replace(text, secret, "$1(masked)");
}

std::string plan_outline(const std::string& rendered_plan) {
  std::string out;
  std::istringstream in(rendered_plan);
  size_t hidden = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != ' ') {
      out += line + "\n";
    } else {
      ++hidden;
    }
  }
  return out + "(" + std::to_string(hidden) + " lines of changes not shown)\n";
}

std::string plan_summary_line(const Plan& plan) {
  const PlanSummary s = plan.summary();
  std::string line = std::to_string(s.nodes) + (s.nodes == 1 ? " node: " : " nodes: ") + std::to_string(s.to_change) +
                     " to change, " + std::to_string(s.unchanged) + " unchanged, " + std::to_string(s.unreachable) +
                     " unreachable";
  if (s.errors > 0) line += ", " + std::to_string(s.errors) + " failed to plan";
  // What the changes add up to, after the part CI greps for.
  if (s.to_change > 0) {
    line += " (" + std::to_string(s.changes) + (s.changes == 1 ? " change" : " changes");
    if (s.reboots > 0) line += "; " + std::to_string(s.reboots) + (s.reboots == 1 ? " node reboots" : " nodes reboot");
    line += ")";
  }
  return line;
}

namespace {

// Nodes with the same plan, in the order their first node appears in the
// spec; `same_lines`: an earlier group whose change lines read the same
// while its content differs (said in one line instead of again).
struct PlanGroup {
  std::vector<std::string> names;
  std::string header_suffix;  // for nodes without changes: ": no changes", ": unreachable: …"
  std::string body;           // the change lines, abstracted
  const NodePlan* first = nullptr;
  const PlanGroup* same_lines = nullptr;
  const PlanGroup* nearly = nullptr;  // an earlier group printed whole whose lines differ in a few
  std::string delta;                  // lines_delta(nearly->body, body)
};

// `deltas`: find for each group an earlier one it differs from in a few
// lines (the text plan without diffs says it by those lines).
std::vector<PlanGroup> plan_groups(const Plan& plan, const PlanTextOptions& options, bool deltas) {
  std::vector<PlanGroup> groups;
  groups.reserve(plan.nodes.size());  // same_lines points into it
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
      case NodeStatus::Changes: {
        body = node_body(node, options, options.fold);
        key = "changes\n" + body;
        for (const auto& [step, content] : node_content(node)) key += "\n" + step + "\n" + content;
        break;
      }
    }
    if (!options.fold) key += "\n" + node.node;
    auto [it, fresh] = index_by_key.emplace(key, groups.size());
    if (fresh) groups.push_back({{}, suffix, body, &node, nullptr, nullptr, ""});
    groups[it->second].names.push_back(node.node);
  }
  for (size_t g = 0; g < groups.size() && options.fold; ++g) {
    for (size_t e = 0; e < g && !groups[g].body.empty(); ++e) {
      if (groups[e].body == groups[g].body) {
        groups[g].same_lines = &groups[e];
        break;
      }
    }
    if (!deltas || groups[g].same_lines || groups[g].body.empty()) continue;
    // Else the largest earlier group printed whole that differs in a few lines.
    for (size_t e = 0; e < g; ++e) {
      const PlanGroup& earlier = groups[e];
      if (earlier.body.empty() || earlier.same_lines || earlier.nearly) continue;
      if (groups[g].nearly && groups[g].nearly->names.size() >= earlier.names.size()) continue;
      if (std::string delta = lines_delta(earlier.body, groups[g].body); !delta.empty()) {
        groups[g].nearly = &earlier;
        groups[g].delta = std::move(delta);
      }
    }
  }
  return groups;
}

std::string same_lines_note(const PlanGroup& group) {
  return "the changes of " + fold_hostlist(group.same_lines->names) + ", writing other content to " +
         differing_targets(*group.first, *group.same_lines->first);
}

}  // namespace

std::string render_plan_text(const Plan& plan, const PlanTextOptions& options) {
  std::string out = "Plan for cluster " + plan.cluster + " (" + plan.spec_file + ")\n";
  // With --diff (and -v) every group is shown whole, each change with its diff.
  for (const PlanGroup& group : plan_groups(plan, options, !options.diff)) {
    out += "\n";
    const bool several = group.names.size() > 1;
    if (group.same_lines) {
      out += fold_hostlist(group.names) + " (" + std::to_string(group.names.size()) +
             (several ? " nodes" : " node") + "): " + same_lines_note(group) + "\n";
      continue;
    }
    if (group.nearly) {
      out += fold_hostlist(group.names) + " (" + std::to_string(group.names.size()) + (several ? " nodes" : " node") +
             "): the changes of " + fold_hostlist(group.nearly->names) + ", except\n" +
             with_own_values(several ? nullptr : group.first,
                             group.nearly->names.size() > 1 ? nullptr : group.nearly->first, group.delta);
      // Steps whose lines read the same but whose content differs too.
      std::string others;
      std::istringstream targets(differing_targets(*group.first, *group.nearly->first));
      for (std::string target; std::getline(targets >> std::ws, target, ',');) {
        if (group.delta.find(" " + target + ":") == std::string::npos) others += (others.empty() ? "" : ", ") + target;
      }
      if (!others.empty()) out += "  and writing other content to " + others + "\n";
      continue;
    }
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

// For a pull-request comment: the summary, then each group in a collapsed
// <details> with its changes as a `diff` block (+ green, - red, ! for ~,
// ? as is), file diffs under their change with --diff.
std::string render_plan_markdown(const Plan& plan, const PlanTextOptions& options) {
  std::string out = "### gpuexpand plan: cluster `" + plan.cluster + "`\n\n**" + plan_summary_line(plan) + "**\n";
  PlanTextOptions plain = options;
  plain.color = false;
  for (const PlanGroup& group : plan_groups(plan, plain, false)) {
    const std::string hosts = "<code>" + fold_hostlist(group.names) + "</code>";
    const std::string count = std::to_string(group.names.size()) + (group.names.size() == 1 ? " node" : " nodes");
    if (group.same_lines) {
      out += "\n- " + hosts + " (" + count + "): " + same_lines_note(group) + "\n";
      continue;
    }
    if (group.body.empty()) {
      out += "\n- " + hosts + group.header_suffix + "\n";
      continue;
    }
    const std::string body = group.names.size() > 1 ? group.body : node_body(*group.first, plain, false);
    std::string block;
    size_t changes = 0;
    for (size_t start = 0; start < body.size();) {
      size_t end = body.find('\n', start);
      if (end == std::string::npos) end = body.size();
      std::string line = body.substr(start, end - start);
      start = end + 1;
      // "    ~ target: reason" -> "! target: reason"; phase names stay as headings.
      if (line.rfind("    ", 0) == 0 && line.size() > 5 && line[5] == ' ') {
        const char marker = line[4] == '~' ? '!' : line[4];
        block += std::string(1, marker) + " " + line.substr(6) + "\n";
        ++changes;
      } else if (line.rfind("        ", 0) == 0) {
        block += "  " + line.substr(8) + "\n";  // a diff line under its change
      } else {
        block += "# " + line.substr(line.find_first_not_of(' ')) + "\n";
      }
    }
    out += "\n<details><summary>" + hosts + ": " + count + ", " + std::to_string(changes) +
           (changes == 1 ? " change" : " changes") + "</summary>\n\n```diff\n" + block + "```\n\n</details>\n";
  }
  return out;
}

std::string plan_incomplete_line(const PlanSummary& summary) {
  return "gpuexpand: error: the plan is incomplete: " + std::to_string(summary.unreachable) + " unreachable, " +
         std::to_string(summary.errors) + " failed to plan\n";
}

}  // namespace gpuexpand
