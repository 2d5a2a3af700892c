// Parsers for ibstat, ibdev2netdev and `rdma link show`, producing
// `network.rdma` ports. Tested on real captures in tests/fixtures/tool-output/.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include "gpuexpand/facts/tool_parsers.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;
using tool_text::lines;
using tool_text::number;
using tool_text::trim;
using tool_text::valid_utf8;

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) != 0) ++i;
    const size_t start = i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) == 0) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  for (const char c : s) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// ibstat says "Active", "Initializing"; rdma says "ACTIVE", "INIT".
std::string port_state(std::string_view s) {
  auto out = lower(s);
  return out == "initializing" ? "init" : out;
}

// ibstat says "LinkUp", "PortConfigurationTraining"; rdma says "LINK_UP",
// "LINK_ERROR_RECOVER": both become snake case.
std::string physical_state(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (std::isupper(c) != 0 && i > 0 && std::islower(static_cast<unsigned char>(s[i - 1])) != 0) out.push_back('_');
    out.push_back(static_cast<char>(std::tolower(c)));
  }
  return out == "link_error_recover" ? "link_error_recovery" : out;
}

std::string at_line(std::string_view tool, size_t line) {
  return std::string(tool) + "line " + std::to_string(line) + ": ";
}

// "mlx5_0/1" -> device, port.
std::optional<std::pair<std::string_view, std::int64_t>> device_port(std::string_view s) {
  const auto slash = s.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  const auto port = number<std::int64_t>(s.substr(slash + 1));
  if (!port) return std::nullopt;
  return std::pair{s.substr(0, slash), *port};
}

constexpr std::string_view kIbstat = "ibstat: ";

struct Ca {
  std::string name;
  json ca_type = nullptr;
  json firmware = nullptr;
  std::optional<std::int64_t> declared_ports;
  std::vector<json> ports;
};

// The fields every port block has; a missing one means cut-short output.
Result<json> finish_ports(const std::vector<Ca>& cas) {
  json out = json::array();
  for (const auto& ca : cas) {
    if (ca.declared_ports && static_cast<std::int64_t>(ca.ports.size()) != *ca.declared_ports) {
      return make_error(std::string(kIbstat) + "CA '" + ca.name + "' lists " + std::to_string(ca.ports.size()) +
                        " of its " + std::to_string(*ca.declared_ports) + " ports");
    }
    for (const auto& port : ca.ports) {
      for (const auto& [key, label] : {std::pair<const char*, const char*>{"state", "State"},
                                       {"physical_state", "Physical state"},
                                       {"rate", "Rate"},
                                       {"link_layer", "Link layer"}}) {
        if (!port.contains(key)) {
          return make_error(std::string(kIbstat) + "CA '" + ca.name + "' port " + port["port"].dump() + " has no " +
                            label);
        }
      }
      json full = port;
      full["ca_type"] = ca.ca_type;
      full["firmware_version"] = ca.firmware;
      out.push_back(std::move(full));
    }
  }
  return out;
}

// One "Key: value" line inside a port block.
Result<bool> port_field(json& port, std::string_view key, std::string_view value, size_t line) {
  const auto integer = [&](const char* name) -> Result<bool> {
    const auto v = number<std::int64_t>(value);
    if (!v) return make_error(at_line(kIbstat, line) + std::string(key) + " '" + std::string(value) + "' is not a number");
    port[name] = *v;
    return true;
  };
  if (key == "State") {
    port["state"] = port_state(value);
  } else if (key == "Physical state") {
    port["physical_state"] = physical_state(value);
  } else if (key == "Rate") {
    // Gb/s as ibstat prints it: "400", "2.5", "53.125".
    const auto gbps = number<double>(value);
    if (!gbps || !std::isfinite(*gbps)) {
      return make_error(at_line(kIbstat, line) + "Rate '" + std::string(value) + "' is not a number");
    }
    port["rate"] = value;
    port["rate_gbps"] = *gbps;
  } else if (key == "Base lid") {
    return integer("base_lid");
  } else if (key == "SM lid") {
    return integer("sm_lid");
  } else if (key == "Port GUID") {
    port["port_guid"] = value;
  } else if (key == "Link layer") {
    port["link_layer"] = lower(value);
  }
  return true;  // LMC, Capability mask, ...: not facts we plan on
}

}  // namespace

