#include "gpuexpand/steps/phase_touch.hpp"

namespace gpuexpand {

using nlohmann::json;

json PhaseTouch::to_json() const {
  json manifest = {{"files", files},         {"directories", directories}, {"packages", packages},
          {"services", services},   {"sysctl", sysctl_keys},      {"mounts", mount_targets},
          {"hostname", hostname},   {"command_rollbacks", command_rollbacks},
          {"controller_rollbacks", controller_rollbacks}};
  // Only when there are some: manifests of phases without address steps
  // stay as they were.
  if (!interfaces.empty()) manifest["interfaces"] = interfaces;
  if (!package_patterns.empty()) manifest["package_patterns"] = package_patterns;
  return manifest;
}

PhaseTouch PhaseTouch::from_json(const json& m) {
  PhaseTouch touch;
  auto set_of = [&](const char* key) {
    std::set<std::string> out;
    for (const auto& v : m.value(key, json::array())) {
      if (v.is_string()) out.insert(v.get<std::string>());
    }
    return out;
  };
  touch.files = set_of("files");
  touch.directories = set_of("directories");
  touch.packages = set_of("packages");
  touch.services = set_of("services");
  touch.sysctl_keys = set_of("sysctl");
  touch.mount_targets = set_of("mounts");
  touch.interfaces = set_of("interfaces");
  touch.package_patterns = set_of("package_patterns");
  touch.hostname = m.value("hostname", false);
  for (const auto& v : m.value("command_rollbacks", json::array())) {
    if (v.is_string()) touch.command_rollbacks.push_back(v.get<std::string>());
  }
  for (const auto& v : m.value("controller_rollbacks", json::array())) {
    if (v.is_string()) touch.controller_rollbacks.push_back(v.get<std::string>());
  }
  return touch;
}

bool PhaseTouch::empty() const {
  return files.empty() && directories.empty() && packages.empty() && package_patterns.empty() && services.empty() && sysctl_keys.empty() &&
         mount_targets.empty() && interfaces.empty() && !hostname && command_rollbacks.empty() && controller_rollbacks.empty();
}

}  // namespace gpuexpand
