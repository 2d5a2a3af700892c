#include "gpuexpand/accept/acceptance.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>

#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string q(const std::string& s) { return shell_quote(s); }

const json& member(const json& object, const char* key) {
  static const json null;
  if (!object.is_object()) return null;
  auto it = object.find(key);
  return it == object.end() ? null : *it;
}

std::string text(const json& object, const char* key, const std::string& fallback = "") {
  const json& v = member(object, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

long number(const json& object, const char* key, long fallback) {
  const json& v = member(object, key);
  return v.is_number_integer() ? v.get<long>() : fallback;
}

bool wants(const json& settings, const std::string& check) {
  const json& checks = member(settings, "checks");
  return checks.is_array() && std::find(checks.begin(), checks.end(), json(check)) != checks.end();
}

std::vector<std::string> strings(const json& list) {
  std::vector<std::string> out;
  if (list.is_array()) {
    for (const auto& v : list) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

CheckResult result(const std::string& check, CheckStatus status, const std::string& detail) {
  CheckResult r;
  r.check = check;
  r.status = status;
  r.detail = detail;
  return r;
}

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
  if (!wanted_driver.empty() && driver != wanted_driver) {
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

// In a shell function that measured $bw: fail the network check when it
// is below `min` (nothing when the spec sets no minimum). `what` may use
// the function's variables; it is put in double quotes.
std::string below_minimum(const json& min, const std::string& what, const std::string& unit) {
  if (!min.is_number()) return "";
  const std::string m = min.dump();
  return "  if ! awk -v b=\"$bw\" -v m=" + q(m) + " 'BEGIN {exit !(b + 0 >= m + 0)}'; then res network fail \"$t\" \"" +
         what + ", below the minimum " + m + " " + unit + "\"; return; fi\n";
}

}  // namespace

std::string acceptance_reservation(const std::string& node) { return "gpuexpand-accept-" + node; }

const std::vector<std::string>& builtin_checks() {
  static const std::vector<std::string> names = {"scheduler", "gpu", "network", "storage", "monitoring", "multinode"};
  return names;
}

bool is_builtin_check(const std::string& name) {
  const auto& names = builtin_checks();
  return std::find(names.begin(), names.end(), name) != names.end();
}

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
      return make_error("check '" + name + "' is not a builtin check (scheduler, gpu, network, storage, monitoring, "
                        "multinode) and has no 'command'");
    }
    if (name == "acceptance" || name == "fault-drill") return make_error("'" + name + "' is a reserved check name");
  }
  return {};
}

json acceptance_settings(const json& vars, const json& declared) {
  const std::string node = text(member(vars, "node"), "name");
  json settings = {{"node", node}};
  const json& validation = member(vars, "validation");
  settings["job_timeout"] = number(validation, "job_timeout", 120);
  // Only when set: a record made without them stays valid.
  if (validation.is_object() && validation.contains("multinode_nodes")) {
    settings["multinode_nodes"] = number(validation, "multinode_nodes", 0);
  }
  for (const char* key : {"min_rdma_gbps", "min_nccl_busbw"}) {
    if (validation.is_object() && validation.contains(key) && validation[key].is_number()) settings[key] = validation[key];
  }

  const json& gpu = member(vars, "gpu");
  if (gpu.is_object() && (gpu.contains("expected_count") || gpu.contains("driver_version"))) {
    json expected = json::object();
    for (const char* key : {"expected_count", "expected_model", "driver_version", "persistence_mode"}) {
      if (gpu.contains(key)) expected[key] = gpu[key];
    }
    expected["max_ecc_errors"] = number(validation, "max_ecc_errors", 0);
    settings["gpu"] = expected;
  } else {
    settings["gpu"] = nullptr;
  }

  const json& scheduler = member(vars, "scheduler");
  const std::string kind = text(scheduler, "kind", "none");
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
    for (const json* other : others) {
      if (!other) continue;
      if (std::string address = ipv4_of(*other, name); !address.empty()) {
        peers[name] = address;
        break;
      }
    }
  }
  return peers;
}

