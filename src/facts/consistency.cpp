#include "gpuexpand/facts/consistency.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "gpuexpand/facts/facts_compare.hpp"
#include "gpuexpand/steps/params.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/util/wildcard.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;


// A pattern names a fact, or everything under it ("files./etc/motd" is
// its content, digest, mode ...).
bool pattern_covers(const std::string& pattern, const std::string& fact) {
  const auto matches = [&](const std::string& p) { return wildcard_match(fact, p, /*question_matches_one=*/false); };
  return matches(pattern) || matches(pattern + ".*") || matches(pattern + "[*");
}

// Facts whose values are versions: compared by the spec's version rule.
bool is_version_fact(const std::string& fact) {
  return fact.rfind("packages.", 0) == 0 || fact == "gpus.driver_version";
}

// The kernel prints a sysctl of several numbers with tabs, a spec writes
// spaces: the same value.
std::string words_of(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool blank = c == ' ' || c == '\t';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool same_value(const std::string& fact, const std::string& value, const std::string& reference) {
  if (value == reference) return true;
  if (fact.rfind("sysctl.", 0) == 0) return words_of(value) == words_of(reference);
  if (!is_version_fact(fact) || value == "-" || reference == "-") return false;
  return package_version_matches(reference, value) || package_version_matches(value, reference);
}

// A value the node decides during apply: not a difference the plan can know.
bool decided_on_the_node(const std::string& fact, const std::string& value) {
  return fact.rfind("packages.", 0) == 0 && value == "installed";
}

std::vector<std::string> compute_interface_names(const ClusterSpec& spec) {
  std::set<std::string> names;
  std::set<const json*> seen;
  for (const auto& node : spec.nodes) {
    if (!node.settings || !seen.insert(node.settings.get()).second) continue;
    const json& s = *node.settings;
    if (!s.contains("network") || !s["network"].is_object()) continue;
    const json& interfaces = s["network"].value("compute_interfaces", json::array());
    if (!interfaces.is_array()) continue;
    for (const auto& i : interfaces) {
      if (i.is_object() && i.contains("name") && i["name"].is_string()) names.insert(i["name"].get<std::string>());
    }
  }
  return {names.begin(), names.end()};
}

std::map<std::string, std::string> set_facts_of(const ConsistencySet& set, const json& facts, const NodeSpec& node) {
  std::map<std::string, std::string> kept;
  for (auto& [fact, value] : flatten_facts(facts, node)) {
    if (set.contains(fact)) kept.emplace(fact, std::move(value));
  }
  return kept;
}

}  // namespace

bool ConsistencySet::contains(const std::string& fact) const {
  const auto covers = [&](const std::string& p) { return pattern_covers(p, fact); };
  if (!std::any_of(patterns.begin(), patterns.end(), covers) || std::any_of(dropped.begin(), dropped.end(), covers)) {
    return false;
  }
  // mounts[/mnt/shared].options -> /mnt/shared
  if (fact.rfind("mounts[", 0) == 0) {
    const size_t close = fact.rfind("].");
    if (close != std::string::npos && !mountpoints.count(fact.substr(7, close - 7))) {
      return std::any_of(added.begin(), added.end(), covers);
    }
  }
  return true;
}

const std::vector<std::string>& default_consistency_patterns() {
  static const std::vector<std::string> patterns = {
      "os.id",          "os.version_id", "os.arch",     "os.kernel",          "gpus.driver_version",
      "gpus.model",     "gpus.count",    "packages.*",  "sysctl.*",           "mounts[*].source",
      "mounts[*].fstype", "fstab[*].options", "time_sync.servers", "timezone",
  };
  return patterns;
}

