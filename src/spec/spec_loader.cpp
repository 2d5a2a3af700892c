#include "gpuexpand/spec/spec_loader.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <regex>
#include <map>
#include <set>
#include <tuple>
#include <sstream>
#include <functional>
#include <unordered_map>

#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/spec/merge.hpp"
#include "gpuexpand/spec/local_files.hpp"
#include "gpuexpand/util/local_file.hpp"
#include "gpuexpand/util/spellcheck.hpp"
#include "compute_addresses.hpp"
#include "derived_settings.hpp"
#include "control_characters.hpp"
#include "inline_secrets.hpp"
#include "gpu_packages.hpp"
#include "repositories.hpp"

namespace gpuexpand {
namespace {

// Keys of a node entry that say which nodes it means; everything else in
// the entry is a settings override.
const char* const kEntryKeys[] = {"hosts", "addresses", "name", "address", "compute_addresses", "rack", "groups"};

const nlohmann::json* member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<std::string> string_member(const nlohmann::json& object, const char* key) {
  const nlohmann::json* v = member(object, key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::vector<std::string> keys_of(const nlohmann::json* object) {
  std::vector<std::string> keys;
  if (object && object->is_object()) {
    for (const auto& [k, _] : object->items()) keys.push_back(k);
  }
  return keys;
}

nlohmann::json settings_layer(const nlohmann::json& object, bool is_entry) {
  nlohmann::json layer = nlohmann::json::object();
  if (!object.is_object()) return layer;
  for (const auto& [key, value] : object.items()) {
    bool skip = key == "description";
    if (is_entry) {
      for (const char* entry_key : kEntryKeys) skip = skip || key == entry_key;
    }
    if (!skip) layer[key] = value;
  }
  return layer;
}

// Builds nodes from a structurally checked document. Defensive about types
// anyway: it runs even when the schema found errors, so that one pass
// reports everything wrong with the file.
class SpecBuilder {
 public:
  SpecBuilder(const YamlDocument& doc, std::vector<Diagnostic>& diagnostics)
      : doc_(doc),
        root_(doc.root),
        diagnostics_(diagnostics),
        compute_addresses_([this](const std::string& pointer, const std::string& message, bool at_key) {
          error(pointer, message, at_key);
        }) {}

  std::unordered_map<std::string, std::string> local_digests_;  // path -> SHA-256, "" when unreadable

 public:
  ClusterSpec build() {
    ClusterSpec spec;
    spec.file = doc_.file;
    spec.document = root_;
    spec.api_version = string_member(root_, "apiVersion").value_or("");
    if (const auto* cluster = member(root_, "cluster")) {
      spec.cluster_name = string_member(*cluster, "name").value_or("");
    }
    read_ssh(spec.ssh);
    read_rollout(spec.rollout);
    const nlohmann::json* entries = member(root_, "nodes");
    if (entries && entries->is_array()) {
      for (size_t i = 0; i < entries->size(); ++i) expand_entry((*entries)[i], i, spec.nodes);
    }
    std::map<std::string, std::pair<size_t, int>> management;
    for (const auto& [address, seen] : seen_addresses_) management.emplace(address, std::make_pair(seen.entry, seen.line));
    compute_addresses_.check_against_management(management);
    read_reference(spec);
    spec.local_file_digests.insert(local_digests_.begin(), local_digests_.end());
    return spec;
  }

 private:
  void error(const std::string& pointer, const std::string& message, bool at_key = false) {
    diagnostics_.push_back({at_key ? doc_.key_location(pointer) : doc_.value_location(pointer), message});
  }

  // A relative path in a spec names a file beside the spec, wherever
  // gpuexpand runs from (as the default state store does): the spec and
  // the key files it ships with are one directory.
  std::string beside_spec(const std::string& path) const {
    if (path.empty() || path[0] == '/' || path.rfind("~/", 0) == 0 || path == "~") return path;
    const auto slash = doc_.file.rfind('/');
    if (slash == std::string::npos) return path;
    return doc_.file.substr(0, slash + 1) + path;
  }

  void anchor_local_paths(nlohmann::json& settings) const {
    if (!settings.is_object()) return;
    for (const auto& s : secret_file_settings()) {
      auto top = settings.find(s.section);
      if (top == settings.end() || !top->is_object()) continue;
      auto section = top->find(s.subsection);
      if (section == top->end() || !section->is_object()) continue;
      auto path = section->find(s.key);
      if (path != section->end() && path->is_string()) *path = beside_spec(path->get<std::string>());
    }
    auto os = settings.find("os");
    if (os == settings.end() || !os->is_object()) return;
    auto repositories = os->find("repositories");
    if (repositories == os->end() || !repositories->is_array()) return;
    for (auto& source : *repositories) {
      if (source.is_object() && source.contains("key") && source["key"].is_string()) {
        source["key"] = beside_spec(source["key"].get<std::string>());
      }
    }
  }

  void read_ssh(SshSettings& ssh) {
    const nlohmann::json* s = member(root_, "ssh");
    if (!s || !s->is_object()) return;
    auto str = [&](const char* key, std::string& out) {
      if (auto v = string_member(*s, key)) out = *v;
    };
    auto num = [&](const char* key, int& out) {
      if (const auto* v = member(*s, key); v && v->is_number_integer()) out = v->get<int>();
    };
    str("user", ssh.user);
    num("port", ssh.port);
    ssh.user_set = member(*s, "user") != nullptr;
    ssh.port_set = member(*s, "port") != nullptr;
    str("identity_file", ssh.identity_file);
    str("passphrase_env", ssh.passphrase_env);
    str("known_hosts", ssh.known_hosts);
    str("become", ssh.become);
    num("connect_timeout", ssh.connect_timeout_s);
    num("command_timeout", ssh.command_timeout_s);
    num("keepalive_interval", ssh.keepalive_interval_s);
    str("bastion", ssh.bastion);
    num("parallel", ssh.parallel);
    str("config_file", ssh.config_file);
    using PathSetting = std::pair<const char*, std::string*>;
    for (auto [key, path] : {PathSetting{"identity_file", &ssh.identity_file}, PathSetting{"known_hosts", &ssh.known_hosts},
                             PathSetting{"config_file", &ssh.config_file}}) {
      if (member(*s, key)) *path = beside_spec(*path);
    }
  }

  void read_rollout(RolloutSettings& rollout) {
    const nlohmann::json* r = member(root_, "rollout");
    if (!r || !r->is_object()) return;
    for (const char* key : {"batch", "max_fail"}) {
      const nlohmann::json* v = member(*r, key);
      if (!v) continue;
      auto parsed = parse_count_or_percent(*v);
      if (!parsed) {
        continue;  // the schema already reported the malformed value
      }
      if (std::string(key) == "batch" && parsed->value == 0) {
        error("/rollout/batch", "rollout.batch: 0 would never start a node; use at least 1");
        continue;
      }
      (std::string(key) == "batch" ? rollout.batch : rollout.max_fail) = parsed;
    }
  }

  // Resolves a rack or group name against its section, with a suggestion.
  const nlohmann::json* find_layer(const char* section, const std::string& name, const std::string& pointer,
                                   const char* what, bool must_exist) {
    const nlohmann::json* all = member(root_, section);
    if (all && all->is_object() && all->contains(name)) return &(*all)[name];
    if (!must_exist) return nullptr;
    std::string message = std::string("unknown ") + what + " '" + name + "'";
    if (auto suggestion = closest_match(name, keys_of(all))) {
      message += " (did you mean '" + *suggestion + "'?)";
    } else if (!all) {
      message += std::string(": the spec has no '") + section + "' section";
    }
    error(pointer, message);
    return nullptr;
  }

  // cluster.reference: entries shaped as node entries, without settings of
  // their own (the schema allows none), numbered after every node entry so
  // a name in both lists is reported as a duplicate with its place.
  void read_reference(ClusterSpec& spec) {
    const nlohmann::json* cluster = member(root_, "cluster");
    const nlohmann::json* reference = cluster ? member(*cluster, "reference") : nullptr;
    if (!reference || !reference->is_object()) return;
    if (const auto* entries = member(*reference, "nodes"); entries && entries->is_array()) {
      for (size_t i = 0; i < entries->size(); ++i) {
        expand_entry((*entries)[i], kReferenceEntryBase + i, spec.reference_nodes);
      }
    }
    if (const auto* facts = member(*reference, "facts"); facts && facts->is_object()) {
      for (auto [key, out] : {std::pair{"add", &spec.reference_facts_add}, std::pair{"drop", &spec.reference_facts_drop}}) {
        if (const auto* list = member(*facts, key); list && list->is_array()) {
          for (const auto& item : *list) {
            if (item.is_string()) out->push_back(item.get<std::string>());
          }
        }
      }
    }
  }

  static constexpr size_t kReferenceEntryBase = size_t{1} << 40;
  static bool is_reference_entry(size_t index) { return index >= kReferenceEntryBase; }
  static std::string entry_pointer(size_t index) {
    return is_reference_entry(index) ? "/cluster/reference/nodes/" + std::to_string(index - kReferenceEntryBase)
                                     : "/nodes/" + std::to_string(index);
  }

  void expand_entry(const nlohmann::json& entry, size_t index, std::vector<NodeSpec>& nodes) {
    const std::string pointer = entry_pointer(index);
    if (!entry.is_object()) return;  // the schema reported it
    const std::string label = human_path(pointer);

    auto hosts = string_member(entry, "hosts");
    auto addresses = string_member(entry, "addresses");
    auto name = string_member(entry, "name");
    auto address = string_member(entry, "address");
    if (hosts && name) {
      error(pointer + "/name", label + ": give either 'hosts' (a host list) or 'name' (one node), not both", true);
      return;
    }
    if (!hosts && !name) {
      if (!member(entry, "hosts") && !member(entry, "name")) {
        error(pointer, label + ": missing 'hosts' (a host list) or 'name' (one node)");
      }
      return;
    }
    if (hosts && address) {
      error(pointer + "/address", label + ": 'address' is for one node; with 'hosts' use 'addresses'", true);
      return;
    }
    if (name && addresses) {
      error(pointer + "/addresses", label + ": 'addresses' pairs with 'hosts'; for one node use 'address'", true);
      return;
    }

    // Rack and groups: rack names need a declaration only when the spec
    // has a racks section (then an undeclared one is a typo); groups must
    // always be declared, a node in a group that does not exist is a typo.
    std::string rack = string_member(entry, "rack").value_or("");
    const nlohmann::json* rack_layer = nullptr;
    if (!rack.empty()) {
      rack_layer = find_layer("racks", rack, pointer + "/rack", "rack", member(root_, "racks") != nullptr);
    }
    std::vector<std::string> groups;
    std::vector<std::pair<std::string, const nlohmann::json*>> group_layers;
    if (const auto* g = member(entry, "groups"); g && g->is_array()) {
      for (size_t j = 0; j < g->size(); ++j) {
        if (!(*g)[j].is_string()) continue;
        const std::string group = (*g)[j].get<std::string>();
        groups.push_back(group);
        const auto* layer = find_layer("groups", group, pointer + "/groups/" + std::to_string(j), "group", true);
        if (layer) group_layers.emplace_back(group, layer);
      }
    }

    std::vector<std::string> names, addrs;
    if (hosts) {
      auto expanded = expand_hostlist(*hosts);
      if (!expanded) {
        error(pointer + "/hosts", label + ".hosts: " + expanded.error().message);
        return;
      }
      names = std::move(expanded.value());
      if (addresses) {
        auto expanded_addresses = expand_hostlist(*addresses);
        if (!expanded_addresses) {
          error(pointer + "/addresses", label + ".addresses: " + expanded_addresses.error().message);
          return;
        }
        addrs = std::move(expanded_addresses.value());
        if (addrs.size() != names.size()) {
          error(pointer + "/addresses",
                label + ": hosts '" + *hosts + "' has " + std::to_string(names.size()) +
                    (names.size() == 1 ? " name" : " names") + " but addresses '" + *addresses + "' has " +
                    std::to_string(addrs.size()));
          return;
        }
      }
    } else {
      names.push_back(*name);
      if (address) addrs.push_back(*address);
    }
    // Host lists can produce anything; every name must be a host name SSH
    // and Slurm accept.
    if (!check_host_names(names, pointer + (hosts ? "/hosts" : "/name"), "host name") ||
        !check_host_names(addrs, pointer + (hosts ? "/addresses" : "/address"), "address")) {
      return;
    }

    auto shared = effective_settings(entry, pointer, rack, rack_layer, group_layers);
    const SourceLocation where = doc_.value_location(pointer + (hosts ? "/hosts" : "/name"));
    check_duplicates(names, addrs, index, where, pointer, hosts.has_value());
    const std::string management_pointer =
        pointer + (hosts ? (addresses ? "/addresses" : "/hosts") : (address ? "/address" : "/name"));
    // A reference node's compute addresses are its own business: only
    // nodes gpuexpand configures get them.
    std::vector<ComputeAddresses> compute(names.size());
    if (!is_reference_entry(index)) {
      compute = compute_addresses_.resolve({entry, pointer, names, addrs, management_pointer, *shared, index, where.line});
    }
    // Grow geometrically: reserving exactly per entry would copy every node
    // again for each of 10,000 single-node entries.
    if (nodes.capacity() < nodes.size() + names.size()) nodes.reserve(std::max(nodes.size() + names.size(), 2 * nodes.capacity()));
    for (size_t k = 0; k < names.size(); ++k) {
      NodeSpec node;
      node.name = names[k];
      node.address = addrs.empty() ? names[k] : addrs[k];
      node.rack = rack;
      node.groups = groups;
      node.settings = shared;
      node.entry_index = index;
      node.where = where;
      node.compute_addresses = std::move(compute[k]);
      nodes.push_back(std::move(node));
    }
  }

  // Precedence, lowest first: defaults, rack, groups in the order the
  // entry lists them, then the entry's own settings. Entries without
  // settings of their own share one merged object per (rack, groups): a
  // spec of 10,000 single-node entries merges once, not 10,000 times.
  std::shared_ptr<const nlohmann::json> effective_settings(
      const nlohmann::json& entry, const std::string& pointer, const std::string& rack,
      const nlohmann::json* rack_layer, const std::vector<std::pair<std::string, const nlohmann::json*>>& group_layers) {
    const nlohmann::json own = settings_layer(entry, true);
    std::string cache_key;
    if (own.empty()) {
      cache_key = rack;
      for (const auto& [group, _] : group_layers) cache_key += '\n' + group;
      if (auto it = shared_settings_.find(cache_key); it != shared_settings_.end()) return it->second;
    }
    nlohmann::json settings = nlohmann::json::object();
    OriginMap origins;
    if (const auto* defaults = member(root_, "defaults")) deep_merge(settings, *defaults, "/defaults", origins);
    if (rack_layer) deep_merge(settings, settings_layer(*rack_layer, false), "/racks/" + rack, origins);
    for (const auto& [group, layer] : group_layers) {
      deep_merge(settings, settings_layer(*layer, false), "/groups/" + group, origins);
    }
    deep_merge(settings, own, pointer, origins);
    anchor_local_paths(settings);
    derive_settings(settings);
    record_local_file_digests(settings);
    check_settings(settings, origins);
    check_repository_keys(settings, origins);
    derive_gpu_packages(settings, GpuPackageCheck{[&](const std::string& effective) { return origin_of(origins, effective); },
                                                  [&](const std::string& at, const std::string& message) {
                                                    if (reported_.insert(at + "\n" + message).second) error(at, message);
                                                  }});
    auto shared = std::make_shared<const nlohmann::json>(std::move(settings));
    if (own.empty()) shared_settings_.emplace(cache_key, shared);
    return shared;
  }

  // Secret files the spec names on the operator's machine (the munge key,
  // the kubeadm token) are never copied into the settings: only their
  // SHA-256 is, as `<key>_sha256` beside the path, so plans compare a node's
  // copy with the source without the secret entering a plan, a facts file or
  // the state store. An unreadable file (a CI runner without the secret)
  // leaves the digest out; the `copy` step then plans `?` and apply names
  // the file it cannot read.
  void record_local_file_digests(nlohmann::json& settings) {
    if (!settings.is_object()) return;
    for (const auto& [top, section, key, digest_key] : secret_file_settings()) {
      auto outer = settings.find(top);
      if (outer == settings.end() || !outer->is_object()) continue;
      auto it = outer->find(section);
      if (it == outer->end() || !it->is_object() || !it->contains(key) || !(*it)[key].is_string()) continue;
      const std::string path = (*it)[key].get<std::string>();
      auto cached = local_digests_.find(path);
      if (cached == local_digests_.end()) cached = local_digests_.emplace(path, local_file_sha256(path)).first;
      if (!cached->second.empty()) (*it)[digest_key] = cached->second;
    }
  }

  // Each entry's merged settings are checked apart; the same source from
  // `defaults` is reported once, and its key file read once.
  void check_repository_keys(nlohmann::json& settings, const OriginMap& origins) {
    RepositoryCheck check{[&](const std::string& effective) { return origin_of(origins, effective); },
                          [&](const std::string& pointer, const std::string& message) {
                            if (reported_.insert(pointer + "\n" + message).second) error(pointer, message);
                          },
                          key_files_};
    check_repositories(settings, check);
    for (const auto& [path, key] : key_files_) {
      if (!key.file_sha256.empty()) local_digests_.emplace(path, key.file_sha256);
    }
  }

  // Cross-field rules on the effective settings of one entry. Errors point
  // at the layer the offending value came from.
  void check_settings(const nlohmann::json& settings, const OriginMap& origins) {
    auto at = [&](const std::string& effective) { return origin_of(origins, effective); };
    if (const auto* scheduler = member(settings, "scheduler")) {
      const std::string kind = string_member(*scheduler, "kind").value_or("none");
      for (const char* wanted : {"slurm", "kubernetes"}) {
        if (kind == wanted && !member(*scheduler, wanted)) {
          error(at("/scheduler/kind"), "scheduler.kind is '" + kind + "' but no scheduler." + kind +
                                           " section applies to these nodes");
        }
      }
      // Keys a section needs are checked after merging, not in each layer:
      // a rack that only changes the Slurm weight must not repeat the
      // controller.
      require_merged(*scheduler, "slurm", {"controller"}, "/scheduler", at);
      if (const auto* slurm = member(*scheduler, "slurm")) {
        if (string_member(*slurm, "mode").value_or("dynamic") == "static") {
          for (const char* key : {"cpus", "real_memory_mb"}) {
            if (!slurm->contains(key)) {
              error(at("/scheduler/slurm/mode"), std::string("scheduler.slurm.mode static needs scheduler.slurm.") + key +
                                                     ": a NodeName line without CPUs= and RealMemory= makes Slurm "
                                                     "assume 1 CPU and 1 MB (use what slurmd -C prints on the node)");
            }
          }
        }
        // One gres.conf line per node covers all its GPUs with one type.
        if (string_member(*slurm, "gres_conf").value_or("from_facts") == "from_facts" && slurm->contains("gres") &&
            (*slurm)["gres"].is_array()) {
          // The gpu entries, and the others ("nic:2").
          std::string gpu_entries, others;
          int count = 0;
          for (const auto& entry : (*slurm)["gres"]) {
            if (!entry.is_string()) continue;
            const std::string text = entry.get<std::string>();
            if (text.rfind("gpu:", 0) == 0) {
              gpu_entries += (count++ ? ", " : "") + text;
            } else {
              others += (others.empty() ? "" : ", ") + text;
            }
          }
          if (count > 1) {
            error(at("/scheduler/slurm/gres"),
                  "scheduler.slurm.gres names more than one gpu entry (" + gpu_entries +
                      "): gres_conf: from_facts writes one gres.conf line for all of a node's GPUs, and the device "
                      "files do not say which GPU is which type; use one entry, or gres_conf: controller");
          }
          // configless: false: the node's own gres.conf is written whole,
          // with its gpu line only.
          if (count > 0 && !others.empty() && slurm->contains("configless") && (*slurm)["configless"] == false) {
            error(at("/scheduler/slurm/gres"),
                  "scheduler.slurm.gres has GRES other than gpu (" + others +
                      ") with configless: false: gres_conf: from_facts writes the node's gres.conf with its gpu line "
                      "only; use gres_conf: controller to copy the controller's gres.conf instead");
          }
        }
        // A static node changes the controller's slurm.conf: every other
        // node's copy would be stale. Refused rather than half-working.
        if (auto it = slurm->find("configless"); it != slurm->end() && *it == false &&
                                                 string_member(*slurm, "mode").value_or("dynamic") == "static") {
          error(at("/scheduler/slurm/configless"),
                "scheduler.slurm.configless: false cannot go with mode: static: the node's new NodeName line "
                "would leave every other node's copy of slurm.conf stale; use configless (the default) or "
                "mode: dynamic");
        }
      }
      // No ca_cert_hash would mean trusting whatever answers at the
      // endpoint with the bootstrap token: refused.
      require_merged(*scheduler, "kubernetes", {"api_endpoint", "token_file", "ca_cert_hash"}, "/scheduler", at);
      if (const auto* k8s = member(*scheduler, "kubernetes"); k8s && k8s->contains("labels") && (*k8s)["labels"].is_object()) {
        check_kubelet_labels((*k8s)["labels"], at);
      }
    }
    if (const auto* monitoring = member(settings, "monitoring")) {
      require_merged(*monitoring, "log_forwarding", {"target"}, "/monitoring", at);
    }
    if (const auto* storage = member(settings, "storage"); storage && storage->is_array()) {
      std::unordered_map<std::string, size_t> by_name, by_mountpoint;
      for (size_t j = 0; j < storage->size(); ++j) {
        const auto& mount = (*storage)[j];
        const std::string here = "/storage/" + std::to_string(j);
        if (auto n = string_member(mount, "name")) {
          auto [it, fresh] = by_name.emplace(*n, j);
          if (!fresh) {
            error(at(here + "/name"), "storage name '" + *n + "' is already used by storage[" +
                                          std::to_string(it->second) + "]");
          }
        }
        if (auto mp = string_member(mount, "mountpoint")) {
          std::string normal = *mp;
          while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
          auto [it, fresh] = by_mountpoint.emplace(normal, j);
          if (!fresh) {
            const auto& other = (*storage)[it->second];
            error(at(here + "/mountpoint"), "mountpoint '" + *mp + "' is already used by storage '" +
                                                string_member(other, "name").value_or("?") + "'");
          }
        }
      }
    }
    if (const auto* network = member(settings, "network")) {
      check_network(*network, at);
      if (const auto* nccl = member(*network, "nccl"); nccl && nccl->contains("topology_source") &&
                                                       !nccl->contains("topology_file")) {
        error(at("/network/nccl/topology_source"),
              "network.nccl.topology_source needs network.nccl.topology_file: where to put it on the node");
      }
    }
  }

  template <class At>
  void require_merged(const nlohmann::json& parent, const char* section, std::initializer_list<const char*> keys,
                      const std::string& parent_pointer, At at) {
    const nlohmann::json* object = member(parent, section);
    if (!object || !object->is_object()) return;
    const std::string pointer = parent_pointer + "/" + section;
    for (const char* key : keys) {
      if (!object->contains(key)) {
        error(at(pointer), human_path(pointer) + ": missing required key '" + key +
                               "' (after merging defaults, rack, groups and the node entry)", true);
      }
    }
  }

  // A joining node sets its labels itself (kubelet --node-labels, then with
  // its own credentials), and NodeRestriction lets a kubelet set only these
  // in the kubernetes.io / k8s.io namespaces: anything else would stop the
  // kubelet from starting.
  template <typename At>
  void check_kubelet_labels(const nlohmann::json& labels, At at) {
    auto ends_with = [](const std::string& s, const std::string& tail) {
      return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    for (const auto& [key, _] : labels.items()) {
      const auto slash = key.find('/');
      if (slash == std::string::npos) continue;
      const std::string prefix = key.substr(0, slash);
      const bool reserved = prefix == "kubernetes.io" || prefix == "k8s.io" || ends_with(prefix, ".kubernetes.io") ||
                            ends_with(prefix, ".k8s.io");
      const bool allowed = prefix == "kubelet.kubernetes.io" || prefix == "node.kubernetes.io" ||
                           key == "topology.kubernetes.io/region" || key == "topology.kubernetes.io/zone";
      if (!reserved || allowed) continue;
      std::string escaped;
      for (char c : key) escaped += c == '/' ? std::string("~1") : c == '~' ? std::string("~0") : std::string(1, c);
      error(at("/scheduler/kubernetes/labels/" + escaped),
            "label '" + key + "' cannot be set by the node itself (Kubernetes NodeRestriction allows only "
            "kubelet.kubernetes.io/, node.kubernetes.io/ and topology.kubernetes.io/{region,zone}): set it with kubectl "
            "as a cluster admin",
            true);
    }
  }

  template <class At>
  void check_network(const nlohmann::json& network, At at) {
    check_compute_interface_addresses(network, at, [&](const std::string& pointer, const std::string& message) {
      if (reported_.insert(pointer + "\n" + message).second) error(pointer, message);
    });
    std::unordered_map<std::string, size_t> interfaces;
    if (const auto* list = member(network, "compute_interfaces"); list && list->is_array()) {
      for (size_t j = 0; j < list->size(); ++j) {
        if (auto n = string_member((*list)[j], "name"); n && !interfaces.emplace(*n, j).second) {
          error(at("/network/compute_interfaces/" + std::to_string(j) + "/name"),
                "interface '" + *n + "' is listed twice in network.compute_interfaces");
        }
      }
    }
  }

  // A name or address keeps its meaning in /etc/hosts, slurm.conf's
  // NodeName/NodeAddr and the resolver only as a DNS name (labels of
  // letters, digits and '-', not starting or ending with '-', joined by
  // single dots), an IPv4 address (digits and dots: a dotted quad) or an
  // IPv6 address: "-x", "a..b" or "10.0.0..1" name nothing there.
  static bool is_host_name_or_address(const std::string& value) {
    if (value.empty() || value.size() > 253 || value.find('\0') != std::string::npos) return false;
    if (value.find(':') != std::string::npos) {
      in6_addr v6{};
      return ::inet_pton(AF_INET6, value.c_str(), &v6) == 1;
    }
    static const std::regex dns(
        "^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$");
    if (!std::regex_match(value, dns)) return false;
    if (value.find('.') != std::string::npos && value.find_first_not_of("0123456789.") == std::string::npos) {
      in_addr v4{};
      return ::inet_pton(AF_INET, value.c_str(), &v4) == 1;
    }
    return true;
  }

  bool check_host_names(const std::vector<std::string>& values, const std::string& pointer, const char* what) {
    for (const auto& value : values) {
      if (!is_host_name_or_address(value)) {
        error(pointer, human_path(pointer) + ": '" + value + "' is not a valid " + what +
                           " (letters, digits, '.', '-'; IPv6 also ':')");
        return false;
      }
    }
    return true;
  }

  struct Seen {
    size_t entry;
    int line;
  };

  // Duplicate names or addresses across the whole spec, reported once per
  // pair of entries with the colliding names folded back into a host list.
  void check_duplicates(const std::vector<std::string>& names, const std::vector<std::string>& addrs,
                        size_t index, const SourceLocation& where, const std::string& pointer, bool is_list) {
    report_duplicates(names, seen_names_, "node name", index, where, pointer + (is_list ? "/hosts" : "/name"));
    if (!addrs.empty()) {
      report_duplicates(addrs, seen_addresses_, "address", index, where,
                        pointer + (is_list ? "/addresses" : "/address"));
    }
  }

  void report_duplicates(const std::vector<std::string>& values, std::unordered_map<std::string, Seen>& seen,
                         const char* what, size_t index, const SourceLocation& where, const std::string& pointer) {
    std::map<std::pair<size_t, int>, std::vector<std::string>> clashes;  // (entry, line) -> values
    for (const auto& v : values) {
      auto [it, fresh] = seen.emplace(v, Seen{index, where.line});
      if (!fresh) clashes[{it->second.entry, it->second.line}].push_back(v);
    }
    for (const auto& [other, clashing] : clashes) {
      const bool same_entry = other.first == index;
      std::string noun = what;
      if (clashing.size() > 1) noun += noun.back() == 's' ? "es" : "s";
      std::string message = "duplicate " + noun + " " + fold_hostlist(clashing);
      message += same_entry ? " within this entry"
                            : " (already in " + human_path(entry_pointer(other.first)) + " on line " +
                                  std::to_string(other.second) + ")";
      error(pointer, message);
    }
  }

  const YamlDocument& doc_;
  const nlohmann::json& root_;
  std::vector<Diagnostic>& diagnostics_;
  std::map<std::string, KeyFileInfo> key_files_;
  std::set<std::string> reported_;
  std::unordered_map<std::string, std::shared_ptr<const nlohmann::json>> shared_settings_;
  std::unordered_map<std::string, Seen> seen_names_;
  std::unordered_map<std::string, Seen> seen_addresses_;
  ComputeAddressBook compute_addresses_;
};

// A null inside a settings layer (racks, groups, node entries) means
// "remove the inherited value" (see merge.hpp); the schema, which knows no
// layers, validates the document without those markers.
nlohmann::json without_removal_markers(const nlohmann::json& root) {
  nlohmann::json copy = root;
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& value) {
    if (!value.is_object()) return;
    for (auto it = value.begin(); it != value.end();) {
      if (it->is_null()) {
        it = value.erase(it);
      } else {
        strip(*it);
        ++it;
      }
    }
  };
  auto strip_layer_settings = [&](nlohmann::json& layer) {
    if (!layer.is_object()) return;
    for (auto& [key, value] : layer.items()) {
      if (value.is_object()) strip(value);
    }
  };
  for (const char* section : {"racks", "groups"}) {
    if (copy.contains(section) && copy[section].is_object()) {
      for (auto& [name, layer] : copy[section].items()) strip_layer_settings(layer);
    }
  }
  if (copy.contains("nodes") && copy["nodes"].is_array()) {
    for (auto& entry : copy["nodes"]) strip_layer_settings(entry);
  }
  return copy;
}

}  // namespace

SpecLoadResult load_spec_text(const std::string& text, const std::string& file, const JsonSchema& schema) {
  SpecLoadResult result;
  result.source_text = text;
  auto document = parse_yaml_document(text, file, result.diagnostics);
  if (!document) return result;
  if (!document->root.is_object()) {
    result.diagnostics.push_back({{file, 1, 1}, "a spec must be a mapping with apiVersion, cluster and nodes"});
    return result;
  }
  check_control_characters(*document, result.diagnostics);
  const auto refused = check_inline_secrets(*document, schema, result.diagnostics);
  schema.validate(*document, result.diagnostics, refused, without_removal_markers(document->root));
  ClusterSpec spec = SpecBuilder(*document, result.diagnostics).build();
  sort_diagnostics(result.diagnostics);
  if (result.diagnostics.empty()) result.spec = std::move(spec);
  return result;
}

SpecLoadResult load_spec_file(const std::string& path, const JsonSchema& schema) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    SpecLoadResult result;
    Diagnostic unreadable;
    unreadable.where.file = path;
    unreadable.message = "cannot read the spec: " + std::string(std::strerror(errno));
    result.diagnostics.push_back(std::move(unreadable));
    return result;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_spec_text(text.str(), path, schema);
}

}  // namespace gpuexpand
