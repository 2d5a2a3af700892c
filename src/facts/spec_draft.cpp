// draft_spec: facts of one node in service -> a commented spec whose
// defaults reproduce it. Every value is written as a JSON string or number
// (JSON scalars are YAML), so nothing read from the node can change the
// YAML's structure. What cannot be inferred is a TODO comment and a line of
// SpecDraft::todo; the draft still validates.

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "gpuexpand/facts/spec_draft.hpp"
#include "gpuexpand/steps/package_source.hpp"
#include "gpuexpand/util/base64.hpp"
#include "gpuexpand/util/openpgp.hpp"
#include "json_read.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string q(const std::string& text) {  // a YAML (JSON) double-quoted scalar; bad UTF-8 replaced, not thrown
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

using facts_json::at;

std::string installed_version(const json& facts, const std::string& package) {
  const json& v = at(at(facts, "packages"), package);
  return v.is_string() ? v.get<std::string>() : std::string();
}

bool installed(const json& facts, const std::string& package) { return !installed_version(facts, package).empty(); }

// Installed packages whose name starts with `prefix` followed by a digit ("cuda-drivers-" -> "cuda-drivers-550").
std::vector<std::string> installed_with_prefix(const json& facts, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& [name, version] : at(facts, "packages").items()) {
    if (version.is_string() && name.size() > prefix.size() && name.rfind(prefix, 0) == 0 &&
        std::isdigit(static_cast<unsigned char>(name[prefix.size()]))) {
      names.push_back(name);
    }
  }
  return names;
}

// A small file's bytes from the facts: its text, or its base64 when it is binary.
std::string file_content(const json& facts, const std::string& path, bool* found = nullptr) {
  const json& f = at(at(facts, "files"), path);
  if (found) *found = false;
  if (!f.is_object()) return "";
  if (f.contains("content") && f["content"].is_string()) {
    if (found) *found = true;
    return f["content"].get<std::string>();
  }
  if (f.contains("content_base64") && f["content_base64"].is_string()) {
    if (auto bytes = base64_decode(f["content_base64"].get<std::string>())) {
      if (found) *found = true;
      return *bytes;
    }
  }
  return "";
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + q(items[i]);
  return out + "]";
}

class Writer {
 public:
  Writer(const json& facts, const DraftSource& source) : facts_(facts), source_(source) {}

  SpecDraft write() {
    header();
    out_ << "apiVersion: gpuexpand/v1\n\ncluster:\n  name: " << q(source_.cluster) << "\n";
    ssh();
    out_ << "\ndefaults:\n";
    os();
    gpu();
    network();
    storage();
    monitoring();
    scheduler();
    nodes();
    draft_.yaml = out_.str();
    if (!draft_.todo.empty()) {
      std::string summary = "#\n# To decide before use (also marked TODO below):\n";
      for (const auto& t : draft_.todo) summary += "#   - " + t + "\n";
      const auto body = draft_.yaml.find("apiVersion:");
      draft_.yaml.insert(body, summary + "\n");
    }
    return draft_;
  }

 private:
  void todo(const std::string& what, int indent = 4) {
    draft_.todo.push_back(what);
    out_ << std::string(static_cast<size_t>(indent), ' ') << "# TODO: " << what << "\n";
  }
  void cover(const std::string& phase) { draft_.covered_phases.push_back(phase); }

  void header() {
    out_ << "# Drafted by `gpuexpand init --from " << source_.address << "` at " << source_.drafted_at << "\n"
         << "# from the facts of " << source_.node << ", a node in service. Its defaults reproduce that node:\n"
         << "# planning this spec against it changes nothing in the phases the draft covers.\n"
         << "# Add the new nodes under `nodes:` (and " << source_.node << " under cluster.reference to compare\n"
         << "# them with it: docs/consistency.md), then `gpuexpand validate` and `gpuexpand plan`.\n";
  }

  void ssh() {
    out_ << "\nssh:\n  user: " << q(source_.ssh_user) << "\n";
    if (source_.ssh_port != 22) out_ << "  port: " << source_.ssh_port << "\n";
    if (!source_.identity_file.empty()) out_ << "  identity_file: " << q(source_.identity_file) << "\n";
    if (!source_.known_hosts.empty()) out_ << "  known_hosts: " << q(source_.known_hosts) << "\n";
  }

