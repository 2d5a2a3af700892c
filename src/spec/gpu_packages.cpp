#include "gpu_packages.hpp"
#include "json_access.hpp"

#include <regex>
#include <vector>

namespace gpuexpand {
namespace {

struct Preset {
  const char* source;
  const char* driver;
  const char* driver_meta;  // installed at the driver's version beside it ("" for none)
  const char* cuda;
  const char* fabric_manager;
  const char* container_toolkit;
  const char* dcgm;
  bool module_streams;  // the driver comes as the nvidia-driver dnf module, stream BRANCH-dkms
};

// NVIDIA's CUDA repositories (developer.download.nvidia.com/compute/cuda/repos/):
// the Ubuntu ones put the branch in the driver's names (nvidia-driver-550
// 550.90.07-0ubuntu1), the Debian ones do not (nvidia-driver 550.90.07-1);
// both have the cuda-drivers-BRANCH metapackage, whose dependencies are
// lower bounds only, so the driver package itself is what pins the
// version (tests/fixtures/nvidia-repo/SOURCES.md). The RHEL repositories
// ship the driver as the nvidia-driver module, one stream per branch.
const Preset kPresets[] = {
    {"distribution", "nvidia-driver", "", "cuda-toolkit", "nvidia-fabricmanager", "nvidia-container-toolkit",
     "datacenter-gpu-manager", false},
    {"nvidia-cuda-repo", "nvidia-driver-{branch}", "cuda-drivers-{branch}", "cuda-toolkit-{major}-{minor}",
     "nvidia-fabricmanager-{branch}", "nvidia-container-toolkit", "datacenter-gpu-manager", false},
    {"nvidia-cuda-repo-debian", "nvidia-driver", "cuda-drivers-{branch}", "cuda-toolkit-{major}-{minor}",
     "nvidia-fabricmanager-{branch}", "nvidia-container-toolkit", "datacenter-gpu-manager", false},
    {"nvidia-cuda-repo-rhel", "nvidia-driver", "", "cuda-toolkit-{major}-{minor}", "nvidia-fabric-manager",
     "nvidia-container-toolkit", "datacenter-gpu-manager", true},
};

// A name pattern with the branch in it replaces the other branches'
// packages of that name: "cuda-drivers-{branch}" -> "cuda-drivers-[0-9]*".
std::string other_branches(const std::string& pattern) {
  const auto at = pattern.find("{branch}");
  if (at == std::string::npos) return "";
  std::string glob = pattern;
  glob.replace(at, 8, "[0-9]*");
  return glob.find('{') == std::string::npos ? glob : "";
}

const Preset& preset_named(const std::string& source) {
  for (const auto& p : kPresets) {
    if (source == p.source) return p;
  }
  return kPresets[0];  // the schema allows only these names
}

// "3:550.90.07-1" -> {"550", "90", "07"}: the upstream version's components.
std::vector<std::string> components(std::string version) {
  if (auto colon = version.find(':'); colon != std::string::npos) version.erase(0, colon + 1);
  if (auto dash = version.find('-'); dash != std::string::npos) version.resize(dash);
  std::vector<std::string> out;
  for (size_t start = 0; start <= version.size();) {
    size_t dot = version.find('.', start);
    if (dot == std::string::npos) dot = version.size();
    out.push_back(version.substr(start, dot - start));
    start = dot + 1;
  }
  return out;
}

}  // namespace

PackageNameResult expand_package_name(const std::string& pattern, const std::string& version) {
  PackageNameResult out;
  const auto parts = components(version);
  for (size_t i = 0; i < pattern.size();) {
    if (pattern[i] != '{') {
      out.name += pattern[i++];
      continue;
    }
    const size_t close = pattern.find('}', i);
    const std::string key = close == std::string::npos ? pattern.substr(i) : pattern.substr(i + 1, close - i - 1);
    size_t index = 0;
    if (key == "branch" || key == "major") {
      index = 0;
    } else if (key == "minor") {
      index = 1;
    } else {
      out.error = "unknown placeholder '{" + key + "}' (use {branch}, {major} or {minor})";
      return out;
    }
    if (version.empty() || index >= parts.size() || parts[index].empty()) {
      out.error = "'{" + key + "}' needs a version with " + (index == 0 ? "a major" : "a minor") + " part" +
                  (version.empty() ? " (no version is set)" : ", and '" + version + "' has none");
      return out;
    }
    out.name += parts[index];
    i = close + 1;
  }
  static const std::regex valid("^[a-z0-9][a-z0-9+.-]*$");
  if (!std::regex_match(out.name, valid)) out.error = "'" + out.name + "' is not a package name";
  return out;
}

void derive_gpu_packages(nlohmann::json& settings, const GpuPackageCheck& check) {
  if (!settings.is_object()) return;
  auto gpu = settings.find("gpu");
  if (gpu == settings.end() || !gpu->is_object()) return;
  const std::string source = text_at(*gpu, "source", std::string("distribution"));
  const Preset& preset = preset_named(source);
  const std::string driver_version = text_at(*gpu, "driver_version");
  const std::string cuda_version = text_at(*gpu, "cuda_version");
  const nlohmann::json overrides = gpu->value("packages", nlohmann::json::object());
  struct Wanted {
    const char* key;
    const char* preset_name;
    const std::string& version;
    bool used;  // the playbook installs it with these settings
  };
  const Wanted wanted[] = {
      {"driver", preset.driver, driver_version, !driver_version.empty()},
      {"driver_meta", preset.driver_meta, driver_version, !driver_version.empty()},
      {"cuda", preset.cuda, cuda_version, !cuda_version.empty()},
      {"fabric_manager", preset.fabric_manager, driver_version, flag_at(*gpu, "fabric_manager")},
      {"container_toolkit", preset.container_toolkit, driver_version, flag_at(*gpu, "container_toolkit")},
      {"dcgm", preset.dcgm, driver_version, flag_at(*gpu, "dcgm")},
  };
  nlohmann::json names = nlohmann::json::object();
  nlohmann::json replaces = {{"driver", nlohmann::json::array()}, {"fabric_manager", nlohmann::json::array()}};
  for (const auto& w : wanted) {
    std::string pattern = w.preset_name, from = "/gpu/source";
    if (std::string(w.key) == "driver" && gpu->contains("driver_package") && (*gpu)["driver_package"].is_string()) {
      pattern = (*gpu)["driver_package"].get<std::string>();
      from = "/gpu/driver_package";
    }
    if (overrides.is_object() && overrides.contains(w.key) && overrides[w.key].is_string()) {
      pattern = overrides[w.key].get<std::string>();
      from = std::string("/gpu/packages/") + w.key;
    }
    if (pattern.empty()) continue;  // a preset without this package
    const auto expanded = expand_package_name(pattern, w.version);
    if (!expanded.error.empty()) {
      // Only a package the phase will install needs a name it can build.
      if (w.used) {
        const std::string origin = check.origin(from);
        check.error(origin.empty() ? check.origin("/gpu") : origin,
                    std::string("gpu ") + w.key + " package '" + pattern + "': " + expanded.error);
      }
      continue;
    }
    names[w.key] = expanded.name;
    const std::string key = w.key;
    if (const std::string glob = other_branches(pattern); !glob.empty() && (key == "driver" || key == "driver_meta")) {
      replaces["driver"].push_back(glob);
    } else if (!glob.empty() && key == "fabric_manager") {
      replaces["fabric_manager"].push_back(glob);
    }
  }
  (*gpu)["package_names"] = names;
  // What the driver step installs, and what other branches' packages the
  // driver and fabric manager steps replace.
  nlohmann::json driver_packages = nlohmann::json::array();
  for (const char* key : {"driver", "driver_meta"}) {
    if (names.contains(key)) driver_packages.push_back(names[key]);
  }
  (*gpu)["driver_packages"] = driver_packages;
  (*gpu)["package_replaces"] = replaces;
  if (preset.module_streams && !driver_version.empty()) {
    (*gpu)["module_stream"] = {{"name", "nvidia-driver"}, {"stream", components(driver_version).front() + "-dkms"}};
  }
}

}  // namespace gpuexpand
