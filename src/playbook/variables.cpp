#include "gpuexpand/playbook/variables.hpp"

#include <charconv>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "gpuexpand/accept/acceptance.hpp"

namespace gpuexpand {
namespace {

// What slurmd registers a dynamic node with, written out once for the
// scheduler playbook (templates have no conditionals): `--conf-server`
// and the `--conf` node line. State=DRAIN only counts at a node's first
// registration: no user job can land before the acceptance hold exists.
void derive_slurm_registration(nlohmann::json& settings) {
  auto* scheduler = settings.is_object() && settings.contains("scheduler") ? &settings["scheduler"] : nullptr;
  if (!scheduler || !scheduler->is_object() || !scheduler->contains("slurm") || !(*scheduler)["slurm"].is_object()) {
    return;
  }
  auto& slurm = (*scheduler)["slurm"];
  auto join = [](const nlohmann::json& list) {
    std::string out;
    if (list.is_array()) {
      for (const auto& v : list) {
        if (v.is_string()) out += (out.empty() ? "" : ",") + v.get<std::string>();
      }
    }
    return out;
  };
  slurm["conf_server"] = slurm.value("controller_address", slurm.value("controller", std::string()));
  // configless (the default): slurmd fetches slurm.conf from the
  // controller; otherwise the node keeps a copy of the controller's.
  const bool configless = slurm.value("configless", true);
  slurm["local_conf"] = !configless;
  slurm["conf_server_option"] = configless ? "--conf-server " + slurm["conf_server"].get<std::string>() + " " : "";
  const std::string gres = join(slurm.value("gres", nlohmann::json())), features = join(slurm.value("features", nlohmann::json()));
  std::string conf;
  if (!gres.empty()) conf += "Gres=" + gres + " ";
  if (!features.empty()) conf += "Feature=" + features + " ";
  if (slurm.contains("weight") && slurm["weight"].is_number_integer()) {
    conf += "Weight=" + std::to_string(slurm["weight"].get<long long>()) + " ";
  }
  slurm["node_conf"] = conf + "State=DRAIN";
  // A static node's NodeName line on the controller, after NodeName= and
  // NodeAddr= (the playbook adds those per node): its hardware first
  // (without it Slurm assumes 1 CPU and 1 MB), then GRES, features, weight.
  std::string hardware;
  for (const auto& [key, name] : {std::pair<const char*, const char*>{"cpus", "CPUs"},
                                  {"sockets", "Sockets"},
                                  {"cores_per_socket", "CoresPerSocket"},
                                  {"threads_per_core", "ThreadsPerCore"},
                                  {"real_memory_mb", "RealMemory"}}) {
    if (slurm.contains(key) && slurm[key].is_number_integer()) {
      hardware += std::string(name) + "=" + std::to_string(slurm[key].get<long long>()) + " ";
    }
  }
  conf = hardware + conf;
  if (!conf.empty()) conf.pop_back();
  slurm["static_conf"] = conf;
  slurm["mode"] = slurm.value("mode", std::string("dynamic"));
  slurm["gres_list"] = gres;
  slurm["feature_list"] = features;
  // The node's GPU line in gres.conf (gres_conf: from_facts), less its
  // NodeName= and File=, which come from the node and its facts: the
  // GRES name and type from the spec's first gpu entry, and the count the
  // device files found must match.
  slurm["gpu_gres_conf"] = "";
  slurm["gpu_gres_count"] = 0;
  if (slurm.contains("gres") && slurm["gres"].is_array()) {
    for (const auto& entry : slurm["gres"]) {
      const std::string text = entry.is_string() ? entry.get<std::string>() : std::string();
      if (text.rfind("gpu:", 0) != 0) continue;
      const auto last = text.rfind(':');
      const std::string type = last > 3 ? text.substr(4, last - 4) : std::string();
      slurm["gpu_gres_conf"] = "Name=gpu" + (type.empty() ? std::string() : " Type=" + type);
      long long count = 0;  // schema-checked digits; an absurd count stays 0 and fails the node's step
      const std::string digits = text.substr(last + 1);
      std::from_chars(digits.data(), digits.data() + digits.size(), count);
      slurm["gpu_gres_count"] = count;
      break;
    }
  }
  // pyxis and enroot as NVIDIA ships them: enroot's release packages and
  // the package pyxis's `make deb` builds.
  if (!slurm.contains("pyxis_packages")) {
    slurm["pyxis_packages"] = nlohmann::json::array({"enroot", "enroot+caps", "nvslurm-plugin-pyxis"});
  }
  slurm["gres_conf"] = slurm.value("gres_conf", std::string("from_facts"));
  slurm["gres_from_facts"] = slurm["gres_conf"] == "from_facts" && slurm["gpu_gres_count"].get<long long>() > 0;
}

// PFC and ECN in the forms the rdma playbook's commands take: the lossless
// priorities "3,4" (sorted, to compare with what the NIC reports) and the
// full `dcb pfc set … prio-pfc` map "0:off … 3:on …"; ECN applies to the
// PFC priorities, or to all eight when PFC names none.
void derive_rdma_qos(nlohmann::json& settings) {
  auto* network = settings.is_object() && settings.contains("network") ? &settings["network"] : nullptr;
  if (!network || !network->is_object() || !network->contains("rdma") || !(*network)["rdma"].is_object()) return;
  auto& rdma = (*network)["rdma"];
  std::set<int> on;
  const auto pfc = rdma.value("pfc", nlohmann::json::object());
  if (pfc.is_object() && pfc.value("enabled", false) && pfc.contains("priorities") && pfc["priorities"].is_array()) {
    for (const auto& p : pfc["priorities"]) {
      if (p.is_number_integer() && p.get<int>() >= 0 && p.get<int>() <= 7) on.insert(p.get<int>());
    }
  }
  std::string list, map, ecn;
  for (int p = 0; p <= 7; ++p) {
    map += (p ? " " : "") + std::to_string(p) + (on.count(p) ? ":on" : ":off");
    if (on.count(p)) list += (list.empty() ? "" : ",") + std::to_string(p);
    if (on.empty() || on.count(p)) ecn += (ecn.empty() ? "" : ",") + std::to_string(p);
  }
  rdma["pfc_on"] = list;
  rdma["pfc_map"] = map;
  rdma["ecn_priorities"] = ecn;
}

// The kubeadm join inputs as the scheduler playbook needs them: the API
// server as host:port, labels as "k=v,…" (kubelet's --node-labels form),
// taints as "key=value:Effect,…" and as a JSON list for the
// JoinConfiguration. The schema keeps ',' and quotes out of every part.
void derive_kubernetes_join(nlohmann::json& settings) {
  auto* scheduler = settings.is_object() && settings.contains("scheduler") ? &settings["scheduler"] : nullptr;
  if (!scheduler || !scheduler->is_object() || !scheduler->contains("kubernetes") ||
      !(*scheduler)["kubernetes"].is_object()) {
    return;
  }
  auto& k8s = (*scheduler)["kubernetes"];
  std::string endpoint = k8s.value("api_endpoint", std::string());
  if (endpoint.rfind("https://", 0) == 0) endpoint = endpoint.substr(8);
  if (auto slash = endpoint.find('/'); slash != std::string::npos) endpoint.resize(slash);
  k8s["api_server"] = endpoint;
  std::string labels;
  if (k8s.contains("labels") && k8s["labels"].is_object()) {
    for (const auto& [key, value] : k8s["labels"].items()) {
      labels += (labels.empty() ? "" : ",") + key + "=" + (value.is_string() ? value.get<std::string>() : "");
    }
  }
  k8s["label_list"] = labels;
  std::string taints;
  nlohmann::json taint_objects = nlohmann::json::array();
  if (k8s.contains("taints") && k8s["taints"].is_array()) {
    for (const auto& t : k8s["taints"]) {
      const std::string key = t.value("key", ""), value = t.value("value", ""), effect = t.value("effect", "");
      taints += (taints.empty() ? "" : ",") + key + (value.empty() ? "" : "=" + value) + ":" + effect;
      nlohmann::json object = {{"key", key}, {"effect", effect}};
      if (!value.empty()) object["value"] = value;
      taint_objects.push_back(object);
    }
  }
  k8s["taint_list"] = taints;
  k8s["taints_json"] = taint_objects.dump();
}

// Compute interfaces as the rdma playbook's configuration files need them:
// the [Link] settings of a systemd-networkd .network file and those of a
// NetworkManager keyfile (empty when the spec gives no MTU: then the MTU is
// left alone), and the keyfile's connection type.
void derive_compute_interfaces(nlohmann::json& settings) {
  auto* network = settings.is_object() && settings.contains("network") ? &settings["network"] : nullptr;
  if (!network || !network->is_object() || !network->contains("compute_interfaces")) return;
  auto& interfaces = (*network)["compute_interfaces"];
  if (!interfaces.is_array()) return;
  const bool infiniband = network->contains("rdma") && (*network)["rdma"].is_object() &&
                          (*network)["rdma"].value("kind", "") == "infiniband";
  for (auto& interface : interfaces) {
    if (!interface.is_object()) continue;
    interface["networkd_link"] = nlohmann::json::object();
    interface["nm_link"] = nlohmann::json::object();
    if (interface.contains("mtu") && interface["mtu"].is_number_integer()) {
      interface["networkd_link"]["MTUBytes"] = interface["mtu"];
      interface["nm_link"]["mtu"] = interface["mtu"];
    }
    interface["nm_type"] = infiniband ? "infiniband" : "ethernet";
  }
}

// The container engine nvidia-ctk configures (gpu.container_runtime): the
// files it may write, by toolkit version (1.17 edits the main file, 1.18+
// writes a drop-in, whose directory moved once for each engine), and the
// service to restart. And whether the CDI spec is generated (gpu.cdi,
// default true with the toolkit).
void derive_container_engine(nlohmann::json& settings) {
  auto* gpu = settings.is_object() && settings.contains("gpu") ? &settings["gpu"] : nullptr;
  if (!gpu || !gpu->is_object()) return;
  const bool toolkit = gpu->value("container_toolkit", false);
  (*gpu)["cdi_enabled"] = toolkit && gpu->value("cdi", true);
  const std::string runtime = gpu->value("container_runtime", std::string());
  static const std::map<std::string, std::pair<std::vector<std::string>, std::string>> engines = {
      {"docker", {{"/etc/docker/daemon.json"}, "docker"}},
      {"containerd",
       {{"/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml", "/etc/containerd/config.d/99-nvidia.toml"},
        "containerd"}},
      {"crio", {{"/etc/crio/crio.conf", "/etc/crio/conf.d/99-nvidia.toml", "/etc/crio/crio.conf.d/99-nvidia.toml"}, "crio"}}};
  auto it = engines.find(runtime);
  if (it == engines.end()) return;
  (*gpu)["container_engine"] = {{"files", it->second.first}, {"service", it->second.second}};
}

}  // namespace

nlohmann::json playbook_variables(const ClusterSpec& spec, const NodeSpec& node) {
  nlohmann::json vars = node_variables(spec, node);
  derive_slurm_registration(vars);
  derive_kubernetes_join(vars);
  derive_rdma_qos(vars);
  derive_compute_interfaces(vars);
  derive_container_engine(vars);
  vars["gpuexpand"] = {{"acceptance_reservation", acceptance_reservation(node.name)},
                       {"acceptance_record", kAcceptanceRecordPath}};
  // Always a list: a spec that drops its last source must still prune it.
  const nlohmann::json* os = vars.contains("os") ? &vars["os"] : nullptr;
  vars["gpuexpand"]["package_sources"] = os && os->is_object() && os->contains("repositories") && (*os)["repositories"].is_array()
                                             ? (*os)["repositories"]
                                             : nlohmann::json::array();
  return vars;
}

}  // namespace gpuexpand