  void os() {
    out_ << "\n  # Phase os-init.\n  os:\n";
    const auto before = out_.tellp();
    repositories();
    const std::string tz = facts_json::text(facts_, "timezone");
    if (!tz.empty()) out_ << "    timezone: " << q(tz) << "\n";
    const auto servers = ntp_servers();
    if (!servers.empty()) {
      out_ << "    ntp_servers: " << list(servers) << "\n";
    } else {
      todo("no time servers found on " + source_.node + " (chrony.conf or chronyc sources): set os.ntp_servers");
    }
    sysctl();
    std::vector<std::string> packages;
    for (const auto& name : draft_base_tools()) {
      if (const auto v = installed_version(facts_, name); !v.empty()) packages.push_back(name + "=" + v);
    }
    if (!packages.empty()) {
      out_ << "    # Base tools installed there, at its versions (drop a pin to take the newest).\n"
           << "    packages: " << list(packages) << "\n";
    }
    // os: must not be empty (comments alone leave it null).
    bool any_value = false;
    std::istringstream written(out_.str().substr(static_cast<size_t>(before)));
    for (std::string line; std::getline(written, line);) {
      const auto first = line.find_first_not_of(' ');
      any_value = any_value || (first != std::string::npos && line[first] != '#');
    }
    if (!any_value) out_ << "    kernel_modules: []\n";
    cover("os-init");
  }

  std::vector<std::string> ntp_servers() {
    std::vector<std::string> servers;
    bool found = false;
    const std::string conf = file_content(facts_, "/etc/chrony/chrony.conf", &found);
    std::istringstream in(conf);
    for (std::string line; std::getline(in, line);) {
      const auto w = words(line);
      if (w.size() >= 2 && (w[0] == "server" || w[0] == "pool")) servers.push_back(w[1]);
    }
    if (!servers.empty()) return servers;
    for (const auto& s : at(at(facts_, "time_sync"), "servers")) {
      if (s.is_string()) servers.push_back(s.get<std::string>());
    }
    return servers;
  }

  void sysctl() {
    const json& live = at(facts_, "sysctl");
    if (!live.is_object() || live.empty()) return;
    out_ << "    # Set in /etc/sysctl.conf or /etc/sysctl.d/*.conf there; values as running.\n    sysctl:\n";
    for (const auto& [key, value] : live.items()) {
      if (!value.is_string()) continue;  // the key does not exist on this kernel
      std::string v = value.get<std::string>();
      std::replace(v.begin(), v.end(), '\t', ' ');
      out_ << "      " << q(key) << ": " << q(v) << "\n";
    }
  }

  void repositories() {
    const json& files = at(facts_, "files");
    std::vector<std::string> entries;
    for (const auto& [path, f] : files.items()) {
      const std::string prefix = std::string("/etc/apt/sources.list.d/") + kPackageSourcePrefix;
      if (path.rfind(prefix, 0) != 0 || path.size() < 9 || path.substr(path.size() - 8) != ".sources") continue;
      const std::string name = path.substr(prefix.size(), path.size() - prefix.size() - 8);
      std::string entry = repository(name, file_content(facts_, path));
      if (!entry.empty()) entries.push_back(entry);
    }
    if (entries.empty()) return;
    out_ << "    # gpuexpand's package sources there; each signing key copied from the node into "
         << source_.key_dir << "/.\n    repositories:\n";
    for (const auto& e : entries) out_ << e;
  }

