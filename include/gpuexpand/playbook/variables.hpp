#pragma once
// The variables templates and `when:` conditions see for one node (the
// playbooks' variables layer): the node's merged settings (node_variables:
// node, cluster, os, gpu, network, storage, monitoring, scheduler,
// validation), plus what only the playbooks need, derived here rather than
// by the spec loader, as templates have no conditionals:
//   scheduler.slurm: conf_server, conf_server_option, local_conf, node_conf
//     (slurmd's --conf line), static_conf, feature_list, gres_list,
//     gpu_gres_conf, gpu_gres_count, gres_conf, gres_from_facts, mode;
//   scheduler.kubernetes: api_server, label_list, taint_list, taints_json;
//   network.rdma: pfc_on, pfc_map, ecn_priorities;
//   gpuexpand: names C++ owns that playbooks must spell the same way:
//     acceptance_reservation (the node's acceptance hold in Slurm) and
//     acceptance_record (the file a node that passed keeps).
// The planner adds `facts` (and `item` inside for_each).

#include <nlohmann/json.hpp>

#include "gpuexpand/spec/cluster_spec.hpp"

namespace gpuexpand {

nlohmann::json playbook_variables(const ClusterSpec& spec, const NodeSpec& node);

}  // namespace gpuexpand
