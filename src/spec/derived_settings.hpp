#pragma once
// Defaults the spec gives once for many places, written out into a node's
// merged settings: mount options as a list, interface MTUs from network.mtu,
// the directories to create inside mounts, the NCCL topology variable. Run
// by the spec loader after the merge, before the semantic checks. Strings
// only the playbooks need (slurmd's lines, kubeadm's inputs, PFC/ECN maps)
// are derived in the playbooks' variables layer (playbook/variables.hpp).

#include <nlohmann/json.hpp>

namespace gpuexpand {

void derive_settings(nlohmann::json& settings);

}  // namespace gpuexpand
