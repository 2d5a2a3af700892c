// The findings of `gpuexpand doctor` (facts/doctor.hpp). Each rule reads
// the facts the plan's probe gathers and the node's settings, and says what
// is wrong and what to check next, in the words of the runbooks operators
// use: the check comes first, the command that shows it second.

#include "gpuexpand/facts/doctor.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/transport/known_hosts.hpp"
#include "gpuexpand/util/local_file.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "json_read.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

using facts_json::at;
using facts_json::text;

long long number(const json& j, const std::string& key, long long otherwise) {
  const json& v = at(j, key);
  return v.is_number_integer() ? v.get<long long>() : otherwise;
}

// What the common Xid codes mean (NVIDIA's Xid catalogue), and what to do.
struct XidMeaning {
  int code;
  const char* meaning;
  bool error;
};
constexpr XidMeaning kXids[] = {
    {13, "graphics engine exception (often the application)", false},
    {31, "GPU memory page fault (often the application)", false},
    {43, "GPU stopped processing (a job was killed)", false},
    {45, "preemptive cleanup after a job ended", false},
    {48, "double-bit ECC error", true},
    {63, "ECC page retirement or row remapping recorded", false},
    {64, "ECC page retirement or row remapping failed", true},
    {74, "NVLink error", true},
    {79, "the GPU has fallen off the bus", true},
    {92, "high single-bit ECC error rate", false},
    {94, "contained ECC error (the application was stopped)", false},
    {95, "uncontained ECC error: reset the GPU", true},
    {119, "GSP RPC timeout", true},
    {120, "GSP error", true},
};

class NodeDoctor {
 public:
  NodeDoctor(const NodeSpec& node, const json& facts) : node_(node), facts_(facts), settings_(*node.settings) {}

  std::vector<Finding> findings;

  void error(const std::string& area, const std::string& what, const std::string& next) {
    findings.push_back({node_.name, area, true, what, next});
  }
  void warning(const std::string& area, const std::string& what, const std::string& next) {
    findings.push_back({node_.name, area, false, what, next});
  }

  void disk() {
    const json& free = at(facts_, "disk_free_bytes");
    for (const auto& [path, bytes] : free.items()) {
      if (!bytes.is_number_integer()) continue;
      const long long mib = bytes.get<long long>() / (1024 * 1024);
      const std::string what = std::to_string(mib) + " MiB free under " + path;
      const std::string next = "checkpoints and packages are written there: df -h " + path +
                               "; free space (apt-get clean, old checkpoints under " + path + "/checkpoints)";
      if (mib < 1024) {
        error("disk", what + " (at least 1024 MiB needed)", next);
      } else if (mib < 2048) {
        warning("disk", what, next);
      }
    }
  }

  void clock(const DoctorExtras& extras, long long controller_epoch) {
    if (extras.node_epoch && controller_epoch > 0) {
      const long long skew = *extras.node_epoch - controller_epoch;
      const long long size = skew < 0 ? -skew : skew;
      const std::string what = "clock " + std::to_string(size) + " s " + (skew < 0 ? "behind" : "ahead of") + " this machine";
      const std::string next = "chronyc tracking; chronyc sources (are the spec's NTP servers reachable?)";
      if (size > 300) {
        error("clock", what + ": munge credentials (Slurm) fail beyond 300 s", next);
      } else if (size > 5) {
        warning("clock", what, next);
      }
    }
    const json& sync = at(facts_, "time_sync");
    const json& servers = at(at(settings_, "os"), "ntp_servers");
    if (servers.is_array() && !servers.empty() && sync.is_object() && !at(sync, "active").get<bool>()) {
      warning("clock", "no time sync service running",
              "systemctl status chrony; gpuexpand apply --until os-init configures it");
    }
  }

