#include "gpuexpand/accept/acceptance.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include "gpuexpand/util/ipv4.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "settings_access.hpp"

namespace gpuexpand {
namespace {

// nvidia-smi reports the upstream version only ("550.90.07"); the spec's
// may carry an epoch or a package revision, or name a branch ("550"), as
// package versions do (docs/spec.md, version matching).
bool driver_is(const std::string& reported, std::string wanted) {
  if (auto colon = wanted.find(':'); colon != std::string::npos) wanted.erase(0, colon + 1);
  if (auto dash = wanted.find('-'); dash != std::string::npos) wanted.resize(dash);
  return reported == wanted ||
         (reported.size() > wanted.size() && reported.compare(0, wanted.size(), wanted) == 0 && reported[wanted.size()] == '.');
}


using nlohmann::json;

using accept_detail::member;
using accept_detail::number;
using accept_detail::q;
using accept_detail::result;
using accept_detail::strings;
using accept_detail::text;
using accept_detail::wants;

// The first IPv4 address of interface `name` in a facts document.
std::string ipv4_of(const json& facts, const std::string& name) {
  for (const auto& i : member(member(facts, "network"), "interfaces")) {
    if (text(i, "name") != name) continue;
    for (const auto& a : member(i, "addresses")) {
      const std::string address = a.is_string() ? a.get<std::string>() : "";
      if (address.find('.') != std::string::npos) return address.substr(0, address.find('/'));
    }
  }
  return "";
}

// An IPv4 address of interface `name` in a facts document that lies in
// `own`'s subnet, or "".
std::string ipv4_in_subnet(const json& facts, const std::string& name, const Ipv4Cidr& own) {
  const uint32_t mask = own.prefix == 0 ? 0 : 0xFFFFFFFFu << (32 - own.prefix);
  for (const auto& i : member(member(facts, "network"), "interfaces")) {
    if (text(i, "name") != name) continue;
    for (const auto& a : member(i, "addresses")) {
      const std::string address = a.is_string() ? a.get<std::string>() : "";
      auto ip = parse_ipv4(address.substr(0, address.find('/')));
      if (ip && (*ip & mask) == (own.address & mask) && *ip != own.address) return format_ipv4(*ip);
    }
  }
  return "";
}

// A port ib_write_bw can use: named, and up.
bool active_rdma_port(const json& port) { return text(port, "state") == "active" && !text(port, "device").empty(); }

size_t active_rdma_ports(const json& facts) {
  const auto& ports = member(member(facts, "network"), "rdma");
  return static_cast<size_t>(std::count_if(ports.begin(), ports.end(), active_rdma_port));
}

// The GPU count a Slurm GRES list promises ("gpu:8", "gpu:h200:8"), or -1.
long gres_gpu_count(const json& slurm) {
  long total = -1;
  for (const auto& g : strings(member(slurm, "gres"))) {
    if (g.rfind("gpu:", 0) != 0) continue;
    try {
      total = std::max(total, 0L) + std::stol(g.substr(g.rfind(':') + 1));
    } catch (...) {
    }
  }
  return total;
}

CheckResult gpu_check(const json& expected, const json& facts, long gres_gpus) {
  if (!expected.is_object()) return result("gpu", CheckStatus::Skip, "no GPUs in the spec");
  const json& gpus = member(facts, "gpus");
  const long count = number(gpus, "count", 0);
  const long wanted_count = number(expected, "expected_count", -1);
  std::vector<std::string> problems;
  if (!gpus.is_object() || (count == 0 && wanted_count != 0)) {
    return result("gpu", CheckStatus::Fail, "no GPU found (nvidia-smi missing or failing)");
  }
  if (wanted_count >= 0 && count != wanted_count) {
    problems.push_back(std::to_string(count) + " GPUs, expected " + std::to_string(wanted_count));
  }
  // Slurm would hand out GPUs the node does not have (or hide some).
  if (gres_gpus >= 0 && count != gres_gpus) {
    problems.push_back("the Slurm GRES promises " + std::to_string(gres_gpus) + " GPUs, the node has " +
                       std::to_string(count));
  }
  const std::string model = text(gpus, "model");
  const std::string wanted_model = text(expected, "expected_model");
  if (member(gpus, "models").is_array() && member(gpus, "models").size() > 1) {
    problems.push_back("mixed models: " + member(gpus, "models").dump());
  } else if (!wanted_model.empty() && model != wanted_model) {
    problems.push_back("model '" + model + "', expected '" + wanted_model + "'");
  }
  const std::string driver = text(gpus, "driver_version");
  const std::string wanted_driver = text(expected, "driver_version");
  if (!wanted_driver.empty() && !driver_is(driver, wanted_driver)) {
    problems.push_back("driver " + (driver.empty() ? std::string("unknown") : driver) + ", expected " + wanted_driver);
  }
  if (member(expected, "persistence_mode") == json(true) && member(gpus, "persistence_mode") != json(true)) {
    problems.push_back("persistence mode is off");
  }
  const long max_ecc = number(expected, "max_ecc_errors", 0);
  size_t position = 0;
  for (const auto& device : member(gpus, "devices")) {
    const json& ecc = member(device, "ecc_uncorrected_volatile");
    const json& index = member(device, "index");
    const std::string which = index.is_number_integer() ? index.dump() : std::to_string(position);
    ++position;
    if (ecc.is_number_integer() && ecc.get<long>() > max_ecc) {
      problems.push_back("GPU " + which + ": " + ecc.dump() +
                         " uncorrected ECC errors (at most " + std::to_string(max_ecc) + ")");
    }
  }
  if (!problems.empty()) {
    std::string detail;
    for (const auto& p : problems) detail += (detail.empty() ? "" : "; ") + p;
    return result("gpu", CheckStatus::Fail, detail);
  }
  return result("gpu", CheckStatus::Pass, std::to_string(count) + " x " + model + ", driver " + driver);
}

CheckResult interface_check(const json& settings, const json& facts) {
  std::vector<std::string> problems, good;
  for (const auto& wanted : member(settings, "interfaces")) {
    const std::string name = text(wanted, "name");
    const json* found = nullptr;
    for (const auto& i : member(member(facts, "network"), "interfaces")) {
      if (text(i, "name") == name) found = &i;
    }
    if (!found) {
      problems.push_back(name + " is missing");
      continue;
    }
    if (text(*found, "state") != "up") problems.push_back(name + " is " + text(*found, "state", "not up"));
    const long mtu = number(*found, "mtu", 0), wanted_mtu = number(wanted, "mtu", 0);
    if (wanted_mtu > 0 && mtu != wanted_mtu) {
      problems.push_back(name + " MTU " + std::to_string(mtu) + ", expected " + std::to_string(wanted_mtu));
    } else {
      good.push_back(name + " up, MTU " + std::to_string(mtu));
    }
  }
  std::string detail;
  for (const auto& p : problems.empty() ? good : problems) detail += (detail.empty() ? "" : "; ") + p;
  return result("network", problems.empty() ? CheckStatus::Pass : CheckStatus::Fail, detail);
}

void merge_into(CheckResult& into, const CheckResult& from) {
  auto rank = [](CheckStatus status) { return status == CheckStatus::Fail ? 2 : status == CheckStatus::Pass ? 1 : 0; };
  if (rank(from.status) > rank(into.status)) into.status = from.status;
  if (!from.detail.empty()) into.detail += (into.detail.empty() ? "" : "; ") + from.detail;
  into.seconds += from.seconds;
}

}  // namespace

std::string acceptance_reservation(const std::string& node) { return "gpuexpand-accept-" + node; }

const std::vector<std::string>& builtin_checks() {
  static const std::vector<std::string> names = {"scheduler", "gpu",        "container", "network",
                                                 "storage",   "monitoring", "multinode"};
  return names;
}

namespace {

bool is_builtin_check(const std::string& name) {
  const auto& names = builtin_checks();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The thresholds a builtin check's entry in the playbook may give: its
// defaults, which the spec's validation section overrides per node.
const std::map<std::string, std::vector<std::string>>& check_thresholds() {
  static const std::map<std::string, std::vector<std::string>> keys = {
      {"scheduler", {"job_timeout"}},
      {"gpu", {"max_ecc_errors"}},
      {"container", {}},
      {"network", {"min_rdma_gbps", "min_nccl_busbw"}},
      {"storage", {}},
      {"monitoring", {}},
      {"multinode", {}}};
  return keys;
}

// validation.KEY when the spec sets it, else the playbook's entry for
// `check`, else null.
json threshold(const json& validation, const json& declared, const char* check, const char* key) {
  if (const json& v = member(validation, key); v.is_number()) return v;
  if (declared.is_array()) {
    for (const auto& c : declared) {
      if (text(c, "name") == check && member(c, key).is_number()) return c[key];
    }
  }
  return nullptr;
}

}  // namespace

Result<void> check_declared_checks(const json& declared) {
  if (declared.is_null()) return {};
  if (!declared.is_array()) return make_error("'checks' must be a list of checks");
  std::set<std::string> seen;
  for (const auto& c : declared) {
    const std::string name = text(c, "name");
    if (name.empty()) return make_error("every entry of 'checks' needs a 'name'");
    if (!seen.insert(name).second) return make_error("check '" + name + "' is declared twice");
    const bool custom = member(c, "command").is_string();
    if (is_builtin_check(name) && custom) {
      return make_error("'" + name + "' is a builtin check: a check with its own 'command' needs another name");
    }
    if (!is_builtin_check(name) && !custom) {
      return make_error("check '" + name + "' is not a builtin check (scheduler, gpu, container, network, storage, "
                        "monitoring, multinode) and has no 'command'");
    }
    if (name == "acceptance" || name == "fault-drill") return make_error("'" + name + "' is a reserved check name");
    if (custom) continue;
    const auto& allowed = check_thresholds().at(name);
    for (const auto& [key, value] : c.items()) {
      if (key == "name" || key == "description") continue;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return make_error("check '" + name + "' takes no '" + key + "'" +
                          (list.empty() ? std::string(" (it has no thresholds)") : " (its thresholds: " + list + ")"));
      }
    }
  }
  return {};
}

json acceptance_settings(const json& vars, const json& declared) {
  const std::string node = text(member(vars, "node"), "name");
  json settings = {{"node", node}};
  const json& validation = member(vars, "validation");
  const json timeout = threshold(validation, declared, "scheduler", "job_timeout");
  settings["job_timeout"] = timeout.is_number_integer() ? timeout.get<long>() : 120;
  // Only when set: a record made without them stays valid.
  if (validation.is_object() && validation.contains("multinode_nodes")) {
    settings["multinode_nodes"] = number(validation, "multinode_nodes", 0);
  }
  for (const char* key : {"min_rdma_gbps", "min_nccl_busbw"}) {
    if (json min = threshold(validation, declared, "network", key); min.is_number()) settings[key] = min;
  }

  const json& gpu = member(vars, "gpu");
  if (gpu.is_object() && (gpu.contains("expected_count") || gpu.contains("driver_version"))) {
    json expected = json::object();
    for (const char* key : {"expected_count", "expected_model", "driver_version", "persistence_mode"}) {
      if (gpu.contains(key)) expected[key] = gpu[key];
    }
    const json max_ecc = threshold(validation, declared, "gpu", "max_ecc_errors");
    expected["max_ecc_errors"] = max_ecc.is_number_integer() ? max_ecc.get<long>() : 0;
    settings["gpu"] = expected;
  } else {
    settings["gpu"] = nullptr;
  }

  // GPUs inside a container: with the container toolkit, the runtime it
  // was configured for and the image the spec names to run.
  const json& scheduler = member(vars, "scheduler");
  const std::string kind = text(scheduler, "kind", "none");
  if (member(gpu, "container_toolkit") == json(true)) {
    settings["container"] = {{"runtime", text(gpu, "container_runtime")},
                             {"image", text(validation, "container_image")},
                             {"expected_count", number(gpu, "expected_count", 0)}};
    // A job's container through pyxis, in the node's acceptance reservation.
    if (kind == "slurm" && member(member(scheduler, "slurm"), "pyxis") == json(true)) {
      settings["container"]["pyxis_reservation"] = acceptance_reservation(node);
    }
  } else {
    settings["container"] = nullptr;
  }

  settings["scheduler_kind"] = kind;
  if (kind == "slurm") {
    const json& slurm = member(scheduler, "slurm");
    settings["slurm"] = {{"reservation", acceptance_reservation(node)},
                         {"features", strings(member(slurm, "features"))},
                         {"gres", strings(member(slurm, "gres"))}};
  } else {
    settings["slurm"] = nullptr;
  }

  const json& network = member(vars, "network");
  settings["interfaces"] = json::array();
  for (const auto& i : member(network, "compute_interfaces")) {
    json entry = {{"name", text(i, "name")}};
    if (member(i, "mtu").is_number_integer()) entry["mtu"] = i["mtu"];
    if (member(i, "address").is_string()) entry["address"] = i["address"];
    settings["interfaces"].push_back(entry);
  }
  const json& rdma = member(network, "rdma");
  settings["rdma"] = text(rdma, "kind", "none");
  const json& topology = member(member(network, "nccl"), "topology_file");
  if (topology.is_string()) settings["nccl_topology_file"] = topology;
  // RoCE QoS as the rdma phase set it (derived by the spec loader).
  if (settings["rdma"] == "roce" && member(member(rdma, "pfc"), "enabled") == json(true)) {
    settings["pfc_on"] = text(rdma, "pfc_on");
  }
  if (settings["rdma"] == "roce" && member(rdma, "ecn") == json(true)) {
    settings["ecn_priorities"] = text(rdma, "ecn_priorities");
  }

  settings["mounts"] = json::array();
  const json& storage = member(vars, "storage");
  if (storage.is_array()) {
    for (const auto& m : storage) {
      settings["mounts"].push_back({{"name", text(m, "name")},
                                    {"mountpoint", text(m, "mountpoint")},
                                    {"min_mbps", number(m, "min_throughput_mbps", 0)}});
    }
  }

  settings["exporters"] = json::array();
  const json& monitoring = member(vars, "monitoring");
  const json& node_exporter = member(monitoring, "node_exporter");
  if (member(node_exporter, "enabled") == json(true)) {
    settings["exporters"].push_back(
        {{"name", "node_exporter"}, {"port", number(node_exporter, "port", 9100)}, {"metric", "node_cpu_seconds_total"}});
  }
  const json& gpu_exporter = member(monitoring, "gpu_exporter");
  if (member(gpu_exporter, "enabled") == json(true) && number(gpu, "expected_count", 0) > 0) {
    settings["exporters"].push_back(
        {{"name", "gpu_exporter"}, {"port", number(gpu_exporter, "port", 9400)}, {"metric", "DCGM_FI_DEV_GPU_UTIL"}});
  }

  // The spec's list, or every check that has something to look at; of
  // those, the builtin checks the playbook declares (all when it declares
  // none), then the playbook's own checks.
  json checks = json::array();
  if (member(validation, "checks").is_array()) {
    checks = validation["checks"];
  } else {
    if (kind != "none") checks.push_back("scheduler");
    if (settings["gpu"].is_object()) checks.push_back("gpu");
    if (settings["container"].is_object()) checks.push_back("container");
    if (!settings["interfaces"].empty()) checks.push_back("network");
    if (!settings["mounts"].empty()) checks.push_back("storage");
    if (!settings["exporters"].empty()) checks.push_back("monitoring");
    if (kind == "slurm") checks.push_back("multinode");
  }
  if (declared.is_array()) {
    std::set<std::string> offered;
    for (const auto& c : declared) offered.insert(text(c, "name"));
    json kept = json::array();
    for (const auto& name : checks) {
      if (name.is_string() && offered.count(name.get<std::string>())) kept.push_back(name);
    }
    checks = kept;
    // Only when there are some: a record made without them stays valid.
    json custom = json::array();
    for (const auto& c : declared) {
      if (!member(c, "command").is_string()) continue;
      custom.push_back({{"name", text(c, "name")}, {"command", c["command"]}, {"timeout", number(c, "timeout", 60)}});
      checks.push_back(text(c, "name"));
    }
    if (!custom.empty()) settings["custom"] = custom;
  }
  settings["checks"] = checks;
  return settings;
}

std::string acceptance_record(const json& settings) {
  return "{\"gpuexpand\": \"acceptance passed with these settings\",\n \"settings\": " + settings.dump() + "}\n";
}

std::vector<CheckResult> facts_checks(const json& settings, const json& facts) {
  std::vector<CheckResult> out;
  if (wants(settings, "gpu")) {
    out.push_back(gpu_check(member(settings, "gpu"), facts, gres_gpu_count(member(settings, "slurm"))));
  }
  if (wants(settings, "network")) {
    if (!member(settings, "interfaces").empty()) out.push_back(interface_check(settings, facts));
    const std::string rdma = text(settings, "rdma", "none");
    if (rdma == "none") {
      out.push_back(result("network", CheckStatus::Skip, "ib_write_bw: no RDMA fabric (network.rdma.kind none)"));
    } else if (member(member(facts, "network"), "rdma").empty()) {
      out.push_back(result("network", CheckStatus::Fail, "network.rdma.kind is " + rdma + " but the node has no RDMA device"));
    } else {
      if (rdma_pairs(facts).empty()) {
        out.push_back(result("network", CheckStatus::Skip,
                             active_rdma_ports(facts) < 2
                                 ? "ib_write_bw: fewer than 2 active RDMA devices: no pair to test between"
                                 : "ib_write_bw: no two active RDMA ports share a link layer and subnet (rails on "
                                   "separate subnets reach each other only between nodes): no pair inside the node"));
      }
    }
    if (member(facts, "gpus").is_object() && number(member(facts, "gpus"), "count", 0) < 2) {
      out.push_back(result("network", CheckStatus::Skip, "NCCL: fewer than 2 GPUs on the node, no all_reduce_perf"));
    }
  }
  if (wants(settings, "scheduler") && !member(settings, "slurm").is_object()) {
    const std::string kind = text(settings, "scheduler_kind", "none");
    out.push_back(result("scheduler", CheckStatus::Skip,
                         kind == "kubernetes" ? "Kubernetes: no test pod is scheduled by gpuexpand yet"
                                              : "no scheduler in the spec"));
  }
  return out;
}

namespace {

// "10.0.1.7/24" -> "10.0.1.0/24"; "" for anything else.
std::string ipv4_subnet(const std::string& address) {
  unsigned a = 0, b = 0, c = 0, d = 0, bits = 0;
  char slash = 0;
  std::istringstream in(address);
  char dot1 = 0, dot2 = 0, dot3 = 0;
  if (!(in >> a >> dot1 >> b >> dot2 >> c >> dot3 >> d >> slash >> bits) || dot1 != '.' || dot2 != '.' ||
      dot3 != '.' || slash != '/' || a > 255 || b > 255 || c > 255 || d > 255 || bits > 32) {
    return "";
  }
  const std::uint32_t ip = (a << 24) | (b << 16) | (c << 8) | d;
  const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  const std::uint32_t net = ip & mask;
  return std::to_string(net >> 24) + "." + std::to_string((net >> 16) & 255) + "." + std::to_string((net >> 8) & 255) +
         "." + std::to_string(net & 255) + "/" + std::to_string(bits);
}

// Which ports can reach each other inside the node: InfiniBand ports under
// one subnet manager (rails with their own SM are separate fabrics), RoCE
// ports whose netdevs share an IPv4 subnet (rail-optimized RoCE puts each
// rail on its own subnet, routed only between nodes).
std::string rdma_reach_group(const json& facts, const json& port) {
  const std::string layer = text(port, "link_layer", "");
  if (layer == "infiniband" && port.contains("sm_lid") && !port["sm_lid"].is_null()) {
    return layer + " sm " + port["sm_lid"].dump();
  }
  if (layer == "ethernet" && !text(port, "netdev").empty()) {
    for (const auto& i : member(member(facts, "network"), "interfaces")) {
      if (text(i, "name") != text(port, "netdev")) continue;
      for (const auto& a : member(i, "addresses")) {
        if (std::string subnet = ipv4_subnet(a.is_string() ? a.get<std::string>() : ""); !subnet.empty()) {
          return layer + " " + subnet;
        }
      }
    }
  }
  return layer;
}

}  // namespace

RdmaPairs rdma_pairs(const json& facts) {
  // reach group -> its active ports, sorted by device and port
  std::map<std::string, std::set<std::pair<std::string, long>>> by_layer;
  for (const auto& port : member(member(facts, "network"), "rdma")) {
    if (!active_rdma_port(port)) continue;
    by_layer[rdma_reach_group(facts, port)].insert({text(port, "device"), number(port, "port", 1)});
  }
  RdmaPairs pairs;
  for (const auto& [layer, set] : by_layer) {
    std::vector<RdmaPort> ports;
    for (const auto& [device, number] : set) ports.push_back({device, number});
    if (ports.size() < 2) continue;
    for (size_t i = 0; i + 1 < ports.size(); i += 2) pairs.emplace_back(ports[i], ports[i + 1]);
    if (ports.size() % 2 == 1) pairs.emplace_back(ports.back(), ports.front());
  }
  return pairs;
}

NodeHardware node_hardware(const json& facts) {
  return {rdma_pairs(facts), number(member(facts, "gpus"), "count", 0)};
}

PingPeers ping_peers(const json& settings, const std::vector<const json*>& others) {
  PingPeers peers;
  for (const auto& i : member(settings, "interfaces")) {
    const std::string name = text(i, "name");
    // With an address of its own, the interface pings a peer in its
    // subnet (each rail of a multi-rail fabric is a subnet of its own).
    const auto own = parse_ipv4_cidr(text(i, "address"));
    for (const json* other : others) {
      if (!other) continue;
      std::string address = own ? ipv4_in_subnet(*other, name, *own) : ipv4_of(*other, name);
      if (!address.empty()) {
        peers[name] = address;
        break;
      }
    }
  }
  return peers;
}

std::vector<CheckResult> parse_acceptance_output(std::string_view output) {
  std::vector<CheckResult> out;
  std::istringstream in{std::string(output)};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("@@check ", 0) != 0) continue;
    std::istringstream fields(line.substr(8));
    CheckResult r;
    std::string status, seconds;
    if (!(fields >> r.check >> status >> seconds)) continue;
    const auto parsed = parse_check_status(status);
    if (!parsed) continue;
    r.status = *parsed;
    try {
      r.seconds = std::stod(seconds);
    } catch (...) {
      r.seconds = 0;
    }
    std::getline(fields >> std::ws, r.detail);
    auto same = std::find_if(out.begin(), out.end(), [&](const CheckResult& c) { return c.check == r.check; });
    if (same == out.end()) {
      out.push_back(r);
    } else {
      merge_into(*same, r);
    }
  }
  return out;
}

