// gpu.source presets and gpu.packages names with the vendor's branch in
// them: what the GPU phase installs, and the errors for names a version
// cannot fill.

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;
using testing::diagnostics_text;
using testing::load_spec;
using testing::minimal_spec;

json gpu_of(const std::string& gpu_yaml) {
  auto result = load_spec(minimal_spec("defaults:\n  gpu:\n" + gpu_yaml));
  EXPECT_TRUE(result.spec) << diagnostics_text(result);
  return result.spec ? (*result.spec->nodes[0].settings)["gpu"] : json();
}

TEST(GpuPackages, NvidiaCudaRepositoryNamesCarryTheBranch) {
  const json gpu = gpu_of("    source: nvidia-cuda-repo\n    driver_version: '550.90.07'\n    cuda_version: '12.4'\n"
                          "    fabric_manager: true\n");
  // The driver itself pins the version: cuda-drivers-550 depends on it
  // with a lower bound only.
  EXPECT_EQ(gpu["package_names"]["driver"], "nvidia-driver-550");
  EXPECT_EQ(gpu["package_names"]["driver_meta"], "cuda-drivers-550");
  EXPECT_EQ(gpu["driver_packages"], json({"nvidia-driver-550", "cuda-drivers-550"}));
  EXPECT_EQ(gpu["package_names"]["fabric_manager"], "nvidia-fabricmanager-550");
  EXPECT_EQ(gpu["package_names"]["cuda"], "cuda-toolkit-12-4");
  EXPECT_EQ(gpu["package_names"]["container_toolkit"], "nvidia-container-toolkit");
  EXPECT_FALSE(gpu.contains("module_stream"));
  // Another branch's packages are replaced: names with {branch} in them.
  EXPECT_EQ(gpu["package_replaces"], json({{"driver", {"nvidia-driver-[0-9]*", "cuda-drivers-[0-9]*"}},
                                           {"fabric_manager", {"nvidia-fabricmanager-[0-9]*"}}}));
}

TEST(GpuPackages, NvidiaDebianRepositoryKeepsTheDriversNameAndAddsTheBranchMetapackage) {
  const json gpu = gpu_of("    source: nvidia-cuda-repo-debian\n    driver_version: '550.90.07'\n");
  EXPECT_EQ(gpu["driver_packages"], json({"nvidia-driver", "cuda-drivers-550"}));
  EXPECT_EQ(gpu["package_replaces"]["driver"], json({"cuda-drivers-[0-9]*"}));
  const json plain = gpu_of("    driver_version: '550.90.07'\n");
  EXPECT_EQ(plain["driver_packages"], json({"nvidia-driver"}));
  EXPECT_EQ(plain["package_replaces"], json({{"driver", json::array()}, {"fabric_manager", json::array()}}));
}

TEST(GpuPackages, RhelRepositoryUsesTheModuleStreamOfTheBranch) {
  const json gpu = gpu_of("    source: nvidia-cuda-repo-rhel\n    driver_version: '3:550.90.07'\n");
  EXPECT_EQ(gpu["package_names"]["driver"], "nvidia-driver");
  EXPECT_EQ(gpu["package_names"]["fabric_manager"], "nvidia-fabric-manager");
  EXPECT_EQ(gpu["module_stream"], json({{"name", "nvidia-driver"}, {"stream", "550-dkms"}}));
}

TEST(GpuPackages, TheDefaultIsTodaysUnversionedNamesAndOverridesWin) {
  const json plain = gpu_of("    driver_version: '550.90.07'\n");
  EXPECT_EQ(plain["package_names"]["driver"], "nvidia-driver");
  EXPECT_EQ(plain["package_names"]["cuda"], "cuda-toolkit");
  const json custom = gpu_of("    source: nvidia-cuda-repo\n    driver_version: '550.90.07'\n"
                             "    packages: {driver: 'nvidia-driver-{branch}-server', dcgm: datacenter-gpu-manager-4-cuda12}\n");
  EXPECT_EQ(custom["package_names"]["driver"], "nvidia-driver-550-server");
  EXPECT_EQ(custom["package_names"]["dcgm"], "datacenter-gpu-manager-4-cuda12");
  EXPECT_EQ(gpu_of("    driver_version: '550.90.07'\n    driver_package: nvidia-driver-{branch}-open\n")["package_names"]["driver"],
            "nvidia-driver-550-open");
}

TEST(GpuPackages, ANameTheVersionCannotFillIsALocatedError) {
  auto minor = load_spec(minimal_spec("defaults:\n  gpu:\n    source: nvidia-cuda-repo\n    driver_version: '550'\n"
                                      "    cuda_version: '12'\n"));
  EXPECT_EQ(diagnostics_text(minor),
            "spec.yaml:9:13: gpu cuda package 'cuda-toolkit-{major}-{minor}': '{minor}' needs a version with a minor "
            "part, and '12' has none\n");
  auto unknown = load_spec(minimal_spec("defaults:\n  gpu:\n    driver_version: '550'\n    packages: {driver: 'nv-{brnch}'}\n"));
  EXPECT_NE(diagnostics_text(unknown).find("gpu driver package 'nv-{brnch}': unknown placeholder '{brnch}' (use {branch}, "
                                           "{major} or {minor})"),
            std::string::npos)
      << diagnostics_text(unknown);
  // A package the phase does not install (no cuda_version) needs no name.
  EXPECT_TRUE(load_spec(minimal_spec("defaults:\n  gpu:\n    source: nvidia-cuda-repo\n    driver_version: '550'\n")).spec);
}

}  // namespace
}  // namespace gpuexpand