  void gpu(const DoctorExtras& extras) {
    const json& want = at(settings_, "gpu");
    const long long expected = number(want, "expected_count", 0);
    if (!want.is_object() || (expected == 0 && text(want, "driver_version").empty())) return;
    const json& gpus = at(facts_, "gpus");
    const std::string problem = text(gpus, "error");
    if (!problem.empty()) {
      if (at(gpus, "driver_mismatch").is_boolean() && at(gpus, "driver_mismatch").get<bool>()) {
        error("gpu", "driver/library version mismatch: the loaded kernel module is not the installed driver's",
              "the driver changed without a reboot: reboot the node (or, with no GPU process left, unload and "
              "reload the nvidia modules); cat /proc/driver/nvidia/version shows the loaded one");
      } else if (problem.find("cannot communicate") != std::string::npos) {  // its text also says "not installed"
        error("gpu", "the NVIDIA kernel module is not loaded",
              "lsmod | grep nvidia; dkms status (built for uname -r?); dmesg | grep -i nvrm; secure boot refusing "
              "an unsigned module?");
      } else if (problem.find("not installed") != std::string::npos) {
        error("gpu", "no NVIDIA driver installed (" + problem + ")", "gpuexpand apply --until gpu-driver");
      } else {
        error("gpu", problem, "nvidia-smi; dmesg | grep -i -e nvrm -e xid");
      }
    } else {
      const long long count = number(gpus, "count", 0);
      if (expected > 0 && count < expected) {
        error("gpu", std::to_string(count) + " GPUs visible, " + std::to_string(expected) + " expected",
              "a GPU fell off the bus (Xid 79) or is disabled: dmesg | grep -i xid; lspci | grep -i nvidia; "
              "reseat or replace it");
      }
      const std::string model = text(gpus, "model"), want_model = text(want, "expected_model");
      if (!want_model.empty() && !model.empty() && model != want_model) {
        warning("gpu", "model " + model + ", expected " + want_model, "is this node in the right group or rack of the spec?");
      }
      const std::string driver = text(gpus, "driver_version"), want_driver = text(want, "driver_version");
      if (!want_driver.empty() && !driver.empty() && driver.rfind(want_driver, 0) != 0) {
        warning("gpu", "driver " + driver + " in use, the spec wants " + want_driver, "gpuexpand plan shows the change");
      }
      if (at(want, "persistence_mode").is_boolean() && at(want, "persistence_mode").get<bool>() &&
          at(gpus, "persistence_mode").is_boolean() && !at(gpus, "persistence_mode").get<bool>()) {
        warning("gpu", "persistence mode off", "systemctl status nvidia-persistenced (jobs pay the driver's start-up)");
      }
      const json& files = at(gpus, "device_files");
      if (files.is_array() && count > 0 && static_cast<long long>(files.size()) < count) {
        error("gpu", std::to_string(files.size()) + " of " + std::to_string(count) + " /dev/nvidia* device files",
              "nvidia-modprobe -c 0 -u; udev rules; containers and Slurm's gres.conf name these files");
      }
      for (const auto& device : at(gpus, "devices")) {
        const long long ecc = number(device, "ecc_uncorrected_volatile", 0);
        if (ecc > 0) {
          error("gpu", "GPU " + std::to_string(number(device, "index", -1)) + ": " + std::to_string(ecc) +
                           " uncorrectable ECC errors",
                "nvidia-smi -q -d ECC,ROW_REMAPPER -i " + std::to_string(number(device, "index", 0)) +
                    "; drain the node, reset the GPU (nvidia-smi -r) or replace it");
        }
      }
    }
    if (at(want, "fabric_manager").is_boolean() && at(want, "fabric_manager").get<bool>()) {
      const json& fm = at(at(facts_, "services"), "nvidia-fabricmanager");
      if (fm.is_object() && !(at(fm, "active").is_boolean() && at(fm, "active").get<bool>())) {
        error("gpu", "nvidia-fabricmanager is not running: NVLink jobs fail (CUDA error 802, system not yet initialized)",
              "systemctl status nvidia-fabricmanager; its version must equal the driver's");
      }
    }
    xids(extras);
  }

