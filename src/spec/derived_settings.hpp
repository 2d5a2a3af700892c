#pragma once
// Values the spec gives once for many places, written out into a node's
// merged settings where the playbooks read them (templates have no
// conditionals): mount options as a list, interface MTUs from network.mtu,
// slurmd's registration lines, the kubeadm join inputs, PFC/ECN maps, the
// NCCL topology variable. Run by the spec loader after the merge, before
// the semantic checks (which read some of them: slurm.mode, gres_conf).

#include <nlohmann/json.hpp>

namespace gpuexpand {

void derive_settings(nlohmann::json& settings);

}  // namespace gpuexpand