  // One os.repositories entry from the deb822 file gpuexpand wrote.
  std::string repository(const std::string& name, const std::string& sources) {
    std::map<std::string, std::string> fields;
    std::istringstream in(sources);
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      if (line.empty() || line[0] == '#' || colon == std::string::npos) continue;
      fields[line.substr(0, colon)] = line.substr(colon + 1);
    }
    const auto uris = words(fields["URIs"]);
    if (uris.empty()) return "";
    std::ostringstream e;
    e << "      - name: " << q(name) << "\n        uris: " << list(uris) << "\n";
    if (const auto suites = words(fields["Suites"]); !suites.empty()) e << "        suites: " << list(suites) << "\n";
    if (const auto c = words(fields["Components"]); !c.empty()) e << "        components: " << list(c) << "\n";
    if (const auto a = words(fields["Architectures"]); !a.empty()) e << "        architectures: " << list(a) << "\n";
    if (words(fields["Trusted"]) == std::vector<std::string>{"yes"}) {
      e << "        insecure: true\n";
    } else {
      const std::string keyring_path = package_source_files(name, PackageManager::Apt).keyring;
      bool found = false;
      const std::string bytes = file_content(facts_, keyring_path, &found);
      auto keyring = read_openpgp_keyring(bytes);
      if (found && keyring && !keyring->fingerprints.empty()) {
        const std::string file = name + ".gpg";
        draft_.key_files[file] = bytes;
        e << "        key: " << q(source_.key_dir + "/" + file) << "\n"
          << "        fingerprint: " << q(keyring->fingerprints.front()) << "\n";
        draft_.todo.push_back("repository " + name + ": its key was copied from " + source_.node +
                              "; check fingerprint " + keyring->fingerprints.front() + " with the repository's owner");
        e << "        # TODO: check this fingerprint with the repository's owner (the key came from "
          << source_.node << ")\n";
      } else {
        // An entry without a key does not validate: left out, and named in the TODO list.
        draft_.todo.push_back("repository " + name + " (" + uris.front() + "): no readable key at " + keyring_path +
                              " on the node; add it to os.repositories with key: and fingerprint:");
        return "";
      }
    }
    const std::string pref = file_content(facts_, package_source_files(name, PackageManager::Apt).preferences);
    std::istringstream pin(pref);
    for (std::string line; std::getline(pin, line);) {
      if (line.rfind("Pin-Priority:", 0) == 0) {
        const auto w = words(line.substr(13));
        if (!w.empty() && std::all_of(w[0].begin(), w[0].end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '-'; })) {
          e << "        pin_priority: " << w[0] << "\n";
        }
        break;
      }
    }
    return e.str();
  }

  void gpu() {
    const json& gpus = at(facts_, "gpus");
    const json& count = at(gpus, "count");
    if (!count.is_number_integer() || count.get<int>() == 0) {
      out_ << "\n  # Phase gpu-driver: no GPU seen on " << source_.node;
      const std::string error = facts_json::text(gpus, "error");
      out_ << (error.empty() ? "" : " (" + error + ")") << "; nothing drafted.\n";
      return;
    }
    out_ << "\n  # Phase gpu-driver.\n  gpu:\n";
    const std::string driver = facts_json::text(gpus, "driver_version");
    if (!driver.empty()) out_ << "    driver_version: " << q(driver) << "\n";
    const auto branch_drivers = installed_with_prefix(facts_, "nvidia-driver-");
    const bool cuda_drivers = !installed_with_prefix(facts_, "cuda-drivers-").empty();
    if (cuda_drivers) out_ << "    source: " << (branch_drivers.empty() ? "nvidia-cuda-repo-debian" : "nvidia-cuda-repo") << "\n";
    if (const auto toolkits = installed_with_prefix(facts_, "cuda-toolkit-"); cuda_drivers && toolkits.size() == 1) {
      std::string v = toolkits.front().substr(13);  // cuda-toolkit-12-4 -> 12.4
      std::replace(v.begin(), v.end(), '-', '.');
      out_ << "    cuda_version: " << q(v) << "\n";
    }
    if (installed(facts_, "nvidia-fabricmanager") || !installed_with_prefix(facts_, "nvidia-fabricmanager-").empty()) {
      out_ << "    fabric_manager: true\n";
    }
    if (installed(facts_, "nvidia-container-toolkit")) out_ << "    container_toolkit: true\n";
    if (const json& p = at(gpus, "persistence_mode"); p.is_boolean()) {
      out_ << "    persistence_mode: " << (p.get<bool>() ? "true" : "false") << "\n";
    }
    const std::string model = facts_json::text(gpus, "model");
    if (!model.empty()) out_ << "    expected_model: " << q(model) << "\n";
    out_ << "    expected_count: " << count.get<int>() << "\n";
    cover("gpu-driver");
  }

  static bool virtual_interface(const std::string& name) {
    for (const char* prefix : {"lo", "docker", "veth", "br-", "virbr", "cni", "flannel", "cali", "tun", "tap", "vxlan"}) {
      if (name.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }

  bool management(const json& interface) const {
    for (const auto& a : at(interface, "addresses")) {
      if (a.is_string() && a.get<std::string>().substr(0, a.get<std::string>().find('/')) == source_.address) return true;
    }
    return false;
  }

  void network() {
    std::vector<const json*> compute;
    for (const auto& i : at(at(facts_, "network"), "interfaces")) {
      const std::string name = facts_json::text(i, "name");
      if (name.empty() || virtual_interface(name) || management(i) || facts_json::text(i, "state") != "up") continue;
      compute.push_back(&i);
    }
    std::string kind = "none";
    for (const auto& port : at(at(facts_, "network"), "rdma")) {
      const std::string layer = facts_json::text(port, "link_layer");
      if (layer == "infiniband") kind = "infiniband";
      if (layer == "ethernet" && kind == "none") kind = "roce";
    }
    out_ << "\n  # Phase rdma: the interfaces that are up besides the one SSH reached (" << source_.address << ").\n"
         << "  network:\n";
    std::set<int> mtus;
    for (const auto* i : compute) {
      if (at(*i, "mtu").is_number_integer()) mtus.insert(at(*i, "mtu").get<int>());
    }
    if (mtus.size() == 1) out_ << "    mtu: " << *mtus.begin() << "\n";
    if (!compute.empty()) {
      out_ << "    compute_interfaces:\n";
      for (const auto* i : compute) {
        out_ << "      - name: " << q(facts_json::text(*i, "name")) << "\n";
        if (mtus.size() > 1 && at(*i, "mtu").is_number_integer()) out_ << "        mtu: " << at(*i, "mtu").get<int>() << "\n";
        for (const auto& a : at(*i, "addresses")) {
          if (a.is_string() && a.get<std::string>().find(':') == std::string::npos) {
            compute_addresses_[facts_json::text(*i, "name")] = a.get<std::string>();
            break;
          }
        }
      }
    }
    out_ << "    rdma:\n      kind: " << kind << "\n";
    cover("rdma");
  }

  void storage() {
    static const std::map<std::string, std::string> kTypes = {
        {"nfs", "nfs"}, {"lustre", "lustre"}, {"cephfs", "cephfs"}, {"fuse.sshfs", "sshfs"}};
    std::ostringstream entries;
    std::set<std::string> names;
    for (const auto& e : at(facts_, "fstab")) {
      const std::string fstype = facts_json::text(e, "fstype"), target = facts_json::text(e, "target"), source = facts_json::text(e, "source");
      const auto type = kTypes.find(fstype);
      if (type == kTypes.end()) {
        if (fstype == "nfs4" || fstype == "ceph" || fstype == "sshfs") {
          draft_.todo.push_back("fstab mounts " + target + " as " + fstype +
                                ", which gpuexpand does not write (nfs, lustre, cephfs, fuse.sshfs): add it by hand");
        }
        continue;
      }
      if (target.empty() || target[0] != '/' || source.empty() || source.find_first_of(" \t") != std::string::npos) continue;
      std::string name;
      for (char c : target.substr(target.find_last_of('/') + 1)) {
        const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        name += std::isalnum(static_cast<unsigned char>(l)) || l == '-' || l == '_' ? l : '-';
      }
      if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) name = "mount" + name;
      while (!names.insert(name).second) name += "-2";
      entries << "    - name: " << q(name) << "\n      type: " << type->second << "\n      source: " << q(source)
              << "\n      mountpoint: " << q(target) << "\n";
      const std::string options = facts_json::text(e, "options");
      if (!options.empty() && options != "defaults") {
        std::vector<std::string> list_items;
        std::istringstream in(options);
        for (std::string o; std::getline(in, o, ',');) list_items.push_back(o);
        entries << "      options: " << list(list_items) << "\n";
      }
    }
    if (entries.str().empty()) return;
    out_ << "\n  # Phase storage: the network filesystems in fstab there.\n  storage:\n" << entries.str();
    cover("storage");
  }

  void monitoring() {
    const bool node_exporter = installed(facts_, "prometheus-node-exporter");
    const bool gpu_exporter = installed(facts_, "dcgm-exporter");
    out_ << "\n  # Phase monitoring: the exporters installed there (default ports; set port: if yours differ).\n"
         << "  monitoring:\n    node_exporter:\n      enabled: " << (node_exporter ? "true" : "false") << "\n"
         << "    gpu_exporter:\n      enabled: " << (gpu_exporter ? "true" : "false") << "\n";
    cover("monitoring");
  }

  // slurmd's command line as gpuexpand's drop-in (or /etc/default/slurmd) gives it:
  // --conf-server, -Z (dynamic) or -N (static), --conf "Gres=… Feature=…".
  struct SlurmdLine {
    std::string conf_server, mode, features, gres;
  };
  SlurmdLine slurmd_line() const {
    SlurmdLine line;
    const std::string text = file_content(facts_, "/etc/systemd/system/slurmd.service.d/gpuexpand.conf") + "\n" +
                             file_content(facts_, "/etc/default/slurmd");
    const auto w = words(text);
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i] == "-Z") line.mode = "dynamic";
      if (w[i] == "-N") line.mode = "static";
      if (w[i] == "--conf-server" && i + 1 < w.size()) line.conf_server = w[i + 1];
      if (w[i].rfind("--conf-server=", 0) == 0) line.conf_server = w[i].substr(14);
    }
    line.conf_server = line.conf_server.substr(0, line.conf_server.find(':'));
    line.conf_server.erase(std::remove(line.conf_server.begin(), line.conf_server.end(), '"'), line.conf_server.end());
    if (const auto conf = text.find("--conf \""); conf != std::string::npos) {
      const std::string fields = text.substr(conf + 8, text.find('"', conf + 8) - conf - 8);
      for (const auto& f : words(fields)) {
        if (f.rfind("Feature=", 0) == 0) line.features = f.substr(8);
        if (f.rfind("Gres=", 0) == 0) line.gres = f.substr(5);
      }
    }
    return line;
  }

  static std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, separator);) {
      if (!item.empty()) out.push_back(item);
    }
    return out;
  }

  void scheduler() {
    out_ << "\n  # Phase scheduler.\n  scheduler:\n    kind: none\n";
    if (!installed(facts_, "slurmd")) return;
    const SlurmdLine line = slurmd_line();
    todo("slurmd " + installed_version(facts_, "slurmd") + " runs on " + source_.node +
             (line.conf_server.empty() ? "" : " (configuration from " + line.conf_server + ")") +
             ": set kind: slurm and complete the slurm block (controller's name, partition, munge_key_file)",
         4);
    const int gpus = at(at(facts_, "gpus"), "count").is_number_integer() ? at(at(facts_, "gpus"), "count").get<int>() : 0;
    const auto gres = line.gres.empty() ? std::vector<std::string>{"gpu:" + std::to_string(gpus)} : split(line.gres, ',');
    out_ << "    # slurm:\n    #   controller: CONTROLLER   # its host name\n";
    if (!line.conf_server.empty()) out_ << "    #   controller_address: " << q(line.conf_server) << "\n";
    out_ << "    #   mode: " << (line.mode.empty() ? "dynamic" : line.mode) << "\n    #   partition: PARTITION\n"
         << "    #   features: " << list(split(line.features, ',')) << "\n    #   gres: " << list(gres) << "\n"
         << "    #   munge_key_file: PATH   # the cluster's key, from where you keep it\n";
  }

  void nodes() {
    out_ << "\n# The node the draft came from. Add the new nodes as more entries (host lists work:\n"
         << "# hosts: gpu-[17-32], addresses: 10.0.0.[17-32]).\nnodes:\n"
         << "  - hosts: " << q(source_.node) << "\n    addresses: " << q(source_.address) << "\n";
    if (!compute_addresses_.empty()) {
      out_ << "    compute_addresses:\n";
      for (const auto& [name, address] : compute_addresses_) out_ << "      " << q(name) << ": " << q(address) << "\n";
    }
  }

  const json& facts_;
  const DraftSource& source_;
  std::ostringstream out_;
  SpecDraft draft_;
  std::map<std::string, std::string> compute_addresses_;
};

}  // namespace

SpecDraft draft_spec(const json& facts, const DraftSource& source) { return Writer(facts, source).write(); }

}  // namespace gpuexpand