  void xids(const DoctorExtras& extras) {
    std::map<int, int> seen;
    for (const auto& line : extras.xid_lines) {
      const auto close = line.find("): ");
      if (close == std::string::npos) continue;
      try {
        ++seen[std::stoi(line.substr(close + 3))];
      } catch (...) {
      }
    }
    for (const auto& [code, times] : seen) {
      const XidMeaning* meaning = nullptr;
      for (const auto& m : kXids) {
        if (m.code == code) meaning = &m;
      }
      const std::string what = "Xid " + std::to_string(code) + " in the kernel log (" + std::to_string(times) + "x)" +
                               (meaning ? std::string(": ") + meaning->meaning : "");
      const std::string next = "dmesg -T | grep -i xid; NVIDIA's Xid catalogue for " + std::to_string(code);
      if (meaning && meaning->error) {
        error("gpu", what, next);
      } else {
        warning("gpu", what, next);
      }
    }
  }

  void network() {
    const json& want = at(settings_, "network");
    if (!want.is_object()) return;
    const long long default_mtu = number(want, "mtu", 0);
    std::map<std::string, const json*> interfaces;
    for (const auto& i : at(at(facts_, "network"), "interfaces")) interfaces[text(i, "name")] = &i;
    for (const auto& wanted : at(want, "compute_interfaces")) {
      const std::string name = text(wanted, "name");
      const auto found = interfaces.find(name);
      if (found == interfaces.end()) {
        error("network", "compute interface " + name + " missing", "ip -br link; the NIC's driver; is " + name + " its name here?");
        continue;
      }
      if (text(*found->second, "state") != "up") {
        error("network", name + " is " + (text(*found->second, "state").empty() ? "not up" : text(*found->second, "state")),
              "ip link set " + name + " up; ethtool " + name + " (link detected?); the cable and switch port");
      }
      const long long mtu = number(wanted, "mtu", default_mtu);
      const long long have = number(*found->second, "mtu", 0);
      if (mtu > 0 && have != mtu) {
        error("network", "MTU " + std::to_string(have) + " on " + name + ", wanted " + std::to_string(mtu),
              "gpuexpand apply --until rdma; along the path too: ping -M do -s " + std::to_string(mtu - 28) +
                  " PEER (the switch ports' MTU)");
      }
    }
    nccl(want, interfaces);
    const std::string kind = text(at(want, "rdma"), "kind");
    if (kind == "infiniband" || kind == "roce") {
      const json& ports = at(at(facts_, "network"), "rdma");
      if (!ports.is_array() || ports.empty()) {
        error("network", "no RDMA devices (rdma.kind " + kind + ")",
              "lsmod | grep mlx5_ib; rdma link; ibstat (rdma-core installed? gpuexpand apply --until rdma)");
      }
      for (const auto& port : ports) {
        const std::string state = text(port, "state");
        if (!state.empty() && state != "active") {  // lower case, as the rdma/ibstat parsers give it
          const std::string id = text(port, "device") + "/" + std::to_string(number(port, "port", 1));
          error("network", "RDMA port " + id + " is " + state,
                state == "init" ? "no subnet manager has configured it: is opensm (or the fabric's SM) running?"
                                : "ibstat; the cable and switch port (physical state)");
        }
      }
    }
  }

