#include "gpuexpand/inventory/selection.hpp"

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand {

std::vector<std::string> split_limit_terms(const std::string& limit) {
  std::vector<std::string> terms;
  std::string current;
  int depth = 0;
  for (char c : limit) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth <= 0) {
      terms.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  terms.push_back(current);
  return terms;
}

namespace {

class Selector {
 public:
  explicit Selector(const std::vector<NodeSpec>& nodes) : nodes_(nodes) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      const NodeSpec& n = nodes[i];
      by_name_.emplace(n.name, i);
      if (!n.rack.empty()) racks_.insert(n.rack);
      groups_.insert(n.groups.begin(), n.groups.end());
    }
  }

  // Indices of the nodes a term names.
  Result<std::vector<size_t>> resolve(const std::string& term) {
    if (term.rfind("rack=", 0) == 0) return by_attribute(term.substr(5), racks_, "rack", true);
    if (term.rfind("group=", 0) == 0) return by_attribute(term.substr(6), groups_, "group", false);
    auto names = expand_hostlist(term);
    if (!names) return make_error("--limit: " + names.error().message);
    std::vector<size_t> out;
    std::vector<std::string> missing;
    for (const auto& name : names.value()) {
      auto it = by_name_.find(name);
      if (it == by_name_.end()) {
        missing.push_back(name);
      } else {
        out.push_back(it->second);
      }
    }
    if (!missing.empty()) {
      std::string message = "--limit: " + fold_hostlist(missing) +
                            (missing.size() == 1 ? " is not a node" : " are not nodes") + " of this spec";
      if (missing.size() == 1) {
        std::vector<std::string> all;
        all.reserve(nodes_.size());
        for (const auto& n : nodes_) all.push_back(n.name);
        if (auto s = closest_match(missing.front(), all)) message += " (did you mean '" + *s + "'?)";
      }
      return make_error(message);
    }
    return out;
  }

 private:
  Result<std::vector<size_t>> by_attribute(const std::string& value, const std::set<std::string>& known,
                                           const char* what, bool is_rack) {
    if (!known.count(value)) {
      std::string message = std::string("--limit: no node is in ") + what + " '" + value + "'";
      if (auto s = closest_match(value, std::vector<std::string>(known.begin(), known.end()))) {
        message += " (did you mean '" + *s + "'?)";
      }
      return make_error(message);
    }
    std::vector<size_t> out;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodeSpec& n = nodes_[i];
      const bool match = is_rack ? n.rack == value
                                 : std::find(n.groups.begin(), n.groups.end(), value) != n.groups.end();
      if (match) out.push_back(i);
    }
    return out;
  }

  const std::vector<NodeSpec>& nodes_;
  std::unordered_map<std::string, size_t> by_name_;
  std::set<std::string> racks_, groups_;
};

Result<std::vector<const NodeSpec*>> select_from(const std::vector<NodeSpec>& nodes, const std::vector<std::string>& limits) {
  std::vector<const NodeSpec*> out;
  if (limits.empty()) {
    out.reserve(nodes.size());
    for (const auto& n : nodes) out.push_back(&n);
    return out;
  }
  Selector selector(nodes);
  std::vector<bool> included(nodes.size(), false), excluded(nodes.size(), false);
  bool any_inclusion = false;
  for (const auto& limit : limits) {
    for (std::string term : split_limit_terms(limit)) {
      if (term.empty()) return make_error("--limit: empty term in '" + limit + "'");
      const bool exclude = term.front() == '!';
      if (exclude) term.erase(0, 1);
      any_inclusion = any_inclusion || !exclude;
      auto indices = selector.resolve(term);
      if (!indices) return indices.error();
      for (size_t i : indices.value()) (exclude ? excluded : included)[i] = true;
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    // Only exclusions: start from every node, as Ansible's --limit '!x' does.
    if ((included[i] || !any_inclusion) && !excluded[i]) out.push_back(&nodes[i]);
  }
  if (out.empty()) return make_error("--limit selects no nodes");
  return out;
}

}  // namespace

Result<std::vector<const NodeSpec*>> select_nodes(const ClusterSpec& spec, const std::vector<std::string>& limits) {
  return select_from(spec.nodes, limits);
}

Result<std::vector<const NodeSpec*>> select_reference_nodes(const ClusterSpec& spec, const std::vector<std::string>& limits) {
  if (spec.reference_nodes.empty()) return make_error("--limit: the spec has no reference nodes");
  return select_from(spec.reference_nodes, limits);
}

}  // namespace gpuexpand
