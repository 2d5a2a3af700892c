#pragma once
// The consistency report: do the new nodes match the nodes already in
// service (cluster.reference)? Facts are compared flattened, as `facts
// --diff` shows them (facts_compare.hpp), but only the facts of the
// consistency set: a default set of what must agree across a training
// cluster (OS release, kernel, driver, packages gpuexpand asks about,
// sysctls, mounts, time sync, MTU, GPU model and count) with the spec's
// `cluster.reference.facts.add` / `drop` patterns. A new node is compared
// as it will be after apply (the planner's predicted facts) in `plan`, and
// as it is in `verify`. docs/consistency.md.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/steps/facts_request.hpp"

namespace gpuexpand {

// Fact path patterns: '*' stands for any text ("sysctl.*", "mounts[*].fstype").
struct ConsistencySet {
  std::vector<std::string> patterns;  // the facts compared
  std::vector<std::string> dropped;   // of those, left out
  std::vector<std::string> added;     // the spec's own patterns (facts.add), also among `patterns`
  // The mounts that are configuration, compared by the default mounts[*]
  // patterns: those in some compared node's fstab, and network
  // filesystems wherever mounted. Runtime mounts (systemd's
  // /run/credentials/…, /dev/hugepages, a container's overlays) are only
  // compared when facts.add names them.
  std::set<std::string> mountpoints;
  bool contains(const std::string& fact) const;
};

// The default patterns (docs/consistency.md lists them).
const std::vector<std::string>& default_consistency_patterns();
ConsistencySet consistency_set(const ClusterSpec& spec);

// What a probe must also ask so the set's named packages, sysctls and
// files are facts (a pattern without '*' that names one).
FactsRequest consistency_request(const ClusterSpec& spec);

// One value of a fact and the nodes holding it.
struct FactValue {
  std::string value;
  std::vector<std::string> nodes;
};

// A fact on which new nodes differ from the reference: `nodes` hold
// `value` where the reference holds `reference` (on `reference_nodes`).
struct ConsistencyDifference {
  std::string fact;
  std::string value;
  std::string reference;
  std::vector<std::string> nodes;
  std::vector<std::string> reference_nodes;
};

struct ConsistencyReport {
  std::vector<std::string> reference_nodes;                            // compared with
  std::vector<std::pair<std::string, std::string>> unreachable;       // reference node, why
  std::vector<std::pair<std::string, std::vector<FactValue>>> reference_disagreements;  // fact, values
  std::vector<ConsistencyDifference> differences;                      // by fact, then value
  std::vector<std::string> nodes;  // new nodes compared
  size_t facts = 0;                // facts of the set the reference nodes report
  bool consistent() const { return reference_disagreements.empty() && differences.empty() && unreachable.empty(); }
};

// A new node and its facts (predicted after apply, or as they are).
struct ComparedNode {
  const NodeSpec* node = nullptr;
  const nlohmann::json* facts = nullptr;
};

// Where the reference nodes disagree among themselves a fact is reported
// with each value's hosts, and new nodes are compared with its most common
// value. Versions of packages and the driver compare by the spec's version
// rule ("550.90.07" is "550.90.07-1"); a package whose version apply leaves
// to the node ("installed") is not a difference.
ConsistencyReport check_consistency(const ClusterSpec& spec, const std::vector<ComparedNode>& nodes,
                                    const FactsByNode& reference_facts);

// The report as JSON (the plan document's "consistency").
nlohmann::json consistency_json(const ConsistencyReport& report);

}  // namespace gpuexpand