  // /etc/nccl.conf as the spec wants it, and the interfaces and HCAs it names present here.
  void nccl(const json& network, const std::map<std::string, const json*>& interfaces) {
    const json& env = at(at(network, "nccl"), "env");
    if (env.is_object() && !env.empty()) {
      const json& conf = at(at(facts_, "files"), "/etc/nccl.conf");
      const std::string content = text(conf, "content");
      std::map<std::string, std::string> written;
      std::istringstream in(content);
      for (std::string line; std::getline(in, line);) {
        const auto eq = line.find('=');
        if (eq != std::string::npos && line[0] != '#') written[line.substr(0, eq)] = line.substr(eq + 1);
      }
      for (const auto& [key, value] : env.items()) {
        const std::string wanted = value.is_string() ? value.get<std::string>() : value.dump();
        if (!conf.is_object() || !at(conf, "exists").is_boolean()) continue;  // not asked for: nothing to say
        const auto it = written.find(key);
        if (!at(conf, "exists").get<bool>() || it == written.end()) {
          warning("network", key + " is not in /etc/nccl.conf (the spec sets " + wanted + ")", "gpuexpand apply --until rdma");
        } else if (it->second != wanted) {
          warning("network", key + "=" + it->second + " in /etc/nccl.conf, the spec wants " + wanted,
                  "gpuexpand apply --until rdma; jobs may also set it in their environment");
        }
        if (key == "NCCL_SOCKET_IFNAME") {
          for (const auto& name : split_list(wanted)) {
            if (!name.empty() && name[0] != '^' && name[0] != '=' && !interfaces.count(name)) {
              error("network", "NCCL_SOCKET_IFNAME names " + name + ", which this node does not have",
                    "ip -br link; NCCL falls back to another interface or fails to bootstrap");
            }
          }
        }
        if (key == "NCCL_IB_HCA") {
          std::set<std::string> devices;
          for (const auto& port : at(at(facts_, "network"), "rdma")) devices.insert(text(port, "device"));
          for (const auto& name : split_list(wanted)) {
            const std::string device = name.substr(0, name.find(':'));
            if (!device.empty() && device[0] != '^' && device[0] != '=' && !devices.count(device)) {
              error("network", "NCCL_IB_HCA names " + device + ", which this node does not have",
                    "rdma link; ibstat (the HCA names differ between node models)");
            }
          }
        }
      }
    }
    const std::string topology = text(at(network, "nccl"), "topology_file");
    const json& topo = at(at(facts_, "files"), topology);
    if (!topology.empty() && topo.is_object() && at(topo, "exists").is_boolean() && !at(topo, "exists").get<bool>()) {
      error("network", "the NCCL topology file " + topology + " is missing", "gpuexpand apply --until rdma copies it");
    }
  }

  static std::vector<std::string> split_list(const std::string& value) {
    std::vector<std::string> out;
    std::istringstream in(value);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    return out;
  }

  void storage() {
    std::set<std::string> mounted;
    for (const auto& m : at(facts_, "mounts")) mounted.insert(text(m, "target"));
    std::map<std::string, std::string> fstab_options;
    for (const auto& e : at(facts_, "fstab")) fstab_options[text(e, "target")] = text(e, "options");
    for (const auto& mount : at(settings_, "storage")) {
      const std::string target = text(mount, "mountpoint");
      std::string wanted;
      const json& options = at(mount, "options");
      if (options.is_string()) wanted = options.get<std::string>();
      for (const auto& o : options.is_array() ? options : json::array()) {
        if (o.is_string()) wanted += (wanted.empty() ? "" : ",") + o.get<std::string>();
      }
      if (const auto it = fstab_options.find(target); it != fstab_options.end() && !wanted.empty() &&
                                                       text(mount, "type") != "bind" && it->second != wanted) {
        warning("storage", text(mount, "name") + ": fstab mounts " + target + " with " + it->second + ", the spec wants " + wanted,
                "gpuexpand plan shows the change; options such as nconnect, rsize or noatime set throughput");
      }
      if (target.empty() || mounted.count(target)) continue;
      error("storage", text(mount, "name") + ": " + target + " is not mounted",
            "mount " + target + "; can the node reach " + text(mount, "source") + "? dmesg | tail; gpuexpand apply --until storage");
    }
  }

