#pragma once
// --limit: which nodes of a spec a command touches. Terms are separated by
// commas outside brackets (so host lists keep theirs) and may repeat over
// several --limit flags; the selection is their union, in spec order:
//   gpu-node-007                one node
//   gpu-node-[001-032]          a host list
//   rack=r02 / group=h200       every node in a rack or group
//   !gpu-node-013, !rack=r04    exclusions, applied after the union
//   @failed                     the nodes the last apply did not finish, from
//                               the state store (expanded by the CLI layer,
//                               which reads the store, before select_nodes)
// A term that names nothing in the spec is an error, not an empty run:
// a typo must not silently turn a change into a no-op (or the reverse).

#include <string>
#include <vector>

#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

Result<std::vector<const NodeSpec*>> select_nodes(const ClusterSpec& spec, const std::vector<std::string>& limits);
// The same terms over cluster.reference's nodes (facts --diff compares a
// new node with one in service).
Result<std::vector<const NodeSpec*>> select_reference_nodes(const ClusterSpec& spec, const std::vector<std::string>& limits);

// Splits "a[1,2],rack=x" into {"a[1,2]", "rack=x"}.
std::vector<std::string> split_limit_terms(const std::string& limit);

}  // namespace gpuexpand
