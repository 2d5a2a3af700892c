#include "gpuexpand/playbook/playbook.hpp"

namespace gpuexpand {

const std::vector<std::string>& phase_order() {
  static const std::vector<std::string> order = {"os-init",    "gpu-driver", "rdma",      "storage",
                                                 "monitoring", "scheduler",  "acceptance"};
  return order;
}

}  // namespace gpuexpand