  void scheduler() {
    const json& want = at(settings_, "scheduler");
    if (text(want, "kind") != "slurm") return;
    const json& slurm = at(at(facts_, "scheduler"), "slurm");
    if (!slurm.is_object()) return;
    if (at(slurm, "slurmd_active").is_boolean() && !at(slurm, "slurmd_active").get<bool>()) {
      error("scheduler", "slurmd is not running",
            "systemctl status slurmd; journalctl -u slurmd -n 50; munge -n | unmunge (the munge key and clock)");
    }
    const std::string state = text(slurm, "node_state");
    const bool dynamic = text(at(want, "slurm"), "mode") != "static";
    // Slurm's own words for why it took the node out, as the controller has them.
    const std::string reason = text(slurm, "reason");
    const std::string because = reason.empty() ? "" : ": " + reason;
    if (state.find("DOWN") != std::string::npos || state.find("NOT_RESPONDING") != std::string::npos) {
      error("scheduler", "Slurm has the node " + state + because,
            "scontrol show node " + node_.name + "; is slurmd running and can it reach the controller?");
    } else if (state.find("INVALID_REG") != std::string::npos) {
      // Slurm refused what slurmd reported (less memory or fewer CPUs than
      // the configuration): it refuses `state=resume` too.
      error("scheduler", "Slurm refused the node's registration (" + state + ")" + because,
            dynamic ? "a dynamic node keeps what it first registered with: gpuexpand apply --until scheduler registers "
                      "it again (scontrol delete nodename=" + node_.name + ", then systemctl restart slurmd)"
                    : "compare the controller's NodeName line for " + node_.name +
                          " with slurmd -C on the node (scheduler.slurm.real_memory_mb, cpus)");
    } else if (state.find("DRAIN") != std::string::npos) {
      warning("scheduler", "drained in Slurm (" + state + ")" + because,
              "after the fix: scontrol update nodename=" + node_.name + " state=resume");
    }
    // Every job holds at least one CPU, so ALLOCATED with none held is a
    // job's end Slurm lost track of (22.05: a job across a reconfigure on
    // dynamic nodes). The node shows busy until slurmctld starts again.
    if (state.rfind("ALLOCATED", 0) == 0 && number(slurm, "cpus_allocated", -1) == 0) {
      warning("scheduler", "Slurm has the node " + state + " with no CPU allocated: a job's end it lost track of",
              "squeue -w " + node_.name +
                  " (no job on it?); then, with no job running there, systemctl restart slurmctld on the controller "
                  "(docs/troubleshooting.md)");
    }
    // RealMemory above what the node has: slurmd registers with less, and
    // Slurm drains the node ("Low RealMemory") and jobs never land on it.
    const long long real_memory = number(slurm, "real_memory_mb", -1), memory = number(facts_, "memory_mib", -1);
    if (real_memory > 0 && memory > 0 && real_memory > memory) {
      error("scheduler",
            "Slurm expects RealMemory=" + std::to_string(real_memory) + " MB, the node has " + std::to_string(memory) +
                " MiB: Slurm drains it (Low RealMemory)",
            dynamic ? "slurmd's --conf set it at the node's first registration (systemctl cat slurmd; gpuexpand sets "
                      "none for a dynamic node): gpuexpand apply --until scheduler writes its unit again and registers "
                      "the node anew"
                    : "set scheduler.slurm.real_memory_mb to at most what `slurmd -C` prints on the node, then "
                      "gpuexpand apply --until scheduler");
    }
    if (at(slurm, "registered").is_boolean() && !at(slurm, "registered").get<bool>()) {
      warning("scheduler", "not registered with the Slurm controller", "gpuexpand apply --until scheduler");
      return;
    }
    const json& slurm_spec = at(want, "slurm");
    std::string wanted_gres;
    for (const auto& g : at(slurm_spec, "gres")) {
      if (g.is_string()) wanted_gres += (wanted_gres.empty() ? "" : ",") + g.get<std::string>();
    }
    const std::string gres = text(slurm, "gres");
    if (!wanted_gres.empty() && !gres.empty() && gres != wanted_gres) {
      warning("scheduler", "Slurm has GRES " + gres + ", the spec wants " + wanted_gres,
              "gpuexpand apply --until scheduler; scontrol show node " + node_.name + " | grep -i gres");
    }
    // A GRES count above the GPUs visible: jobs asking for all of them never start.
    const long long visible = number(at(facts_, "gpus"), "count", -1);
    const auto colon = gres.rfind(':');
    const bool gpu_error = !text(at(facts_, "gpus"), "error").empty();  // the gpu finding says it already
    if (!gpu_error && gres.rfind("gpu", 0) == 0 && colon != std::string::npos && visible >= 0 &&
        gres.find(',') == std::string::npos) {
      try {
        const long long offered = std::stoll(gres.substr(colon + 1));
        if (offered > visible) {
          error("scheduler", "Slurm offers " + std::to_string(offered) + " GPUs (GRES " + gres + "), " + std::to_string(visible) +
                                 " are visible",
                "jobs asking for " + std::to_string(offered) + " GPUs fail or hang: find the missing GPU (gpu findings above) "
                "or lower the GRES until it is back");
        }
      } catch (...) {
      }
    }
    std::set<std::string> features, wanted_features;
    for (const auto& f : at(slurm, "features")) {
      if (f.is_string()) features.insert(f.get<std::string>());
    }
    for (const auto& f : at(slurm_spec, "features")) {
      if (f.is_string()) wanted_features.insert(f.get<std::string>());
    }
    if (at(slurm, "features").is_array() && at(slurm_spec, "features").is_array() && features != wanted_features) {
      std::string have, wanted;
      for (const auto& f : features) have += (have.empty() ? "" : ",") + f;
      for (const auto& f : wanted_features) wanted += (wanted.empty() ? "" : ",") + f;
      warning("scheduler", "Slurm has features " + (have.empty() ? "(none)" : have) + ", the spec wants " + wanted,
              "jobs with --constraint miss this node: gpuexpand apply --until scheduler");
    }
  }