Result<json> parse_ibstat(std::string_view text) {
  if (!valid_utf8(text)) return make_error(std::string(kIbstat) + "output is not valid UTF-8");
  const auto all = lines(text);
  std::vector<Ca> cas;
  json* port = nullptr;  // the port block being read, inside cas.back()
  for (size_t i = 0; i < all.size(); ++i) {
    const auto line = trim(all[i]);
    const size_t number_in_text = i + 1;
    if (line.empty()) continue;
    // ibstat exits 255 after "ibpanic: [pid] main: stat of IB device 'mlx5_8'
    // failed: ...": the CAs above it are real but the list is incomplete.
    if (line.starts_with("ibpanic:")) {
      auto why = trim(line.substr(8));
      if (why.starts_with('[')) why = trim(why.substr(std::min(why.size(), why.find(']') + 1)));
      if (why.starts_with("main:")) why = trim(why.substr(5));
      return make_error(std::string(kIbstat) + "ibpanic after " + std::to_string(cas.size()) + " CAs: " +
                        std::string(why));
    }
    if (line.starts_with("CA '") && line.size() > 5 && line.back() == '\'') {
      cas.push_back(Ca{std::string(line.substr(4, line.size() - 5)), nullptr, nullptr, std::nullopt, {}});
      port = nullptr;
      continue;
    }
    if (cas.empty()) continue;  // decided below: no CA at all is its own error
    if (line.starts_with("Port ") && line.back() == ':') {
      const auto n = number<std::int64_t>(line.substr(5, line.size() - 6));
      if (!n) return make_error(at_line(kIbstat, number_in_text) + "bad port number in '" + std::string(line) + "'");
      cas.back().ports.push_back(json{{"device", cas.back().name}, {"port", *n}, {"netdev", nullptr}});
      port = &cas.back().ports.back();
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      return make_error(at_line(kIbstat, number_in_text) + "unexpected text '" + std::string(line) + "'");
    }
    const auto key = trim(line.substr(0, colon));
    const auto value = trim(line.substr(colon + 1));
    if (port != nullptr) {
      if (auto ok = port_field(*port, key, value, number_in_text); !ok) return ok.error();
    } else if (key == "CA type") {
      cas.back().ca_type = value;
    } else if (key == "Firmware version") {
      cas.back().firmware = value;
    } else if (key == "Number of ports") {
      cas.back().declared_ports = number<std::int64_t>(value);
      if (!cas.back().declared_ports) {
        return make_error(at_line(kIbstat, number_in_text) + "Number of ports '" + std::string(value) +
                          "' is not a number");
      }
    }
  }
  if (cas.empty()) return make_error(std::string(kIbstat) + "no CA found");
  // Lines before the first CA are only tolerated when there is no CA at all
  // (that error says more); otherwise they are garbage.
  for (size_t i = 0; i < all.size(); ++i) {
    const auto line = trim(all[i]);
    if (line.starts_with("CA '")) break;
    if (!line.empty()) return make_error(at_line(kIbstat, i + 1) + "unexpected text '" + std::string(line) + "'");
  }
  return finish_ports(cas);
}

Result<json> parse_ibdev2netdev(std::string_view text) {
  constexpr std::string_view kTool = "ibdev2netdev: ";
  if (!valid_utf8(text)) return make_error(std::string(kTool) + "output is not valid UTF-8");
  json out = json::array();
  const auto all = lines(text);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto w = words(all[i]);
    if (w.empty()) continue;
    // mlx5_0 port 1 ==> ens108np0 (Up)
    std::optional<std::int64_t> port;
    if (w.size() == 6 && w[1] == "port" && w[3] == "==>") port = number<std::int64_t>(w[2]);
    const auto state = w.size() == 6 ? w[5] : std::string_view{};
    if (!port || state.size() < 3 || state.front() != '(' || state.back() != ')') {
      return make_error(at_line(kTool, i + 1) + "expected '<device> port <n> ==> <netdev> (<state>)', got '" +
                        std::string(trim(all[i])) + "'");
    }
    out.push_back({{"device", w[0]},
                   {"port", *port},
                   {"netdev", w[4]},
                   {"netdev_state", lower(state.substr(1, state.size() - 2))}});
  }
  return out;
}

Result<json> parse_rdma_link(std::string_view text) {
  constexpr std::string_view kTool = "rdma link: ";
  if (!valid_utf8(text)) return make_error(std::string(kTool) + "output is not valid UTF-8");
  json out = json::array();
  const auto all = lines(text);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto w = words(all[i]);
    if (w.empty()) continue;
    const auto dp = w.size() >= 2 && w[0] == "link" ? device_port(w[1]) : std::nullopt;
    if (!dp) {
      return make_error(at_line(kTool, i + 1) + "expected 'link <device>/<port> ...', got '" +
                        std::string(trim(all[i])) + "'");
    }
    json port = {{"device", dp->first}, {"port", dp->second}, {"netdev", nullptr}};
    // "key value" attributes; IB ports also print subnet_prefix, lid,
    // sm_lid, lmc and newer iproute2 may add more, so only the keys we use
    // are looked for (values are never one of these words).
    for (size_t k = 2; k + 1 < w.size(); ++k) {
      if (w[k] == "state") {
        port["state"] = port_state(w[++k]);
      } else if (w[k] == "physical_state") {
        port["physical_state"] = physical_state(w[++k]);
      } else if (w[k] == "netdev") {
        port["netdev"] = w[++k];
      }
    }
    out.push_back(std::move(port));
  }
  return out;
}

json merge_rdma_netdevs(json ports, const json& netdevs) {
  if (!ports.is_array() || !netdevs.is_array()) return ports;
  for (auto& port : ports) {
    if (!port.is_object()) continue;
    const auto device = port.find("device");
    const auto number_it = port.find("port");
    if (device == port.end() || number_it == port.end()) continue;
    for (const auto& entry : netdevs) {
      if (!entry.is_object()) continue;
      const auto d = entry.find("device");
      const auto p = entry.find("port");
      const auto n = entry.find("netdev");
      if (d != entry.end() && p != entry.end() && n != entry.end() && n->is_string() && *d == *device &&
          *p == *number_it) {
        port["netdev"] = *n;
      }
    }
  }
  return ports;
}

}  // namespace gpuexpand
