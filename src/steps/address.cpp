// address: the IPv4 addresses an interface has now, exactly the step's
// (the persistent configuration is a file step: systemd-networkd or a
// NetworkManager keyfile). The phase's checkpoint keeps the interface's
// addresses and its restore puts back exactly those.

#include "gpuexpand/steps/decision.hpp"
#include "gpuexpand/util/ipv4.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "kinds.hpp"

#include <algorithm>
#include <regex>

namespace gpuexpand::steps {
namespace {

bool is_ipv4(const std::string& address) { return address.find('.') != std::string::npos; }

class Address final : public StepKind {
 public:
  Address() : StepKind("address", {"interface", "addresses"}) {}

  Result<void> check_rendered(const json& params) const override {
    static const std::regex interface_name("^[A-Za-z0-9_.:-]{1,15}$");
    const std::string interface = string_param(params, "interface");
    if (!std::regex_match(interface, interface_name) || interface == "." || interface == "..") {
      return make_error("'interface' must be an interface name (at most 15 letters, digits, '_', '.', ':', '-'), got " +
                        params.value("interface", json()).dump());
    }
    if (auto shape = need_names(params.contains("addresses") ? json{{"names", params["addresses"]}} : json::object());
        !shape) {
      return make_error("'addresses' must be an address or a list of addresses");
    }
    for (const auto& a : param_names(params["addresses"])) {
      auto cidr = parse_ipv4_cidr(a);
      if (!cidr) return make_error("'addresses': '" + a + "' is not an IPv4 address in CIDR form like 10.1.0.5/16");
      if (cidr->to_string() != a) return make_error("'addresses': write '" + a + "' as " + cidr->to_string());
    }
    return {};
  }

  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const std::string name = string_param(step.params, "interface");
    const auto wanted = param_names(step.params["addresses"]);
    const json* interface = find_interface(facts, name);
    if (!interface) {
      if (!member(facts, "network")) {
        d.add(ChangeAction::Unknown, "address " + name, "not in the facts; decided on the node");
      } else {
        d.add(ChangeAction::Update, "address " + name, "the node has no interface " + name);
      }
      return;
    }
    const auto current = ipv4_addresses(*interface);
    for (const auto& a : wanted) {
      if (std::find(current.begin(), current.end(), a) == current.end()) {
        d.add(ChangeAction::Create, "address " + name + " " + a, "not on " + name);
      }
    }
    for (const auto& a : current) {
      if (std::find(wanted.begin(), wanted.end(), a) == wanted.end()) {
        d.add(ChangeAction::Remove, "address " + name + " " + a, "on " + name + ", not in the spec");
      }
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    const std::string name = string_param(step.params, "interface");
    json* interfaces = facts.contains("network") && facts["network"].is_object() && facts["network"].contains("interfaces")
                           ? &facts["network"]["interfaces"]
                           : nullptr;
    if (!interfaces || !interfaces->is_array()) return;
    for (auto& i : *interfaces) {
      if (!i.is_object() || i.value("name", "") != name) continue;
      json kept = json::array();
      for (const auto& a : i.value("addresses", json::array())) {
        if (a.is_string() && !is_ipv4(a.get<std::string>())) kept.push_back(a);
      }
      for (const auto& a : param_names(step.params.value("addresses", json()))) kept.push_back(a);
      i["addresses"] = kept;
    }
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    touch.interfaces.insert(string_param(step.params, "interface"));
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    const std::string dev = shell_quote(string_param(step.params, "interface"));
    const auto wanted = param_names(step.params.value("addresses", json()));
    // The wanted addresses first, then the others go: a session over this
    // interface keeps an address throughout. Deleting a subnet's primary
    // address takes its secondaries with it (unless promote_secondaries),
    // so an address may be gone before its turn, and the wanted ones are
    // put back at the end.
    std::string add, keep;
    for (const auto& a : wanted) {
      add += " && ip addr replace " + shell_quote(a) + " brd + dev " + dev;
      keep += (keep.empty() ? "" : "|") + shell_quote(a);
    }
    const std::string command = "ip link set dev " + dev + " up" + add + " && for a in $(ip -4 -o addr show dev " +
                                dev + " | awk '{print $4}'); do case $a in " + keep + ") ;; *) ip addr del \"$a\" dev " +
                                dev + " 2>/dev/null || ! ip -4 -o addr show dev " + dev +
                                " | grep -qF \" $a \" || exit 1 ;; esac; done" + add;
    return ActionCommand{command, ""};
  }

 private:
  static const json* find_interface(const json& facts, const std::string& name) {
    const json* network = member(facts, "network");
    const json* interfaces = network ? member(*network, "interfaces") : nullptr;
    if (!interfaces || !interfaces->is_array()) return nullptr;
    for (const auto& i : *interfaces) {
      if (i.is_object() && i.value("name", "") == name) return &i;
    }
    return nullptr;
  }

  static std::vector<std::string> ipv4_addresses(const json& interface) {
    std::vector<std::string> out;
    for (const auto& a : interface.value("addresses", json::array())) {
      if (a.is_string() && is_ipv4(a.get<std::string>())) out.push_back(a.get<std::string>());
    }
    return out;
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(address, Address)

}  // namespace gpuexpand::steps