 private:
  const NodeSpec& node_;
  const json& facts_;
  const json& settings_;
};

// The mounts the storage test writes to: those whose spec sets a minimum.
json measured_mounts(const nlohmann::json& vars) {
  json mounts = json::array();
  for (const auto& m : acceptance_settings(vars).value("mounts", json::array())) {
    if (m.is_object() && m.value("min_mbps", 0L) > 0) mounts.push_back(m);
  }
  return mounts;
}

}  // namespace

std::string doctor_extras_script() {
  // The kernel log needs root (dmesg_restrict): without it, no Xid lines.
  // Only this boot's: lines stamped before PID 1 started are left out. On a
  // machine that is none (the driver loads after PID 1), but on a node that
  // is a container, the kernel and its log are the host's and outlive the
  // node's reboots, which must clear an Xid as a machine's reboot does.
  // /proc/1/stat's 22nd field (after the command in parentheses, the 20th)
  // is PID 1's start in clock ticks since the kernel booted, the clock of
  // dmesg's "[seconds.micros]" stamps.
  return "echo \"epoch $(date +%s)\"; "
         "stat=$(cat /proc/1/stat 2>/dev/null); set -- ${stat##*) }; "
         "dmesg 2>/dev/null | awk -v start=\"${20:-0}\" -v hz=\"$(getconf CLK_TCK 2>/dev/null || echo 100)\" "
         "'/NVRM: Xid/ { if ($0 ~ /^\\[ *[0-9]/) { t = $0; sub(/^\\[ */, \"\", t); if (t * hz < start) next } print \"xid \" $0 }' "
         "| tail -n 200; true";
}

DoctorExtras parse_doctor_extras(const std::string& output) {
  DoctorExtras extras;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("epoch ", 0) == 0) {
      try {
        extras.node_epoch = std::stoll(line.substr(6));
      } catch (...) {
      }
    } else if (line.rfind("xid ", 0) == 0) {
      extras.xid_lines.push_back(line.substr(4));
    }
  }
  return extras;
}

std::string doctor_storage_script(const nlohmann::json& vars) {
  json settings = acceptance_settings(vars);
  const json mounts = measured_mounts(vars);
  if (mounts.empty()) return "";
  settings["mounts"] = mounts;
  settings["checks"] = json::array({"storage"});
  return acceptance_script(settings, {}, AcceptanceMode::Verify);
}

Finding storage_hung_finding(const std::string& node, const nlohmann::json& vars) {
  std::string mounts;
  for (const auto& m : measured_mounts(vars)) mounts += (mounts.empty() ? "" : ", ") + m.value("mountpoint", "");
  return {node, "storage", true,
          "the write test of " + mounts + " did not finish in " + std::to_string(kDoctorStorageSeconds) +
              " s: a share that hangs",
          "mount | grep the share; the server (nfs: dmesg says 'server not responding'; sshfs: the ssh "
          "connection); umount -l and mount again once it answers"};
}

