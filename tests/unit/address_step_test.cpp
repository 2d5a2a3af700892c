// The address step kind: its decision against the facts' interfaces, the
// predicted facts, the parameters it refuses, its action, and — as root,
// in a network namespace of its own — the action, the checkpoint and the
// restore run for real on a veth interface.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gpuexpand/exec/checkpoint.hpp"
#include "gpuexpand/steps/step_kind.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

json facts_with(const json& addresses) {
  return {{"network", {{"interfaces", json::array({{{"name", "eth0"}, {"addresses", json::array({"198.18.0.11/24"})}},
                                                   {{"name", "eth1"}, {"addresses", addresses}}})}}}};
}

StepInstance instance(const json& addresses) {
  return {"interface-address[eth1]", "address", {{"interface", "eth1"}, {"addresses", addresses}}, {}, {}};
}

std::string changes_text(const std::vector<PlannedChange>& changes) {
  std::string out;
  for (const auto& c : changes) out += std::string(1, action_marker(c.action)) + " " + c.target + ": " + c.reason + "\n";
  return out;
}

TEST(AddressStep, AddsTheWantedAndRemovesTheOthers) {
  const auto wanted = json::array({"198.18.1.11/24"});
  EXPECT_EQ(changes_text(decide_step(instance(wanted), facts_with(json::array({"fe80::1/64"})), {})),
            "+ address eth1 198.18.1.11/24: not on eth1\n");
  EXPECT_EQ(changes_text(decide_step(instance(wanted), facts_with(json::array({"198.18.1.99/24", "198.18.1.11/24"})), {})),
            "- address eth1 198.18.1.99/24: on eth1, not in the spec\n");
  EXPECT_TRUE(decide_step(instance(wanted), facts_with(json::array({"198.18.1.11/24", "fe80::1/64"})), {}).empty())
      << "IPv6 addresses are not the step's";
  EXPECT_EQ(changes_text(decide_step({"a", "address", {{"interface", "ib9"}, {"addresses", wanted}}, {}, {}},
                                     facts_with(json::array()), {})),
            "~ address ib9: the node has no interface ib9\n");
  EXPECT_EQ(changes_text(decide_step(instance(wanted), json::object(), {})),
            "? address eth1: not in the facts; decided on the node\n");
}

TEST(AddressStep, PredictsTheInterfacesAddresses) {
  json facts = facts_with(json::array({"198.18.1.99/24", "fe80::1/64"}));
  predict_facts_after({"a", "a", "address", {{"interface", "eth1"}, {"addresses", json::array({"198.18.1.11/24"})}}},
                      facts);
  EXPECT_EQ(facts["network"]["interfaces"][1]["addresses"], json::array({"fe80::1/64", "198.18.1.11/24"}));
  EXPECT_EQ(facts["network"]["interfaces"][0]["addresses"], json::array({"198.18.0.11/24"}));
}

TEST(AddressStep, RefusesWhatIsNotAnInterfaceOrAnAddress) {
  const StepKind* kind = find_step_kind("address");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->check_rendered({{"interface", "eth1; reboot"}, {"addresses", "10.0.0.1/24"}}).error().message,
            "'interface' must be an interface name (at most 15 letters, digits, '_', '.', ':', '-'), got \"eth1; reboot\"");
  EXPECT_EQ(kind->check_rendered({{"interface", ".."}, {"addresses", "10.0.0.1/24"}}).error().message,
            "'interface' must be an interface name (at most 15 letters, digits, '_', '.', ':', '-'), got \"..\"");
  EXPECT_EQ(kind->check_rendered({{"interface", "eth1"}, {"addresses", "10.0.0.1"}}).error().message,
            "'addresses': '10.0.0.1' is not an IPv4 address in CIDR form like 10.1.0.5/16");
  EXPECT_EQ(kind->check_rendered({{"interface", "eth1"}, {"addresses", 5}}).error().message,
            "'addresses' must be an address or a list of addresses");
  EXPECT_TRUE(kind->check_rendered({{"interface", "eth1"}, {"addresses", json::array({"10.0.0.1/24"})}}).ok());
}

