#pragma once
// Steps delegated to the scheduler's controller (`delegate_to: controller`
// on a command step): their check, run and rollback go to the controller
// host the node's scheduler.slurm settings name, over that host's own SSH
// session, instead of to the node. Static Slurm nodes need it: a static
// node's NodeName line lives in the controller's slurm.conf.
//
// Runners made from endpoints_for(spec, nodes) hold one endpoint per node,
// then one per distinct controller (controllers_of), in that order.

#include <optional>
#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/steps/step_kind.hpp"  // delegated_to_controller

namespace gpuexpand {

struct ControllerHost {
  std::string name;     // scheduler.slurm.controller
  std::string address;  // scheduler.slurm.controller_address, else the name
  bool operator==(const ControllerHost&) const = default;
};


// The Slurm controller a node's settings name, if any.
std::optional<ControllerHost> controller_of(const NodeSpec& node);

// The distinct controllers of these nodes, in the order first named.
std::vector<ControllerHost> controllers_of(const std::vector<const NodeSpec*>& nodes);

// For each node, where its controller sits in a runner made by
// endpoints_for(spec, nodes): after the nodes. Empty for a node that names
// no controller.
std::vector<std::optional<size_t>> controller_endpoints(const std::vector<const NodeSpec*>& nodes);

// A delegated step's run or rollback as sent to its controller: with the
// run's id in $GPUEXPAND_RUN_ID, so a rollback can undo what that run (and
// no other) did there, and do nothing for a run in which the step never ran.
std::string controller_command(int64_t run_id, const std::string& script);

}  // namespace gpuexpand
