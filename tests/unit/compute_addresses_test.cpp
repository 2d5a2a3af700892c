// Compute-fabric addresses: IPv4 parsing, the three ways a spec gives them
// (an entry's host list, one node's literal address, an offset from the
// management address), every refusal with its exact text and place, and
// what reaches the playbooks.

#include <gtest/gtest.h>

#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/util/ipv4.hpp"

#include "test_support.hpp"

namespace gpuexpand {
namespace {

using testing::diagnostics_text;
using testing::load_spec;

TEST(Ipv4, ParsesStrictlyAndFormats) {
  EXPECT_EQ(parse_ipv4("10.1.0.5"), 0x0A010005u);
  EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xFFFFFFFFu);
  for (const char* bad : {"10.1.0", "10.1.0.5.6", "10.1.0.256", "010.1.0.5", "10.1.0.", "a.b.c.d", "10.1.0.5 ", ""}) {
    EXPECT_FALSE(parse_ipv4(bad)) << bad;
  }
  EXPECT_EQ(format_ipv4(0xC6120110u), "198.18.1.16");
  auto cidr = parse_ipv4_cidr("198.18.1.11/24");
  ASSERT_TRUE(cidr);
  EXPECT_EQ(cidr->to_string(), "198.18.1.11/24");
  for (const char* bad : {"198.18.1.11", "198.18.1.11/33", "198.18.1.11/", "198.18.1.11/024", "198.18.1.11/2a"}) {
    EXPECT_FALSE(parse_ipv4_cidr(bad)) << bad;
  }
}

TEST(Ipv4, NetworkAndBroadcastAddresses) {
  EXPECT_TRUE(parse_ipv4_cidr("10.1.0.0/16")->is_network_or_broadcast());
  EXPECT_TRUE(parse_ipv4_cidr("10.1.255.255/16")->is_network_or_broadcast());
  EXPECT_FALSE(parse_ipv4_cidr("10.1.0.255/16")->is_network_or_broadcast());
  EXPECT_FALSE(parse_ipv4_cidr("10.1.0.0/31")->is_network_or_broadcast());  // point-to-point: both usable
  EXPECT_FALSE(parse_ipv4_cidr("10.1.0.7/32")->is_network_or_broadcast());
}

std::string spec_with(const std::string& interfaces, const std::string& nodes) {
  return "apiVersion: gpuexpand/v1\n"
         "cluster: {name: t}\n"
         "defaults:\n"
         "  network:\n"
         "    mtu: 9000\n"
         "    compute_interfaces:\n" +
         interfaces + "nodes:\n" + nodes;
}

using ComputeAddresses = std::vector<std::pair<std::string, std::string>>;

const std::string kTwoRails = "      - name: ib0\n      - name: ib1\n";

ComputeAddresses addresses_of(const ClusterSpec& spec, size_t node) { return spec.nodes.at(node).compute_addresses; }

TEST(ComputeAddresses, AHostListPairsWithTheEntrysHosts) {
  auto result = load_spec(spec_with(kTwoRails,
                                    "  - hosts: gpu-[01-03]\n"
                                    "    addresses: 10.0.0.[11-13]\n"
                                    "    compute_addresses: {ib0: \"10.1.0.[11-13]/16\", ib1: \"10.2.0.[11-13]/16\"}\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  EXPECT_EQ(addresses_of(*result.spec, 2), (ComputeAddresses{{"ib0", "10.1.0.13/16"}, {"ib1", "10.2.0.13/16"}}));
  // What the playbooks see: each interface with this node's address.
  const auto vars = node_variables(*result.spec, result.spec->nodes[1]);
  EXPECT_EQ(vars["network"]["compute_interfaces"][0]["address"], "10.1.0.12/16");
  EXPECT_EQ(vars["network"]["compute_interfaces"][1]["address"], "10.2.0.12/16");
  EXPECT_EQ(vars["network"]["compute_interfaces"][1]["mtu"], 9000);
}

TEST(ComputeAddresses, AnOffsetFromTheManagementAddress) {
  auto result = load_spec(spec_with("      - name: eth1\n        address_offset: 0.0.1.0\n        prefix_length: 24\n",
                                    "  - hosts: node-[01-02]\n    addresses: 198.18.0.[254-255]\n"));
  // 198.18.0.255 + 0.0.1.0 = 198.18.1.255: the broadcast address of a /24.
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:12:16: nodes[0]: network.compute_interfaces[eth1].address_offset 0.0.1.0 makes node-02's address "
            "198.18.1.255/24, the network or broadcast address of its subnet\n");
  result = load_spec(spec_with("      - name: eth1\n        address_offset: 0.0.1.0\n        prefix_length: 24\n",
                               "  - hosts: node-[01-02]\n    addresses: 198.18.0.[11-12]\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  EXPECT_EQ(addresses_of(*result.spec, 0), (ComputeAddresses{{"eth1", "198.18.1.11/24"}}));
  EXPECT_EQ(addresses_of(*result.spec, 1), (ComputeAddresses{{"eth1", "198.18.1.12/24"}}));
}

TEST(ComputeAddresses, TheEntryWinsOverTheInterfacesRule) {
  auto result = load_spec(spec_with("      - name: eth1\n        address_offset: 0.0.1.0\n        prefix_length: 24\n",
                                    "  - hosts: node-[01-02]\n    addresses: 198.18.0.[11-12]\n"
                                    "    compute_addresses: {eth1: \"198.18.2.[1-2]/24\"}\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  EXPECT_EQ(addresses_of(*result.spec, 1), (ComputeAddresses{{"eth1", "198.18.2.2/24"}}));
}

TEST(ComputeAddresses, OneNodeMayCarryALiteralAddress) {
  auto result = load_spec(spec_with(kTwoRails, "  - name: gpu-01\n    address: 10.0.0.11\n"
                                               "    network:\n      compute_interfaces:\n"
                                               "        - {name: ib0, address: 10.1.0.11/16}\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  EXPECT_EQ(addresses_of(*result.spec, 0), (ComputeAddresses{{"ib0", "10.1.0.11/16"}}));
}

TEST(ComputeAddresses, ALiteralAddressSharedByManyNodesIsRefused) {
  auto result = load_spec(spec_with("      - {name: ib0, address: 10.1.0.11/16}\n", "  - hosts: gpu-[01-04]\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:9:12: nodes[0]: network.compute_interfaces[ib0].address would give all 4 nodes of this entry the "
            "same address; give them compute_addresses (a host list paired with hosts) or address_offset\n");
}

TEST(ComputeAddresses, CountsMustMatch) {
  auto result = load_spec(spec_with(kTwoRails, "  - hosts: gpu-[01-03]\n    compute_addresses: {ib0: \"10.1.0.[11-12]/16\"}\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:11:30: nodes[0]: the entry has 3 nodes but compute_addresses.ib0 '10.1.0.[11-12]/16' has 2 "
            "addresses\n");
}

TEST(ComputeAddresses, AnUnknownInterfaceGetsASuggestion) {
  auto result = load_spec(spec_with(kTwoRails, "  - hosts: gpu-[01-02]\n    compute_addresses: {ib2: \"10.1.0.[1-2]/16\"}\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:11:25: nodes[0].compute_addresses: 'ib2' is not a compute interface of these nodes (did you mean "
            "'ib0'?)\n");
}

TEST(ComputeAddresses, MalformedAndUnusableAddressesAreRefused) {
  auto result = load_spec(spec_with(kTwoRails, "  - hosts: gpu-[01-02]\n    compute_addresses:\n"
                                               "      ib0: \"10.1.0.[255-256]/16\"\n      ib1: \"10.2.0.[0-1]/24\"\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:12:12: nodes[0].compute_addresses.ib0: '10.1.0.256/16' is not an IPv4 address in CIDR form like "
            "10.1.0.5/16\n"
            "spec.yaml:13:12: nodes[0].compute_addresses.ib1: 10.2.0.0/24 is the network or broadcast address of its "
            "subnet\n");
}

TEST(ComputeAddresses, DuplicatesAcrossEntriesAndWithManagementAddresses) {
  auto result = load_spec(spec_with(kTwoRails,
                                    "  - hosts: gpu-[01-04]\n    addresses: 10.0.0.[11-14]\n"
                                    "    compute_addresses: {ib0: \"10.1.0.[11-14]/16\"}\n"
                                    "  - hosts: gpu-[05-06]\n    addresses: 10.0.0.[15-16]\n"
                                    "    compute_addresses: {ib0: \"10.1.0.[13-14]/16\", ib1: \"10.0.0.[11-12]/16\"}\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:15:30: duplicate compute addresses 10.1.0.[13-14] (already in nodes[0] on line 10)\n"
            "spec.yaml:15:56: compute addresses 10.0.0.[11-12] are also management (SSH) addresses of nodes (nodes[0] on "
            "line 10)\n");
}

TEST(ComputeAddresses, InterfaceRulesAreCheckedWhereTheyAreWritten) {
  auto result = load_spec(spec_with("      - {name: a, address: 10.1.0.5/16, address_offset: 0.1.0.0, prefix_length: 16}\n"
                                    "      - {name: b, address_offset: 0.1.0.0}\n"
                                    "      - {name: c, prefix_length: 16}\n"
                                    "      - {name: d, address: 10.1.300.5/16}\n"
                                    "      - {name: e, address_offset: 0.1.0.256, prefix_length: 8}\n",
                                    "  - name: gpu-01\n    address: 10.0.0.1\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:7:57: network.compute_interfaces[a]: give either address (one node's) or address_offset "
            "(derived per node), not both\n"
            "spec.yaml:8:35: network.compute_interfaces[b].address_offset needs prefix_length: the subnet's prefix, e.g. "
            "16\n"
            "spec.yaml:9:34: network.compute_interfaces[c].prefix_length goes with address_offset\n"
            "spec.yaml:10:28: network.compute_interfaces[d].address: '10.1.300.5/16' is not an IPv4 address in CIDR "
            "form like 10.1.0.5/16\n"
            "spec.yaml:11:35: network.compute_interfaces[e].address_offset: '0.1.0.256' is not an offset written like "
            "an IPv4 address (four parts 0-255)\n");
}

TEST(ComputeAddresses, AnOffsetNeedsAnIpv4ManagementAddress) {
  auto result = load_spec(spec_with("      - {name: eth1, address_offset: 0.1.0.0, prefix_length: 16}\n",
                                    "  - hosts: gpu-[01-02]\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:9:12: nodes[0]: network.compute_interfaces[eth1].address_offset adds to each node's IPv4 "
            "management address, but gpu-01 is reached at 'gpu-01'\n");
  result = load_spec(spec_with("      - {name: eth1, address_offset: 0.1.0.0, prefix_length: 16}\n",
                               "  - name: gpu-01\n    address: 255.255.0.1\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:10:14: nodes[0]: network.compute_interfaces[eth1].address_offset 0.1.0.0 makes gpu-01's address "
            "overflow past 255.255.255.255\n");
}

}  // namespace
}  // namespace gpuexpand
