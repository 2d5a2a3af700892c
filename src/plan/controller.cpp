#include "gpuexpand/plan/controller.hpp"

#include <algorithm>

namespace gpuexpand {

std::optional<ControllerHost> controller_of(const NodeSpec& node) {
  if (!node.settings) return std::nullopt;
  const nlohmann::json& s = *node.settings;
  const auto scheduler = s.find("scheduler");
  if (scheduler == s.end() || !scheduler->is_object() || scheduler->value("kind", "") != "slurm") return std::nullopt;
  const auto slurm = scheduler->find("slurm");
  if (slurm == scheduler->end() || !slurm->is_object()) return std::nullopt;
  const std::string name = slurm->value("controller", "");
  if (name.empty()) return std::nullopt;
  const std::string address = slurm->value("controller_address", "");
  return ControllerHost{name, address.empty() ? name : address};
}

std::vector<ControllerHost> controllers_of(const std::vector<const NodeSpec*>& nodes) {
  std::vector<ControllerHost> out;
  for (const auto* node : nodes) {
    auto host = controller_of(*node);
    if (host && std::find(out.begin(), out.end(), *host) == out.end()) out.push_back(*host);
  }
  return out;
}

std::string controller_command(int64_t run_id, const std::string& script) {
  return "GPUEXPAND_RUN_ID=" + std::to_string(run_id) + "; export GPUEXPAND_RUN_ID\n" + script;
}

std::vector<std::optional<size_t>> controller_endpoints(const std::vector<const NodeSpec*>& nodes) {
  std::vector<std::optional<size_t>> out(nodes.size());
  std::vector<ControllerHost> seen;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto host = controller_of(*nodes[i]);
    if (!host) continue;
    auto at = std::find(seen.begin(), seen.end(), *host);
    if (at == seen.end()) at = seen.insert(seen.end(), *host);
    out[i] = nodes.size() + static_cast<size_t>(at - seen.begin());
  }
  return out;
}

}  // namespace gpuexpand