ConsistencySet consistency_set(const ClusterSpec& spec) {
  ConsistencySet set;
  set.patterns = default_consistency_patterns();
  // The MTU of the compute interfaces only: a container host's veth and
  // bridge interfaces come and go with its containers.
  for (const auto& name : compute_interface_names(spec)) set.patterns.push_back("network.interfaces[" + name + "].mtu");
  set.patterns.insert(set.patterns.end(), spec.reference_facts_add.begin(), spec.reference_facts_add.end());
  set.added = spec.reference_facts_add;
  set.dropped = spec.reference_facts_drop;
  return set;
}

namespace {

void add_configured_mountpoints(const json& facts, std::set<std::string>& mountpoints) {
  // Filesystems a cluster mounts over the network: configuration even when
  // an automounter, not fstab, mounted them.
  static const std::set<std::string> kNetwork = {"nfs", "nfs4", "lustre", "ceph", "fuse.sshfs", "fuse.ceph",
                                                 "beegfs", "gpfs", "glusterfs", "fuse.glusterfs", "cifs", "smb3"};
  for (const char* list : {"fstab", "mounts"}) {
    if (!facts.contains(list) || !facts[list].is_array()) continue;
    for (const auto& entry : facts[list]) {
      if (!entry.is_object() || !entry.contains("target") || !entry["target"].is_string()) continue;
      const std::string fstype = entry.value("fstype", "");
      if (std::string(list) == "fstab" ? fstype != "swap" : kNetwork.count(fstype) > 0) {
        mountpoints.insert(entry["target"].get<std::string>());
      }
    }
  }
}

}  // namespace

FactsRequest consistency_request(const ClusterSpec& spec) {
  FactsRequest request;
  // What a training node's software stack is, beyond what the playbooks
  // ask: NCCL, the RDMA userspace, the container toolkit, Slurm.
  request.packages = {"libnccl2", "rdma-core", "nvidia-container-toolkit", "slurmd"};
  for (const auto& pattern : spec.reference_facts_add) {
    if (pattern.find('*') != std::string::npos) continue;
    if (pattern.rfind("packages.", 0) == 0) {
      request.packages.insert(pattern.substr(9));
    } else if (pattern.rfind("sysctl.", 0) == 0) {
      request.sysctl_keys.insert(pattern.substr(7));
    } else if (pattern.rfind("files./", 0) == 0) {
      std::string path = pattern.substr(6);
      // files./etc/motd.content names /etc/motd; a path may hold dots too.
      for (const char* field : {".content", ".sha256", ".exists", ".mode", ".owner", ".group", ".size"}) {
        const std::string tail(field);
        if (path.size() > tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0) {
          path.resize(path.size() - tail.size());
          break;
        }
      }
      request.files.insert(path);
    }
  }
  return request;
}

