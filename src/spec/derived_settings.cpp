#include "derived_settings.hpp"

#include <string>
#include <utility>

namespace gpuexpand {
namespace {

// Mount options may be written "a,b" or [a, b]; playbooks always see a
// list, and "defaults" when none are given, as fstab(5) spells it.
void normalize_mount_options(nlohmann::json& settings) {
  if (!settings.is_object() || !settings.contains("storage") || !settings["storage"].is_array()) return;
  for (auto& mount : settings["storage"]) {
    if (!mount.is_object()) continue;
    auto it = mount.find("options");
    if (it == mount.end() || (it->is_string() && it->get<std::string>().empty()) ||
        (it->is_array() && it->empty())) {
      mount["options"] = nlohmann::json::array({"defaults"});
    } else if (it->is_string()) {
      nlohmann::json list = nlohmann::json::array();
      std::string text = it->get<std::string>();
      for (size_t start = 0; start <= text.size();) {
        size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        if (comma > start) list.push_back(text.substr(start, comma - start));
        start = comma + 1;
      }
      *it = list;
    }
  }
}

// Values the spec gives once for many places, written out where the
// playbooks read them: an interface without its own MTU takes network.mtu.
void apply_derived_defaults(nlohmann::json& settings) {
  normalize_mount_options(settings);
  // storage[].directories, flattened to absolute paths for the storage
  // playbook (a step iterates one list): storage_directories[].path.
  if (settings.is_object() && settings.contains("storage") && settings["storage"].is_array()) {
    nlohmann::json directories = nlohmann::json::array();
    for (const auto& mount : settings["storage"]) {
      if (!mount.is_object() || !mount.contains("mountpoint") || !mount["mountpoint"].is_string()) continue;
      std::string base = mount["mountpoint"].get<std::string>();
      while (base.size() > 1 && base.back() == '/') base.pop_back();
      for (const auto& d : mount.value("directories", nlohmann::json::array())) {
        if (d.is_string()) directories.push_back({{"path", base + "/" + d.get<std::string>()}});
      }
    }
    if (!directories.empty()) settings["storage_directories"] = directories;
  }
  auto* network = settings.is_object() && settings.contains("network") ? &settings["network"] : nullptr;
  if (!network || !network->is_object() || !network->contains("mtu")) return;
  auto it = network->find("compute_interfaces");
  if (it == network->end() || !it->is_array()) return;
  for (auto& interface : *it) {
    if (interface.is_object() && !interface.contains("mtu")) interface["mtu"] = (*network)["mtu"];
  }
}

// NCCL finds the topology file through NCCL_TOPO_FILE in /etc/nccl.conf.
void derive_nccl_topology(nlohmann::json& settings) {
  auto* network = settings.is_object() && settings.contains("network") ? &settings["network"] : nullptr;
  if (!network || !network->is_object() || !network->contains("nccl") || !(*network)["nccl"].is_object()) return;
  auto& nccl = (*network)["nccl"];
  if (!nccl.contains("topology_file") || !nccl["topology_file"].is_string()) return;
  if (!nccl.contains("env") || !nccl["env"].is_object()) nccl["env"] = nlohmann::json::object();
  if (!nccl["env"].contains("NCCL_TOPO_FILE")) nccl["env"]["NCCL_TOPO_FILE"] = nccl["topology_file"];
}

}  // namespace

void derive_settings(nlohmann::json& settings) {
  apply_derived_defaults(settings);
  derive_nccl_topology(settings);
}

}  // namespace gpuexpand