bool acceptance_script_finished(std::string_view output) {
  return output.find("\n@@end") != std::string_view::npos || output.rfind("@@end", 0) == 0;
}

std::vector<CheckResult> merge_check_results(const json& settings, std::vector<CheckResult> from_facts,
                                             std::vector<CheckResult> from_script, bool script_finished) {
  if (!script_finished) {
    // Whatever the script did not get to must not pass on facts alone.
    for (const char* check : {"scheduler", "network", "storage", "monitoring"}) {
      CheckResult stopped = result(check, CheckStatus::Fail, "the check script stopped before its end");
      from_script.push_back(stopped);
    }
    for (const auto& c : member(settings, "custom")) {
      from_script.push_back(result(text(c, "name"), CheckStatus::Fail, "the check script stopped before its end"));
    }
  }
  std::vector<CheckResult> out;
  for (const auto& name : strings(member(settings, "checks"))) {
    if (name == "multinode") continue;  // one job over several nodes: run for the whole run
    CheckResult merged;
    merged.check = name;
    merged.status = CheckStatus::Skip;
    bool any = false;
    for (auto* list : {&from_facts, &from_script}) {
      for (const auto& r : *list) {
        if (r.check != name) continue;
        if (!any) {
          merged.status = r.status;
          merged.detail = r.detail;
          merged.seconds = r.seconds;
        } else {
          merge_into(merged, r);
        }
        any = true;
      }
    }
    if (!any) {
      const bool custom = std::any_of(member(settings, "custom").begin(), member(settings, "custom").end(),
                                    [&](const json& c) { return text(c, "name") == name; });
    const bool has_work = custom || (name == "storage" && !member(settings, "mounts").empty()) ||
                            (name == "monitoring" && !member(settings, "exporters").empty()) ||
                            (name == "scheduler" && member(settings, "slurm").is_object());
      merged.status = has_work ? CheckStatus::Fail : CheckStatus::Skip;
      merged.detail = has_work ? "no result: the check script stopped early" : "nothing to check in the spec";
    }
    out.push_back(merged);
  }
  return out;
}