std::string acceptance_script(const json& settings, const PingPeers& peers, AcceptanceMode mode,
                              const NodeHardware& hardware) {
  const RdmaPairs& rdma = hardware.rdma;
  const std::string node = text(settings, "node");
  const long job_timeout = number(settings, "job_timeout", 120);
  std::string s;
  s += "# gpuexpand acceptance checks\n";
  s += kRemoteScriptEnvironment;
  s += "now() { date +%s%N; }\n";
  // res CHECK STATUS START DETAIL: one result line, detail on one line.
  s += "res() { printf '@@check %s %s %s %s\\n' \"$1\" \"$2\" \"$(awk -v a=\"$3\" -v b=\"$(now)\" "
       "'BEGIN{printf \"%.2f\", (b-a)/1e9}')\" \"$(printf '%s' \"$4\" | tr '\\n\\t' '  ' | cut -c1-400)\"; }\n";
  s += "N=" + q(node) + "\n";

  const json& slurm = member(settings, "slurm");
  if (wants(settings, "scheduler") && slurm.is_object()) {
    s += "R=" + q(text(slurm, "reservation")) + "\n";
    s += "sched() {\n";
    s += "  t=$(now)\n";
    s += "  line=$(timeout 15 scontrol show node \"$N\" -o 2>&1)\n";
    s += "  case \"$line\" in NodeName=*) ;; *) res scheduler fail \"$t\" \"not registered with the controller: $line\"; "
         "return;; esac\n";
    s += "  f() { printf '%s\\n' \"$line\" | tr ' ' '\\n' | sed -n \"s/^$1=//p\" | head -n 1; }\n";
    if (mode == AcceptanceMode::Apply) {
      // A node gpuexpand drained after a failed acceptance gets another
      // chance; the reservation still keeps user jobs off it.
      s += "  case \"$(f State)\" in *DRAIN*) if printf '%s' \"$line\" | grep -q ' Reason=gpuexpand acceptance'; then\n";
      s += "    scontrol update nodename=\"$N\" state=resume >/dev/null 2>&1; sleep 2;"
           " line=$(timeout 15 scontrol show node \"$N\" -o 2>&1); fi;; esac\n";
    }
    // A node (re)registered a moment ago can show NOT_RESPONDING until the
    // controller's next ping: give it up to 30 s before judging.
    s += "  i=0; while [ $i -lt 30 ] && printf '%s' \"$(f State)\" | grep -q NOT_RESPONDING; do sleep 1; i=$((i + 1));"
         " line=$(timeout 15 scontrol show node \"$N\" -o 2>&1); done\n";
    s += "  state=$(f State); feats=$(f AvailableFeatures); gres=$(f Gres)\n";
    s += "  case \"$state\" in *DRAIN*|*DOWN*|*FAIL*|*INVAL*|*NOT_RESPONDING*|*FUTURE*) res scheduler fail \"$t\" "
         "\"state $state$(printf '%s' \"$line\" | sed -n 's/.* Reason=/, reason: /p')\"; return;; esac\n";
    s += "  missing=\n";
    for (const auto& feature : strings(member(slurm, "features"))) {
      s += "  case \",$feats,\" in *," + q(feature) + ",*) ;; *) missing=\"$missing feature \"" + q(feature) + ";; esac\n";
    }
    for (const auto& gres : strings(member(slurm, "gres"))) {
      s += "  case \",$gres,\" in *," + q(gres) + ",*|*," + q(gres) + "\\(*) ;; *) missing=\"$missing GRES \"" + q(gres) +
           ";; esac\n";
    }
    s += "  [ -z \"$missing\" ] || { res scheduler fail \"$t\" \"missing$missing (the controller has Features=$feats "
         "Gres=$gres)\"; return; }\n";
    s += "  r=; scontrol show reservation \"$R\" >/dev/null 2>&1 && r=\"--reservation=$R\"\n";
    s += "  out=$(timeout " + std::to_string(job_timeout) +
         " srun -Q $r -w \"$N\" -N 1 -n 1 -t 2 -J gpuexpand-acceptance hostname 2>&1); rc=$?\n";
    s += "  if [ $rc -eq 0 ] && [ \"$out\" = \"$N\" ]; then res scheduler pass \"$t\" \"state $state, features $feats, "
         "GRES $gres; a test job ran on $N${r:+ in reservation $R}\"\n";
    // The hold as a field of its own (verify leaves a held node out of the
    // multi-node job: one job runs in at most one reservation).
    s += "    [ -z \"$r\" ] || printf '@@held %s\\n' \"$R\"\n";
    s += "  elif [ $rc -eq 124 ]; then res scheduler fail \"$t\" \"the test job did not run within " +
         std::to_string(job_timeout) + " s\"\n";
    s += "  else res scheduler fail \"$t\" \"the test job failed (exit $rc): $out\"; fi\n";
    s += "}\nsched\n";
  }

  if (wants(settings, "network")) {
    for (const auto& i : member(settings, "interfaces")) {
      const std::string name = text(i, "name");
      const long mtu = number(i, "mtu", 1500);
      const std::string size = std::to_string(mtu - 28);  // IPv4 + ICMP headers
      auto peer = peers.find(name);
      s += "t=$(now)\n";
      if (peer == peers.end()) {
        s += "res network skip \"$t\" " + q(name + ": no other node of this run has an IPv4 address on " + name +
                                             " to ping") + "\n";
        continue;
      }
      const std::string what = name + ": " + std::to_string(mtu) + "-byte packets ";
      s += "if ! command -v ping >/dev/null 2>&1; then res network fail \"$t\" 'ping is not installed (iputils-ping)'\n";
      s += "elif ping -M do -s " + size + " -c 2 -W 2 -I " + q(name) + " " + q(peer->second) +
           " >/dev/null 2>&1; then res network pass \"$t\" " + q(what + "reach " + peer->second + " unfragmented") + "\n";
      s += "else res network fail \"$t\" " +
           q(what + "do not reach " + peer->second + " (ping -M do -s " + size + ")") + "; fi\n";
    }
  }

  if (wants(settings, "network") && text(settings, "rdma", "none") != "none" && !rdma.empty()) {
    // HCA to HCA on this node: the server on B, the client on A, the
    // out-of-band exchange over 127.0.0.1; the writes cross the fabric.
    // perftest prints a table under "BW average[Gb/sec]": the last row's
    // fourth column is the average.
    const json& min = member(settings, "min_rdma_gbps");
    // rdma_bw DEV_A PORT_A DEV_B PORT_B TCP_PORT: the client retries
    // while the server is not listening yet; the server never outlives it.
    s += "rdma_bw() {\n  t=$(now)\n";
    s += "  if ! command -v ib_write_bw >/dev/null 2>&1; then res network fail \"$t\" 'ib_write_bw is not installed "
         "(perftest)'; return; fi\n";
    s += "  timeout 60 ib_write_bw -d \"$3\" -i \"$4\" -p \"$5\" -D 5 -F --report_gbits >/dev/null 2>&1 &\n  srv=$!\n";
    s += "  n=0\n  while :; do\n    sleep 1\n";
    s += "    out=$(timeout 60 ib_write_bw -d \"$1\" -i \"$2\" -p \"$5\" -D 5 -F --report_gbits 127.0.0.1 2>&1); rc=$?\n";
    s += "    n=$((n + 1))\n    case \"$out\" in *\"Couldn't connect\"*) [ $n -lt 3 ] && continue ;; esac\n    break\n  done\n";
    s += "  kill \"$srv\" 2>/dev/null; wait \"$srv\" 2>/dev/null\n";
    s += "  bw=$(printf '%s\\n' \"$out\" | awk '/BW average\\[Gb\\/sec\\]/ {h = 1; next} h && $1 ~ /^[0-9]+$/ && NF >= 4 "
         "{v = $4} END {if (v != \"\") print v}')\n";
    s += "  if [ $rc -ne 0 ] || [ -z \"$bw\" ]; then res network fail \"$t\" \"ib_write_bw $1 -> $3 failed (exit $rc): "
         "$(printf '%s' \"$out\" | tail -n 2)\"; return; fi\n";
    s += below_minimum(min, "ib_write_bw $1 -> $3: $bw Gb/s", "Gb/s");
    s += "  res network pass \"$t\" \"ib_write_bw $1 -> $3: $bw Gb/s\"\n}\n";
    for (size_t k = 0; k < rdma.size(); ++k) {
      const auto& [a, b] = rdma[k];
      s += "rdma_bw " + q(a.device) + " " + std::to_string(a.port) + " " + q(b.device) + " " + std::to_string(b.port) +
           " " + std::to_string(18515 + k) + "\n";
    }
  }

  if (wants(settings, "network") && hardware.gpus >= 2) {
    // NCCL over the node's GPUs (NVLink/NVSwitch), where nccl-tests is
    // installed (it is not packaged: a skip says so). nccl-tests ends with
    // "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth : X".
    const json& min = member(settings, "min_nccl_busbw");
    const std::string g = std::to_string(hardware.gpus);
    s += "nccl() {\n  t=$(now)\n";
    s += "  if ! command -v all_reduce_perf >/dev/null 2>&1; then res network skip \"$t\" 'NCCL: all_reduce_perf "
         "(nccl-tests) is not installed'; return; fi\n";
    s += "  out=$(timeout " + std::to_string(job_timeout) + " all_reduce_perf -b 8M -e 256M -f 2 -g " + g +
         " 2>&1); rc=$?\n";
    s += "  bw=$(printf '%s\\n' \"$out\" | sed -n 's/^# Avg bus bandwidth *: *\\([0-9.][0-9.]*\\).*/\\1/p' | tail -n 1)\n";
    s += "  wrong=$(printf '%s\\n' \"$out\" | sed -n 's/^# Out of bounds values *: *\\([0-9][0-9]*\\).*/\\1/p' | tail -n 1)\n";
    s += "  if [ $rc -ne 0 ] || [ -z \"$bw\" ]; then res network fail \"$t\" \"NCCL: all_reduce_perf over " + g +
         " GPUs failed (exit $rc): $(printf '%s' \"$out\" | tail -n 2)\"; return; fi\n";
    s += "  if [ \"${wrong:-0}\" != 0 ]; then res network fail \"$t\" \"NCCL: all_reduce_perf over " + g +
         " GPUs: $wrong out-of-bounds values\"; return; fi\n";
    s += below_minimum(min, "NCCL: all_reduce_perf over " + g + " GPUs: bus bandwidth $bw GB/s", "GB/s");
    s += "  res network pass \"$t\" \"NCCL: all_reduce_perf over " + g + " GPUs: bus bandwidth $bw GB/s\"\n}\nnccl\n";
  }

  if (wants(settings, "network")) {
    const json& pfc = member(settings, "pfc_on");
    const json& ecn = member(settings, "ecn_priorities");
    if (const json& topo = member(settings, "nccl_topology_file"); topo.is_string()) {
      const std::string path = topo.get<std::string>();
      s += "t=$(now); if grep -q '<system' " + q(path) + " 2>/dev/null; then res network pass \"$t\" " +
           q("NCCL topology " + path + " present") + "; else res network fail \"$t\" " +
           q("NCCL topology " + path + " is missing or not an NCCL topology (no <system>)") + "; fi\n";
    }
    for (const auto& i : member(settings, "interfaces")) {
      const std::string name = text(i, "name");
      const std::string qname = q(name);
      if (pfc.is_string()) {
        const std::string want = pfc.get<std::string>();
        s += "t=$(now); if cur=$(dcb pfc show dev " + qname + " prio-pfc 2>/dev/null); then got=$(printf '%s\n' $cur | "
             "sed -n 's/^\\([0-7]\\):on$/\\1/p' | sort -n | paste -sd, -)\n";
        s += "  if [ \"$got\" = " + q(want) + " ]; then res network pass \"$t\" " + q(name + ": PFC on priorities " + want) +
             "; else res network fail \"$t\" " + q(name + ": PFC on priorities ") + "\"${got:-none}\"" +
             q(", expected " + want) + "; fi\n";
        s += "else res network skip \"$t\" " +
             q(name + ": PFC not checked: the NIC has no DCB support (dcb pfc show failed)") + "; fi\n";
      }
      if (ecn.is_string()) {
        const std::string e = "/sys/class/net/" + name + "/ecn";
        s += "t=$(now); if [ -d " + q(e + "/roce_np/enable") + " ]; then bad=\n";
        s += "  for p in $(printf '%s' " + q(ecn.get<std::string>()) +
             " | tr ',' ' '); do for s in roce_np roce_rp; do [ \"$(cat " + q(e) +
             "/$s/enable/$p 2>/dev/null)\" = 1 ] || bad=\"$bad $s/$p\"; done; done\n";
        s += "  if [ -z \"$bad\" ]; then res network pass \"$t\" " + q(name + ": ECN on for the lossless priorities") +
             "; else res network fail \"$t\" " + q(name + ": ECN off for") + "\"$bad\"; fi\n";
        s += "else res network skip \"$t\" " + q(name + ": ECN not checked: no mlx5 ECN controls in " + e) + "; fi\n";
      }
    }
  }

  if (wants(settings, "storage")) {
    for (const auto& m : member(settings, "mounts")) {
      const std::string mp = text(m, "mountpoint");
      const long min = number(m, "min_mbps", 0);
      const std::string qmp = q(mp);
      s += "t=$(now); f=" + q(mp + "/.gpuexpand-acceptance-" + node) + "\n";
      s += "if ! mountpoint -q " + qmp + "; then res storage fail \"$t\" " + q(mp + " is not mounted") + "\n";
      s += "elif s=$(now) && dd if=/dev/zero of=\"$f\" bs=1M count=32 conv=fsync 2>/dev/null; then e=$(now)\n";
      // Read back what was written (the size proves it; the page cache
      // may serve it, so no read figure is claimed).
      s += "  r=$(dd if=\"$f\" bs=1M 2>/dev/null | wc -c); rm -f \"$f\"\n";
      // 32 MiB = 33.554432 MB
      s += "  mbps=$(awk -v a=\"$s\" -v b=\"$e\" 'BEGIN{d=(b-a)/1e9; if (d<=0) d=1e-9; printf \"%d\", 33.554432/d}')\n";
      s += "  if [ \"$r\" -ne 33554432 ]; then res storage fail \"$t\" " + q(mp + ": ") +
           "\"read back $r of 33554432 bytes written\"\n";
      s += "  elif [ \"$mbps\" -lt " + std::to_string(min) + " ]; then res storage fail \"$t\" " + q(mp + ": ") +
           "\"$mbps MB/s write, below the minimum " + std::to_string(min) + " MB/s\"\n";
      s += "  else res storage pass \"$t\" " + q(mp + ": writable, ") + "\"$mbps MB/s write, read back\"; fi\n";
      s += "else rm -f \"$f\"; res storage fail \"$t\" " + q(mp + " is not writable") + "; fi\n";
    }
  }

  if (wants(settings, "monitoring")) {
    s += "scrape() {\n";
    s += "  if command -v curl >/dev/null 2>&1; then curl -fsS --max-time 10 \"http://127.0.0.1:$1/metrics\"\n";
    s += "  elif command -v wget >/dev/null 2>&1; then wget -q -T 10 -O - \"http://127.0.0.1:$1/metrics\"\n";
    s += "  else timeout 10 bash -c 'exec 3<>\"/dev/tcp/127.0.0.1/$0\" && printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3 "
         "&& cat <&3' \"$1\"; fi\n";
    s += "}\n";
    for (const auto& e : member(settings, "exporters")) {
      const std::string port = std::to_string(number(e, "port", 0));
      const std::string metric = text(e, "metric");
      const std::string what = text(e, "name") + " on port " + port;
      s += "t=$(now); if scrape " + port + " 2>/dev/null | grep -q " + q("^" + metric) + "; then res monitoring pass \"$t\" " +
           q(what + " serves " + metric) + "; else res monitoring fail \"$t\" " + q(what + " does not serve " + metric) +
           "; fi\n";
    }
  }
  // The playbook's own checks: each command in its own sh with a time
  // limit; exit 0 passes, its last output line is the detail.
  for (const auto& c : member(settings, "custom")) {
    const std::string name = text(c, "name");
    s += "t=$(now); out=$(timeout " + std::to_string(number(c, "timeout", 60)) + " sh -c " + q(text(c, "command")) +
         " 2>&1 </dev/null); rc=$?; last=$(printf '%s\n' \"$out\" | tail -n 1)\n";
    s += "if [ $rc -eq 0 ]; then res " + q(name) + " pass \"$t\" \"$last\"; elif [ $rc -eq 124 ]; then res " + q(name) +
         " fail \"$t\" \"did not finish within " + std::to_string(number(c, "timeout", 60)) + " s\"; else res " + q(name) +
         " fail \"$t\" \"exit $rc${last:+: $last}\"; fi\n";
  }
  s += "echo @@end\n";
  return s;
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
  command +=
      "mkdir -p /var/lib/gpuexpand && t=$(mktemp /var/lib/gpuexpand/.accepted.XXXXXX) && cat > \"$t\" && chmod 0644 "
      "\"$t\" && mv -f \"$t\" " +
      q(kAcceptanceRecordPath);
  return {command, acceptance_record(settings)};
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