std::vector<Finding> storage_findings(const std::string& node, const std::string& output) {
  std::vector<Finding> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    // One line per mount: parsed one by one, not merged into one check.
    for (const auto& r : parse_acceptance_output(line)) {
      if (r.check != "storage" || r.status != CheckStatus::Fail) continue;
      if (r.detail.ends_with(" is not mounted")) continue;
      const bool slow = r.detail.find(" below the minimum ") != std::string::npos;
      out.push_back({node, "storage", true, r.detail,
                     slow ? "the server's load and the path to it (iperf3 to the server; ethtool -S for drops); the "
                            "mount options (nfs: rsize/wsize 1048576, nconnect; lustre: lfs getstripe); the spec's "
                            "storage[].min_throughput_mbps"
                          : "mount | grep the mountpoint (mounted ro?); the export's options (root_squash makes root "
                            "nobody); dmesg for I/O errors"});
    }
  }
  return out;
}

std::string doctor_path_mtu_script(const nlohmann::json& vars, const std::map<std::string, std::string>& peers) {
  // A small ping first: a peer that does not answer at all says nothing
  // about the MTU. Then the interface's MTU, fragmentation forbidden.
  std::string s;
  for (const auto& i : acceptance_settings(vars).value("interfaces", json::array())) {
    const std::string name = i.is_object() ? i.value("name", "") : "";
    const auto peer = peers.find(name);
    if (peer == peers.end()) continue;
    const long long mtu = number(i, "mtu", 1500);
    const std::string words = shell_quote(name) + " " + shell_quote(peer->second) + " " + std::to_string(mtu);
    const std::string on = " -W 2 -I " + shell_quote(name) + " " + shell_quote(peer->second) + " >/dev/null 2>&1";
    s += "if ! command -v ping >/dev/null 2>&1; then echo \"@@mtu " + words + " noping\"\n";
    s += "elif ! ping -c 1" + on + "; then echo \"@@mtu " + words + " unreachable\"\n";
    s += "elif ping -M do -s " + std::to_string(mtu - 28) + " -c 2" + on + "; then echo \"@@mtu " + words + " ok\"\n";
    s += "else echo \"@@mtu " + words + " fragmented\"; fi\n";
  }
  return s.empty() ? "" : kRemoteScriptEnvironment + s;
}

std::vector<Finding> path_mtu_findings(const std::string& node, const std::string& output) {
  std::vector<Finding> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string marker, name, peer, mtu, state;
    if (!(words >> marker >> name >> peer >> mtu >> state) || marker != "@@mtu") continue;
    long long bytes = 0;
    try {
      bytes = std::stoll(mtu);
    } catch (...) {
      continue;
    }
    const std::string size = std::to_string(bytes - 28);
    if (state == "fragmented") {
      out.push_back({node, "network", true,
                     name + ": " + mtu + "-byte packets do not reach " + peer + " unfragmented (ping -M do -s " + size +
                         "), small ones do: the path does not carry the MTU",
                     "every hop's MTU: the switch ports and the peer's interface (ip -br link on both); lower "
                     "network.mtu if the fabric cannot carry it"});
    } else if (state == "unreachable") {
      out.push_back({node, "network", false,
                     name + ": " + peer + " does not answer a small ping: the MTU along the path is not measured",
                     "ip -br addr on both nodes; is the peer up on this network (its doctor line)?"});
    } else if (state == "noping") {
      out.push_back({node, "network", false, "ping is not installed: the MTU along the path is not measured",
                     "apt-get install iputils-ping (the lab spec's os.packages has it)"});
    }
  }
  return out;
}