bool all_passed(const std::vector<CheckResult>& results) {
  return std::none_of(results.begin(), results.end(), [](const CheckResult& r) { return r.status == CheckStatus::Fail; });
}

std::string failure_summary(const std::vector<CheckResult>& results) {
  std::string out;
  for (const auto& r : results) {
    if (r.status == CheckStatus::Fail) out += (out.empty() ? "" : "; ") + r.check + ": " + r.detail;
  }
  return out;
}

AcceptanceCommand release_command(const json& settings) {
  std::string command;
  const json& slurm = member(settings, "slurm");
  if (slurm.is_object()) {
    const std::string r = q(text(slurm, "reservation"));
    command += "if scontrol show reservation " + r + " >/dev/null 2>&1; then scontrol delete reservation=" + r +
               " || exit 1; fi; ";
  }
  const std::string record = acceptance_record(settings);
  command += std::string("mkdir -p /var/lib/gpuexpand && t=$(mktemp /var/lib/gpuexpand/.accepted.XXXXXX) && ") +
             kRemoveTempOnExit + " && cat > \"$t\" && " +
             holds_bytes_test("\"$t\"", record.size()) + " && chmod 0644 \"$t\" && mv -f \"$t\" " +
             q(kAcceptanceRecordPath) + " || exit 1";  // the EXIT trap removes $t
  return {command, record};
}