TEST(AddressStep, ActionAndTouch) {
  const ResolvedStep step{"a", "a", "address", {{"interface", "eth1"}, {"addresses", json::array({"198.18.1.11/24"})}}};
  auto action = action_for(step, {});
  ASSERT_TRUE(action.ok());
  EXPECT_EQ(action.value().command,
            "ip link set dev eth1 up && ip addr replace 198.18.1.11/24 brd + dev eth1 && for a in $(ip -4 -o addr show "
            "dev eth1 | awk '{print $4}'); do case $a in 198.18.1.11/24) ;; *) ip addr del \"$a\" dev eth1 2>/dev/null "
            "|| ! ip -4 -o addr show dev eth1 | grep -qF \" $a \" || exit 1 ;; esac; done && ip addr replace "
            "198.18.1.11/24 brd + dev eth1");
  const PhaseTouch touch = phase_touch({step});
  EXPECT_EQ(touch.interfaces, std::set<std::string>{"eth1"});
  EXPECT_EQ(PhaseTouch::from_json(touch.to_json()).interfaces, touch.interfaces);
  EXPECT_FALSE(PhaseTouch{}.to_json().contains("interfaces")) << "manifests without address steps stay as they were";
}

std::string run_in_own_netns(const std::string& script, int& status) {
  const std::string path = "/tmp/gpx-netns-" + std::to_string(::getpid()) + ".sh";
  std::ofstream(path) << script;
  FILE* pipe = ::popen(("unshare --net sh " + path + " 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  status = WEXITSTATUS(::pclose(pipe));
  std::remove(path.c_str());
  return out;
}

// For real: an interface with 10.9.0.5/24 and 10.9.0.6/24; the phase's
// checkpoint, the step's action (only 10.9.1.7/24 is left), then the
// restore (exactly the two addresses again).
TEST(AddressStep, ActionCheckpointAndRestoreOnARealInterface) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a network namespace and a veth pair";
  int status = 0;
  run_in_own_netns("ip link add gxa type veth peer name gxb", status);
  if (status != 0) GTEST_SKIP() << "this kernel gives no network namespace with a veth pair (unshare --net, ip link add)";

  const std::string root = "/tmp/gpx-addr-ckpt-" + std::to_string(::getpid());
  const ResolvedStep step{"a", "a", "address", {{"interface", "gxa"}, {"addresses", json::array({"10.9.1.7/24"})}}};
  const PhaseTouch touch = phase_touch({step});
  const std::string list = "ip -4 -o addr show dev gxa | awk '{print $4}' | sort | paste -sd' ' -\n";
  std::string script = "set -e\nip link add gxa type veth peer name gxb\nip addr add 10.9.0.5/24 dev gxa\n"
                       "ip addr add 10.9.0.6/24 dev gxa\n";
  // Then a wanted address in the subnet of one that goes (10.9.0.5 is the
  // primary; deleting it takes the secondaries along).
  const ResolvedStep same_subnet{"a", "a", "address", {{"interface", "gxa"}, {"addresses", json::array({"10.9.0.9/24"})}}};
  script += checkpoint_script(3, "rdma", touch, root) + "\n";
  script += "set -e\necho before: $(" + list + ")\n";
  script += action_for(step, {}).value().command + "\n";
  script += "echo applied: $(" + list + ")\n";
  script += "(" + restore_script(3, "rdma", touch, root) + ")\n";
  script += "echo restored: $(" + list + ")\n";
  script += action_for(same_subnet, {}).value().command + "\n";
  script += "echo same subnet: $(" + list + ")\nrm -rf " + root + "\n";
  const std::string out = run_in_own_netns(script, status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "before: 10.9.0.5/24 10.9.0.6/24\napplied: 10.9.1.7/24\nrestored: 10.9.0.5/24 10.9.0.6/24\n"
                 "same subnet: 10.9.0.9/24\n");
}

}  // namespace
}  // namespace gpuexpand
