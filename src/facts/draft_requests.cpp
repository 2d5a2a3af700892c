// The three probes of `init --from NODE` (facts/spec_draft.hpp): find the
// files, read them, read the sysctl keys they set.

#include <algorithm>
#include <set>
#include <sstream>

#include "gpuexpand/facts/spec_draft.hpp"
#include "gpuexpand/steps/package_source.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

// The packages the phases install (a node in service has some of them) and
// the base tools operators commonly add; what is installed of the latter
// becomes os.packages, pinned at the node's version.
const char* const kPhasePackages[] = {"chrony",       "nvidia-driver",   "nvidia-fabricmanager", "nvidia-container-toolkit",
                                      "libnccl2",     "rdma-core",       "ibverbs-utils",        "infiniband-diags",
                                      "perftest",     "sshfs",           "nfs-common",           "lustre-client-utils",
                                      "prometheus-node-exporter", "dcgm-exporter", "slurmd", "munge"};
const char* const kPackagePatterns[] = {"nvidia-driver-[0-9]*", "cuda-drivers-[0-9]*", "cuda-toolkit-[0-9]*",
                                        "nvidia-fabricmanager-[0-9]*"};
const char* const kServices[] = {"chrony", "nvidia-persistenced", "nvidia-fabricmanager", "prometheus-node-exporter",
                                 "dcgm-exporter", "slurmd", "munge"};
const char* const kSysctlDir = "/etc/sysctl.d";
const char* const kSourcesDir = "/etc/apt/sources.list.d";
const char* const kKeyringDir = "/etc/apt/keyrings";
const char* const kPreferencesDir = "/etc/apt/preferences.d";

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<std::string> listing(const json& facts, const std::string& dir) {
  std::vector<std::string> names;
  const auto dirs = facts.find("directories");
  if (dirs == facts.end() || !dirs->contains(dir) || !(*dirs)[dir].is_array()) return names;
  for (const auto& n : (*dirs)[dir]) {
    if (n.is_string()) names.push_back(n.get<std::string>());
  }
  return names;
}

}  // namespace

std::vector<std::string> draft_base_tools() {
  return {"rsync", "jq", "iputils-ping", "numactl", "pciutils", "ipmitool", "ethtool", "nvme-cli", "curl",
          "tmux",  "htop", "lsof",       "strace",  "sysstat",  "dmidecode", "hwloc", "git"};
}

FactsRequest draft_request_listings() {
  FactsRequest r;
  for (const char* p : kPhasePackages) r.packages.insert(p);
  for (const auto& p : draft_base_tools()) r.packages.insert(p);
  for (const char* p : kPackagePatterns) r.package_patterns.insert(p);
  for (const char* s : kServices) r.services.insert(s);
  r.listed_directories = {kSysctlDir, kSourcesDir, kKeyringDir, kPreferencesDir};
  r.files = {"/etc/sysctl.conf", "/etc/chrony/chrony.conf", "/etc/default/slurmd",
             "/etc/systemd/system/slurmd.service.d/gpuexpand.conf"};
  r.free_space_paths.clear();
  return r;
}

FactsRequest draft_request_files(const json& listed) {
  FactsRequest r = draft_request_listings();
  for (const auto& name : listing(listed, kSysctlDir)) {
    if (ends_with(name, ".conf")) r.files.insert(std::string(kSysctlDir) + "/" + name);
  }
  // gpuexpand's own package sources: what os.repositories wrote, read back.
  for (const auto& name : listing(listed, kSourcesDir)) {
    if (name.rfind(kPackageSourcePrefix, 0) == 0 && ends_with(name, ".sources")) {
      r.files.insert(std::string(kSourcesDir) + "/" + name);
    }
  }
  for (const auto& name : listing(listed, kKeyringDir)) {
    if (name.rfind(kPackageSourcePrefix, 0) == 0) r.files.insert(std::string(kKeyringDir) + "/" + name);
  }
  for (const auto& name : listing(listed, kPreferencesDir)) {
    if (name.rfind(kPackageSourcePrefix, 0) == 0) r.files.insert(std::string(kPreferencesDir) + "/" + name);
  }
  return r;
}

std::vector<std::string> sysctl_file_keys(const std::string& content) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  std::istringstream in(content);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#' || line[first] == ';') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(first, eq - first);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (!key.empty() && key[0] == '-') key.erase(0, 1);  // "-key": errors ignored, still a setting
    std::replace(key.begin(), key.end(), '/', '.');
    if (key.empty() || key.find_first_of("*? \t") != std::string::npos) continue;  // globs are not one key
    if (seen.insert(key).second) keys.push_back(key);
  }
  return keys;
}

FactsRequest draft_request_sysctl(const json& with_files) {
  FactsRequest r = draft_request_files(with_files);
  const auto files = with_files.find("files");
  if (files == with_files.end()) return r;
  for (const auto& path : r.files) {
    const bool sysctl_file = path == "/etc/sysctl.conf" || path.rfind(std::string(kSysctlDir) + "/", 0) == 0;
    if (!sysctl_file || !files->contains(path)) continue;
    const json& f = (*files)[path];
    if (!f.contains("content") || !f["content"].is_string()) continue;
    for (const auto& key : sysctl_file_keys(f["content"].get<std::string>())) r.sysctl_keys.insert(key);
  }
  return r;
}

}  // namespace gpuexpand
