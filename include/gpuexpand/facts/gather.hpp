#pragma once
// Gathering live facts: one probe per node over the CommandRunner, all
// nodes at once, one round trip each. A node that cannot be reached gets
// a facts document saying why ("unreachable"), and the others are
// unaffected.

#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

// `runner` must have been made with one endpoint per entry of `nodes`, in
// that order. Returns facts for every node (unreachable ones included).
FactsByNode gather_facts(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                         const PlaybookSet& playbooks, CommandRunner& runner, const std::string& collected_at);

// Endpoints for the selected nodes from the spec's ssh settings, then one
// per distinct controller of theirs (plan/controller.hpp).
std::vector<NodeEndpoint> endpoints_for(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes);

}  // namespace gpuexpand
