#pragma once
// Comparing nodes by their facts: `facts --diff A B` today, the
// consistency report against reference nodes next (issue: new nodes that
// match the running cluster). Facts are flattened to one line each,
//   os.kernel                       6.1.0-27-amd64
//   network.interfaces[eth1].mtu    9000
//   mounts[/mnt/shared].fstype      fuse.sshfs
// arrays of objects keyed by their name (interfaces, RDMA devices) or
// mount target, with what is a node's own by design left out (its name,
// hostname, addresses, MACs, GUIDs and UUIDs, free space, when the facts
// were collected) and its
// own name and address written {node.name} / {node.address} where they
// appear in a value, and its hostname {hostname} in a file's content
// (/etc/hosts), so two nodes built alike compare equal.

#include <map>
#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"

namespace gpuexpand {

// "fact path" -> value as text (strings as they are, other values as JSON).
std::map<std::string, std::string> flatten_facts(const nlohmann::json& facts, const NodeSpec& node);

// One fact on which two sets of nodes differ. Each side's value is the
// value when all its nodes agree, else "VALUE (HOSTS); VALUE (HOSTS)";
// "-" for a fact a node did not report.
struct FactDifference {
  std::string fact;
  std::string a, b;
  bool mixed = false;  // a side's nodes disagree among themselves
};

struct FactComparison {
  std::vector<FactDifference> differences;  // in fact order
  size_t facts = 0;                         // distinct facts compared
};

// The facts on which side `a` and side `b` differ. A fact on which the
// nodes of one side disagree among themselves is a difference too: that
// side is not one build. Unreachable nodes are left out (the caller
// reports them).
FactComparison compare_facts(const FactsByNode& facts, const std::vector<const NodeSpec*>& a,
                                          const std::vector<const NodeSpec*>& b);

}  // namespace gpuexpand
