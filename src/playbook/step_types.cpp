#include "gpuexpand/playbook/playbook.hpp"

namespace gpuexpand {

const std::vector<std::string>& phase_order() {
  static const std::vector<std::string> order = {"os-init",    "gpu-driver", "rdma",      "storage",
                                                 "monitoring", "scheduler",  "acceptance"};
  return order;
}

// Parameters per builtin type. The playbook schema lists the union of all
// parameters; which belong to which type is here, next to nothing else,
// so a new type is one entry plus its decision in plan/step_decisions.cpp.
const std::vector<StepTypeInfo>& step_types() {
  static const std::vector<StepTypeInfo> types = {
      {"hostname", {"name"}, {}},
      {"timezone", {"zone"}, {}},
      {"file", {"path", "content"}, {"mode", "owner", "group"}},
      {"copy", {"path", "src"}, {"src_sha256", "src_host", "mode", "owner", "group"}},
      {"line", {"path", "line"}, {}},
      {"directory", {"path"}, {"mode", "owner", "group"}},
      {"package", {"names"}, {"version", "state"}},
      {"service", {"name"}, {"enabled", "state", "restart_on"}},
      {"sysctl", {"values"}, {}},
      {"kernel_module", {"names"}, {}},
      {"mount", {"source", "path", "fstype"}, {"options"}},
      {"command", {"run", "check", "rollback"}, {"delegate_to"}},
      {"reboot", {"reboot_on"}, {}},
      // Its settings come from the node's spec (accept/acceptance.cpp),
      // added by the planner, not written in the playbook.
      {"acceptance", {}, {}},
  };
  return types;
}

const StepTypeInfo* find_step_type(std::string_view name) {
  for (const auto& type : step_types()) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

}  // namespace gpuexpand