ConsistencyReport check_consistency(const ClusterSpec& spec, const std::vector<ComparedNode>& nodes,
                                    const FactsByNode& reference_facts) {
  ConsistencySet set = consistency_set(spec);
  for (const auto& [_, facts] : reference_facts) add_configured_mountpoints(facts, set.mountpoints);
  for (const auto& compared : nodes) {
    if (compared.facts) add_configured_mountpoints(*compared.facts, set.mountpoints);
  }
  ConsistencyReport report;

  // fact -> value -> reference nodes, in the order values were first seen.
  std::map<std::string, std::vector<FactValue>> reference_values;
  for (const auto& node : spec.reference_nodes) {
    const auto found = reference_facts.find(node.name);
    if (found == reference_facts.end()) {
      report.unreachable.emplace_back(node.name, "no facts for this node");
      continue;
    }
    if (found->second.contains("unreachable")) {
      report.unreachable.emplace_back(node.name, found->second["unreachable"].get<std::string>());
      continue;
    }
    report.reference_nodes.push_back(node.name);
    for (const auto& fact_value : set_facts_of(set, found->second, node)) {
      const std::string& value = fact_value.second;  // (a structured binding: clang 14 cannot capture it)
      auto& values = reference_values[fact_value.first];
      auto same = std::find_if(values.begin(), values.end(), [&](const FactValue& v) { return v.value == value; });
      if (same == values.end()) values.push_back({value, {}}), same = values.end() - 1;
      same->nodes.push_back(node.name);
    }
  }
  if (report.reference_nodes.empty()) return report;  // nothing to compare with: the caller says why
  // A fact a reference node does not report at all counts as "-" there.
  for (auto& [fact, values] : reference_values) {
    size_t holding = 0;
    for (const auto& v : values) holding += v.nodes.size();
    if (holding < report.reference_nodes.size()) {
      std::vector<std::string> missing;
      for (const auto& name : report.reference_nodes) {
        const bool has = std::any_of(values.begin(), values.end(), [&](const FactValue& v) {
          return std::find(v.nodes.begin(), v.nodes.end(), name) != v.nodes.end();
        });
        if (!has) missing.push_back(name);
      }
      values.push_back({"-", std::move(missing)});
    }
    if (values.size() > 1) report.reference_disagreements.emplace_back(fact, values);
  }
  report.facts = reference_values.size();

  // The value new nodes are held to: the most common one (the first seen on a tie).
  std::map<std::string, const FactValue*> expected;
  for (const auto& [fact, values] : reference_values) {
    const FactValue* best = &values.front();
    for (const auto& v : values) {
      if (v.nodes.size() > best->nodes.size()) best = &v;
    }
    expected[fact] = best;
  }

  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::string>> differing;
  std::map<std::tuple<std::string, std::string, std::string>, const FactValue*> against;
  for (const auto& compared : nodes) {
    if (!compared.node || !compared.facts) continue;
    report.nodes.push_back(compared.node->name);
    const auto mine = set_facts_of(set, *compared.facts, *compared.node);
    std::set<std::string> facts;
    for (const auto& [fact, _] : mine) facts.insert(fact);
    for (const auto& [fact, _] : expected) facts.insert(fact);
    for (const auto& fact : facts) {
      const auto own = mine.find(fact);
      const std::string value = own == mine.end() ? "-" : own->second;
      const auto held = expected.find(fact);
      static const FactValue kAbsent{"-", {}};
      const FactValue& reference = held == expected.end() ? kAbsent : *held->second;
      if (decided_on_the_node(fact, value) || same_value(fact, value, reference.value)) continue;
      const auto key = std::make_tuple(fact, value, reference.value);
      differing[key].push_back(compared.node->name);
      against[key] = &reference;
    }
  }
  for (auto& [key, names] : differing) {
    const FactValue* reference = against[key];
    std::vector<std::string> holders = reference->nodes.empty() ? report.reference_nodes : reference->nodes;
    report.differences.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::move(names), std::move(holders)});
  }
  return report;
}

json consistency_json(const ConsistencyReport& report) {
  json out = {{"reference_nodes", fold_hostlist(report.reference_nodes)},
              {"nodes", fold_hostlist(report.nodes)},
              {"facts", report.facts},
              {"consistent", report.consistent()},
              {"unreachable", json::array()},
              {"reference_disagreements", json::array()},
              {"differences", json::array()}};
  for (const auto& [node, why] : report.unreachable) out["unreachable"].push_back({{"node", node}, {"message", why}});
  for (const auto& [fact, values] : report.reference_disagreements) {
    json entry = {{"fact", fact}, {"values", json::array()}};
    for (const auto& v : values) entry["values"].push_back({{"value", v.value}, {"nodes", fold_hostlist(v.nodes)}});
    out["reference_disagreements"].push_back(std::move(entry));
  }
  for (const auto& d : report.differences) {
    out["differences"].push_back({{"fact", d.fact},
                                  {"value", d.value},
                                  {"nodes", fold_hostlist(d.nodes)},
                                  {"reference", d.reference},
                                  {"reference_nodes", fold_hostlist(d.reference_nodes)}});
  }
  return out;
}

}  // namespace gpuexpand
