#pragma once
// What the facts probe must look at on one node: each step kind adds what
// its decision reads (StepKind::request_facts); facts/probe.hpp turns it
// into the script and parses the answer.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpuexpand {

// A node's earlier answer to the package sections of its probe (dpkg-query,
// apt-cache), which the next probe may reuse instead of running those tools
// again while every file they read is as it was (facts/probe.hpp).
struct EarlierPackageAnswer {
  std::string key;     // package_sections_key of the request it answered
  std::string inputs;  // what stat printed for the files apt and dpkg read
  std::string output;  // the probe's output from those stat lines to the sections' end, as printed
};

struct FactsRequest {
  std::set<std::string> sysctl_keys;
  std::set<std::string> packages;
  // Of those, packages a step wants at a version: the versions the node's
  // sources offer are facts["package_candidates"][name] (newest first), so
  // the plan can name the version "550" resolves to.
  std::set<std::string> versioned_packages;
  // Packages a step installs without a version. With reference nodes (the
  // consistency report) the version apt would install where one is not
  // installed, its candidate, is facts["package_install_candidates"][name],
  // so a new node is compared at the version it will run (node_probe_request
  // leaves these out otherwise).
  std::set<std::string> unpinned_packages;
  // Shell patterns of package names (cuda-drivers-[0-9]*): the installed
  // packages they match are facts["packages"] too (a step that replaces
  // another driver branch's packages must see them).
  std::set<std::string> package_patterns;
  std::set<std::string> files;     // absolute paths (files and directories)
  std::set<std::string> secret_files;  // of those, files whose content must not be read: digest only
  std::set<std::string> services;  // unit names without ".service"
  // Directories whose entries (names only) are facts["directories"][dir]:
  // how a kind finds files it wrote earlier that the spec no longer names.
  std::set<std::string> listed_directories;
  // Every apt source file's entries (facts["apt_sources"]): a repository
  // step finds sources of the image that name the repository it writes.
  bool apt_sources = false;
  std::map<std::string, std::string> checks;  // step key -> rendered check command
  // Checks of steps delegated to the scheduler's controller (plan/controller.hpp):
  // run there by controller_check_script, merged into the node's facts.
  std::map<std::string, std::string> controller_checks;
  // Files copy steps fetch from the controller (src_host: controller): their
  // digests there become facts["controller_files"].
  std::set<std::string> controller_files;
  // Delegated steps whose checks need the node's facts: rendered again
  // with them before the controller is asked (controller_request_for).
  std::map<std::string, std::string> controller_unresolved;
  bool needs_controller() const {
    return !controller_checks.empty() || !controller_files.empty() || !controller_unresolved.empty();
  }
  // Free space (df) and the RDMA ports (rdma link, ibstat, ibdev2netdev):
  // what `facts` and `doctor` show; a run that only decides leaves them
  // out where nothing it decides reads them (facts/gather.hpp).
  std::vector<std::string> free_space_paths = {"/var/lib/gpuexpand"};
  bool rdma_ports = true;
  // nvidia-smi's default table (the CUDA version its banner prints) and
  // `topo -m`: what `facts` shows, and no step or check decides on. Each
  // nvidia-smi call initialises NVML on every GPU (tenths of a second on
  // a real 8-GPU node), so plan and apply make one call, not three.
  bool gpu_details = false;
  // Set where answers are kept between runs (a state store): the probe
  // prints what stat says of the files apt and dpkg read before their
  // sections, and with `earlier_packages` (of the same key) prints "@@same"
  // instead of running those tools when nothing there changed.
  bool fingerprint_packages = false;
  std::optional<EarlierPackageAnswer> earlier_packages;
};

}  // namespace gpuexpand
