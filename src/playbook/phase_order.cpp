#include "gpuexpand/playbook/playbook.hpp"

// The fixed phase order and which parameters are shell text: facts about
// playbooks that the loader and the planner must agree on.

namespace gpuexpand {

const std::vector<std::string>& phase_order() {
  static const std::vector<std::string> order = {"os-init",    "gpu-driver", "rdma",      "storage",
                                                 "monitoring", "scheduler",  "acceptance"};
  return order;
}

}  // namespace gpuexpand

namespace gpuexpand {

bool is_shell_parameter(std::string_view key) {
  return key == "run" || key == "check" || key == "rollback" || key == "command";
}

}  // namespace gpuexpand
