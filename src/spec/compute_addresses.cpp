#include "compute_addresses.hpp"

#include <algorithm>

#include "gpuexpand/spec/yaml_document.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/util/ipv4.hpp"
#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_of(const json* value) { return value && value->is_string() ? value->get<std::string>() : ""; }

const char* const kCidrForm = "an IPv4 address in CIDR form like 10.1.0.5/16";

}  // namespace

void check_compute_interface_addresses(const json& network, const std::function<std::string(const std::string&)>& at,
                                       const std::function<void(const std::string&, const std::string&)>& error) {
  const json* list = member(network, "compute_interfaces");
  if (!list || !list->is_array()) return;
  for (size_t j = 0; j < list->size(); ++j) {
    const json& interface = (*list)[j];
    const std::string here = "/network/compute_interfaces/" + std::to_string(j);
    const std::string label = "network.compute_interfaces[" + string_of(member(interface, "name")) + "]";
    const json* address = member(interface, "address");
    const json* offset = member(interface, "address_offset");
    const json* prefix = member(interface, "prefix_length");
    if (address && offset) {
      error(at(here + "/address_offset"),
            label + ": give either address (one node's) or address_offset (derived per node), not both");
    }
    if (offset && !prefix) {
      error(at(here + "/address_offset"), label + ".address_offset needs prefix_length: the subnet's prefix, e.g. 16");
    }
    if (prefix && !offset) error(at(here + "/prefix_length"), label + ".prefix_length goes with address_offset");
    if (address && address->is_string()) {
      const std::string text = address->get<std::string>();
      if (auto cidr = parse_ipv4_cidr(text); !cidr) {
        error(at(here + "/address"), label + ".address: '" + text + "' is not " + kCidrForm);
      } else if (cidr->is_network_or_broadcast()) {
        error(at(here + "/address"), label + ".address: " + text + " is the network or broadcast address of its subnet");
      }
    }
    if (offset && offset->is_string() && !parse_ipv4(offset->get<std::string>())) {
      error(at(here + "/address_offset"), label + ".address_offset: '" + offset->get<std::string>() +
                                              "' is not an offset written like an IPv4 address (four parts 0-255)");
    }
  }
}

