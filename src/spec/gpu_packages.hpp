#pragma once
// The names of the GPU phase's packages: a preset for the package source
// (gpu.source) with the vendor's branch in the names, overridden per
// package by gpu.packages.NAME (placeholders {branch}, {major}, {minor}),
// written out as gpu.package_names for the playbook. NVIDIA's repositories
// name packages by branch (cuda-drivers-550, nvidia-fabricmanager-550,
// cuda-toolkit-12-4); a distribution or the lab uses unversioned names.

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuexpand {

struct GpuPackageCheck {
  std::function<std::string(const std::string&)> origin;  // effective pointer -> spec pointer
  std::function<void(const std::string& pointer, const std::string& message)> error;
};

// settings["gpu"]["package_names"] (and ["module_stream"] for the RHEL
// preset) from gpu.source, gpu.packages, gpu.driver_package and the versions.
void derive_gpu_packages(nlohmann::json& settings, const GpuPackageCheck& check);

// "cuda-toolkit-{major}-{minor}" with version "12.4" -> "cuda-toolkit-12-4";
// an error names the placeholder the version cannot fill.
struct PackageNameResult {
  std::string name, error;
};
PackageNameResult expand_package_name(const std::string& pattern, const std::string& version);

}  // namespace gpuexpand