Finding connection_finding(const NodeSpec& node, FailureKind failure, const std::string& message, const SshSettings& ssh) {
  const std::string address = node.address.empty() ? node.name : node.address;
  std::string next;
  switch (failure) {
    case FailureKind::Unresolvable:
      next = "getent hosts " + address + " on this machine; DNS, or give the node an address in the spec";
      break;
    case FailureKind::Refused:
      // Refused also stands for "no route to host": a node switched off on the same network.
      next = "is the node up? ping " + address + "; ipmitool chassis power status on its BMC; then: is sshd running on port " +
             std::to_string(ssh.port) + ", a firewall?";
      break;
    case FailureKind::ConnectTimeout:
      next = "is the node up? ping " + address + "; ipmitool chassis power status on its BMC; the management switch port";
      break;
    case FailureKind::HostKeyUnknown:
      next = "verify its key out of band (the console), then ssh-keyscan -t ed25519 " + address + " >> " + ssh.known_hosts +
             " or run once with --accept-new-host-keys";
      break;
    case FailureKind::HostKeyChanged:
      next = "reinstalled? verify the new key out of band, then ssh-keygen -R " + address + " -f " + ssh.known_hosts;
      break;
    case FailureKind::AuthFailed:
      next = "is the public key of " + (ssh.identity_file.empty() ? std::string("your key") : ssh.identity_file) +
             " in ~" + ssh.user + "/.ssh/authorized_keys on the node?";
      break;
    case FailureKind::SudoPassword:
      next = "give " + ssh.user + " NOPASSWD sudo on the node (docs/security.md lists the line)";
      break;
    default:
      next = "ssh " + ssh.user + "@" + address + " true; gpuexpand -vv facts SPEC --limit " + node.name;
  }
  return {node.name, "connection", true, message, next};
}

std::vector<Finding> diagnose_node(const NodeSpec& node, const json& facts, const DoctorExtras& extras,
                                   long long controller_epoch) {
  NodeDoctor doctor(node, facts);
  doctor.disk();
  doctor.clock(extras, controller_epoch);
  doctor.gpu(extras);
  doctor.network();
  doctor.storage();
  doctor.scheduler();
  return doctor.findings;
}

std::vector<Finding> diagnose_local(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                                    const std::string& state_path) {
  std::vector<Finding> findings;
  const SshSettings& ssh = spec.ssh;
  if (!ssh.identity_file.empty() && !read_local_file(ssh.identity_file)) {
    findings.push_back({"", "local", true, "cannot read the SSH key " + ssh.identity_file,
                        "ls -l " + expand_home_path(ssh.identity_file) + " (the key, readable by you)"});
  }
  auto known = KnownHosts::load(expand_home_path(ssh.known_hosts));
  if (!known) {
    findings.push_back({"", "local", true, "cannot read " + ssh.known_hosts, known.error().message});
  } else {
    std::vector<std::string> missing;
    for (const auto* node : nodes) {
      const std::string address = node->address.empty() ? node->name : node->address;
      if (known->entries_for(address, ssh.port).empty()) missing.push_back(node->name);
    }
    if (!missing.empty()) {
      std::string names;
      for (size_t i = 0; i < missing.size() && i < 8; ++i) names += (i ? ", " : "") + missing[i];
      if (missing.size() > 8) names += ", …";
      findings.push_back({"", "local", false,
                          std::to_string(missing.size()) + " node(s) not in " + ssh.known_hosts + ": " + names,
                          "first contact: verify their keys out of band, then run with --accept-new-host-keys"});
    }
  }
  for (const auto& [path, digest] : spec.local_file_digests) {
    if (digest.empty()) {
      findings.push_back({"", "local", true, "cannot read " + path + " (named in the spec)", "ls -l " + expand_home_path(path)});
    }
  }
  namespace fs = std::filesystem;
  fs::path dir = fs::path(state_path).parent_path();
  if (dir.empty()) dir = ".";
  while (!dir.empty() && !fs::exists(dir) && dir != dir.parent_path()) dir = dir.parent_path();
  // The nearest folder that exists must be one, and writable (as root
  // every folder is writable: a file in the way is what stops the store).
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0) {
    findings.push_back({"", "local", true, "cannot write the state store's folder " + dir.string(),
                        "apply records runs and locks in " + state_path + ": --state PATH elsewhere, or fix its permissions"});
  }
  return findings;
}

}  // namespace gpuexpand