std::string drain_command(const json& settings, const std::string& reason) {
  if (!member(settings, "slurm").is_object()) return "true";
  std::string why = "gpuexpand acceptance: " + reason;
  if (why.size() > 250) why = why.substr(0, 247) + "...";
  for (char& c : why) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return "scontrol update nodename=" + q(text(settings, "node")) + " state=drain reason=" + q(why);
}

std::string multinode_command(const std::vector<std::string>& nodes, int job_timeout_seconds) {
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
  return "timeout " + std::to_string(job_timeout_seconds) + " srun -Q -N " + std::to_string(nodes.size()) + " -w " +
         q(list) + " -t 2 -J gpuexpand-multinode hostname 2>&1";
}

std::vector<std::vector<size_t>> multinode_groups(size_t count, long per_job) {
  std::vector<std::vector<size_t>> groups;
  if (count < 2) return groups;
  const size_t size = per_job >= 2 ? std::min(static_cast<size_t>(per_job), count) : count;
  for (size_t i = 0; i < count; ++i) {
    if (groups.empty() || groups.back().size() == size) groups.emplace_back();
    groups.back().push_back(i);
  }
  if (groups.size() > 1 && groups.back().size() < 2) {
    const size_t last = groups.back().front();
    groups.pop_back();
    groups.back().push_back(last);
  }
  return groups;
}

CheckResult multinode_result(const std::vector<std::string>& nodes, int exit_code, const std::string& output,
                             double seconds) {
  std::multiset<std::string> ran, wanted(nodes.begin(), nodes.end());
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) ran.insert(line);
  }
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ", ") + n;
  CheckResult r = result("multinode", CheckStatus::Pass, "one job ran on " + std::to_string(nodes.size()) + " nodes: " + list);
  r.seconds = seconds;
  if (exit_code == 124) {
    r.status = CheckStatus::Fail;
    r.detail = "the job over " + list + " did not run in time";
  } else if (exit_code != 0 || ran != wanted) {
    std::string tail = output.size() > 200 ? output.substr(output.size() - 200) : output;
    for (char& c : tail) {
      if (c == '\n') c = ' ';
    }
    r.status = CheckStatus::Fail;
    r.detail = "the job over " + list + " failed (exit " + std::to_string(exit_code) + "): " + tail;
  }
  return r;
}

}  // namespace gpuexpand