std::vector<ComputeAddresses> ComputeAddressBook::resolve(const Entry& e) {
  const size_t count = e.names.size();
  const std::string label = human_path(e.pointer);
  std::vector<ComputeAddresses> out(count);
  bool failed = false;

  const json* network = member(e.settings, "network");
  const json* interfaces = network ? member(*network, "compute_interfaces") : nullptr;
  std::vector<std::string> interface_names;
  if (interfaces && interfaces->is_array()) {
    for (const auto& i : *interfaces) {
      if (std::string name = string_of(member(i, "name")); !name.empty()) interface_names.push_back(name);
    }
  }

  // The entry's own host lists, one per interface.
  std::map<std::string, std::vector<Ipv4Cidr>> given;
  std::map<std::string, std::string> given_at;
  if (const json* map = member(e.entry, "compute_addresses"); map && map->is_object()) {
    for (const auto& [interface, value] : map->items()) {
      const std::string at = json_pointer_append(e.pointer + "/compute_addresses", interface);
      if (std::find(interface_names.begin(), interface_names.end(), interface) == interface_names.end()) {
        std::string message = label + ".compute_addresses: '" + interface + "' is not a compute interface of these nodes";
        if (interface_names.empty()) {
          message += " (they have no network.compute_interfaces)";
        } else if (auto suggestion = closest_match(interface, interface_names)) {
          message += " (did you mean '" + *suggestion + "'?)";
        }
        error_(at, message, true);
        failed = true;
        continue;
      }
      if (!value.is_string()) continue;  // the schema reported it
      const std::string text = value.get<std::string>();
      auto expanded = expand_hostlist(text);
      if (!expanded) {
        error_(at, label + ".compute_addresses." + interface + ": " + expanded.error().message, false);
        failed = true;
        continue;
      }
      if (expanded->size() != count) {
        error_(at, label + ": the entry has " + std::to_string(count) + (count == 1 ? " node" : " nodes") +
                       " but compute_addresses." + interface + " '" + text + "' has " +
                       std::to_string(expanded->size()) + (expanded->size() == 1 ? " address" : " addresses"),
               false);
        failed = true;
        continue;
      }
      std::vector<Ipv4Cidr> cidrs;
      for (const auto& item : *expanded) {
        auto cidr = parse_ipv4_cidr(item);
        if (!cidr) {
          error_(at, label + ".compute_addresses." + interface + ": '" + item + "' is not " + kCidrForm, false);
        } else if (cidr->is_network_or_broadcast()) {
          error_(at, label + ".compute_addresses." + interface + ": " + item +
                         " is the network or broadcast address of its subnet",
                 false);
        } else {
          cidrs.push_back(*cidr);
          continue;
        }
        failed = true;
        break;
      }
      if (cidrs.size() == count) {
        given[interface] = std::move(cidrs);
        given_at[interface] = at;
      }
    }
  }

  const std::string entry_at = e.pointer + (member(e.entry, "hosts") ? "/hosts" : "/name");
  if (interfaces && interfaces->is_array()) {
    for (const auto& interface : *interfaces) {
      const std::string name = string_of(member(interface, "name"));
      if (name.empty()) continue;
      const std::string what = "network.compute_interfaces[" + name + "]";
      std::vector<std::pair<uint32_t, std::string>> made;  // address, node
      std::string at = entry_at;
      if (auto it = given.find(name); it != given.end()) {
        at = given_at[name];
        for (size_t k = 0; k < count; ++k) {
          out[k].emplace_back(name, it->second[k].to_string());
          made.emplace_back(it->second[k].address, e.names[k]);
        }
      } else if (const json* address = member(interface, "address"); address && address->is_string()) {
        auto cidr = parse_ipv4_cidr(address->get<std::string>());
        if (!cidr || cidr->is_network_or_broadcast()) continue;  // check_compute_interface_addresses reported it
        if (count > 1) {
          error_(entry_at, label + ": " + what + ".address would give all " + std::to_string(count) +
                               " nodes of this entry the same address; give them compute_addresses (a host list "
                               "paired with hosts) or address_offset",
                 false);
          failed = true;
          continue;
        }
        out[0].emplace_back(name, cidr->to_string());
        made.emplace_back(cidr->address, e.names[0]);
      } else if (const json* offset = member(interface, "address_offset"); offset && offset->is_string()) {
        auto step = parse_ipv4(offset->get<std::string>());
        const json* prefix = member(interface, "prefix_length");
        if (!step || !prefix || !prefix->is_number_integer()) continue;  // reported per settings
        for (size_t k = 0; k < count; ++k) {
          const std::string& management = e.management.empty() ? e.names[k] : e.management[k];
          auto base = parse_ipv4(management);
          if (!base) {
            error_(e.management_pointer, label + ": " + what + ".address_offset adds to each node's IPv4 management "
                                             "address, but " + e.names[k] + " is reached at '" + management + "'",
                   false);
            failed = true;
            break;
          }
          const uint64_t sum = uint64_t{*base} + *step;
          Ipv4Cidr cidr{static_cast<uint32_t>(sum), prefix->get<int>()};
          if (sum > 0xFFFFFFFFull || cidr.is_network_or_broadcast()) {
            error_(e.management_pointer,
                   label + ": " + what + ".address_offset " + offset->get<std::string>() + " makes " + e.names[k] +
                       "'s address " + (sum > 0xFFFFFFFFull ? "overflow past 255.255.255.255" :
                                        cidr.to_string() + ", the network or broadcast address of its subnet"),
                   false);
            failed = true;
            break;
          }
          out[k].emplace_back(name, cidr.to_string());
          made.emplace_back(cidr.address, e.names[k]);
        }
      }
      if (!failed) record(made, e, at);
    }
  }
  if (failed) return std::vector<ComputeAddresses>(count);
  return out;
}

void ComputeAddressBook::record(const std::vector<std::pair<uint32_t, std::string>>& addresses, const Entry& e,
                                const std::string& pointer) {
  std::map<std::pair<size_t, int>, std::vector<std::string>> clashes;  // (entry, line) -> addresses
  for (const auto& [address, node] : addresses) {
    auto [it, fresh] = seen_.emplace(address, Seen{e.index, e.line, pointer});
    if (!fresh) clashes[{it->second.entry, it->second.line}].push_back(format_ipv4(address));
  }
  for (const auto& [other, clashing] : clashes) {
    std::string message = std::string("duplicate compute ") + (clashing.size() > 1 ? "addresses " : "address ") +
                          fold_hostlist(clashing);
    message += other.first == e.index ? " within this entry"
                                      : " (already in nodes[" + std::to_string(other.first) + "] on line " +
                                            std::to_string(other.second) + ")";
    error_(pointer, message, false);
  }
}

void ComputeAddressBook::check_against_management(
    const std::map<std::string, std::pair<size_t, int>>& management_addresses) {
  std::map<std::string, std::vector<std::string>> clashes;  // where the compute address was given -> addresses
  std::map<std::string, std::pair<size_t, int>> first_owner;
  for (const auto& [address, seen] : seen_) {
    auto it = management_addresses.find(format_ipv4(address));
    if (it == management_addresses.end()) continue;
    clashes[seen.pointer].push_back(it->first);
    first_owner.emplace(seen.pointer, it->second);
  }
  for (const auto& [pointer, addresses] : clashes) {
    const auto& owner = first_owner[pointer];
    error_(pointer,
           std::string("compute ") + (addresses.size() > 1 ? "addresses " : "address ") + fold_hostlist(addresses) +
               (addresses.size() > 1 ? " are" : " is") + " also management (SSH) " +
               (addresses.size() > 1 ? "addresses" : "address") + " of nodes (nodes[" + std::to_string(owner.first) +
               "] on line " + std::to_string(owner.second) + ")",
           false);
  }
}

}  // namespace gpuexpand
