// facts --diff: what is compared (flattened facts, a node's own values
// abstracted, identity left out) and how two sides' values are told apart.

#include "gpuexpand/facts/facts_compare.hpp"

#include <gtest/gtest.h>

#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/view/facts_view.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

NodeSpec node(const std::string& name, const std::string& address) {
  NodeSpec n;
  n.name = name;
  n.address = address;
  return n;
}

json facts_of(const std::string& name, const std::string& address) {
  return {{"schema_version", 1},
          {"node", name},
          {"collected_at", "2026-12-01T00:00:00Z"},
          {"hostname", name},
          {"os", {{"kernel", "6.1.0-27-amd64"}, {"id", "debian"}}},
          {"packages", {{"nvidia-driver-550", "550.90.07-1"}, {"slurmd", nullptr}}},
          {"sysctl", {{"vm.swappiness", "60"}}},
          {"disk_free_bytes", {{"/var/lib/gpuexpand", 1000}}},
          {"files", {{"/etc/hosts", {{"content", "127.0.0.1\tlocalhost\n" + address + "\t" + name + "\n"},
                                     {"size", 22 + address.size() + name.size()}}}}},
          {"network",
           {{"interfaces", json::array({{{"name", "eth0"}, {"mtu", 1500}, {"addresses", {address + "/24"}},
                                         {"mac", "02:00:00:00:00:" + name.substr(1) + "0"}},
                                        {{"name", "eth1"}, {"mtu", 9000}, {"addresses", json::array()}}})}}},
          {"kernel_modules", {{"loaded", {"overlay", "veth"}}}}};
}

TEST(FactsCompare, FlattensWithTheNodesOwnValuesAbstractedAndIdentityLeftOut) {
  const NodeSpec n1 = node("n1", "10.0.0.1");
  const auto flat = flatten_facts(facts_of("n1", "10.0.0.1"), n1);
  EXPECT_EQ(flat.at("os.kernel"), "6.1.0-27-amd64");
  EXPECT_EQ(flat.at("packages.nvidia-driver-550"), "550.90.07-1");
  EXPECT_EQ(flat.at("packages.slurmd"), "-");
  EXPECT_EQ(flat.at("network.interfaces[eth1].mtu"), "9000");
  EXPECT_EQ(flat.at("kernel_modules.loaded"), "overlay, veth");
  EXPECT_EQ(flat.at("files./etc/hosts.content"), "127.0.0.1\tlocalhost\n{node.address}\t{node.name}\n");
  for (const char* left_out : {"files./etc/hosts.size", "node", "hostname", "collected_at", "schema_version", "disk_free_bytes./var/lib/gpuexpand",
                               "network.interfaces[eth0].addresses", "network.interfaces[eth0].mac"}) {
    EXPECT_EQ(flat.count(left_out), 0u) << left_out;
  }
}

TEST(FactsCompare, TwoNodesBuiltAlikeDifferOnlyWhereTheyDo) {
  const NodeSpec n1 = node("n1", "10.0.0.1"), n2 = node("n2", "10.0.0.2"), n3 = node("n3", "10.0.0.3");
  FactsByNode facts = {{"n1", facts_of("n1", "10.0.0.1")}, {"n2", facts_of("n2", "10.0.0.2")},
                       {"n3", facts_of("n3", "10.0.0.3")}, {"n4", {{"unreachable", "n4 (10.0.0.4:22): refused"}}}};
  EXPECT_TRUE(compare_facts(facts, {&n1}, {&n2}).differences.empty());

  facts["n3"]["os"]["kernel"] = "6.1.0-18-amd64";
  facts["n3"]["sysctl"]["vm.swappiness"] = "10";
  facts["n3"]["packages"]["slurmd"] = "22.05.8-4";
  facts["n3"]["network"]["interfaces"][1]["mtu"] = 1500;
  const FactComparison one = compare_facts(facts, {&n1}, {&n3});
  EXPECT_GT(one.facts, 8u);
  std::vector<std::string> rows;
  for (const auto& d : one.differences) rows.push_back(d.fact + ": " + d.a + " | " + d.b);
  EXPECT_EQ(rows, (std::vector<std::string>{"network.interfaces[eth1].mtu: 9000 | 1500",
                                            "os.kernel: 6.1.0-27-amd64 | 6.1.0-18-amd64", "packages.slurmd: - | 22.05.8-4",
                                            "sysctl.vm.swappiness: 60 | 10"}));

  // Sides of several nodes: a side whose nodes disagree says so, with hosts;
  // a fact the sides agree on is no row even with an unreachable node in one.
  const NodeSpec n4 = node("n4", "10.0.0.4");
  const FactComparison sets = compare_facts(facts, {&n1, &n3}, {&n2, &n4});
  ASSERT_EQ(sets.differences.size(), 4u);
  EXPECT_EQ(sets.differences[1].fact, "os.kernel");
  EXPECT_EQ(sets.differences[1].a, "6.1.0-27-amd64 (n1); 6.1.0-18-amd64 (n3)");
  EXPECT_EQ(sets.differences[1].b, "6.1.0-27-amd64");
}

TEST(FactsCompare, TableSideBySide) {
  EXPECT_EQ(facts_diff_table("gpu-node-001", "gpu-node-097",
                             {{"os.kernel", "6.1.0-27-amd64", "6.1.0-18-amd64", false},
                              {"files./etc/motd.content", "line one\nline two\n", "line one\nline 2\nline 3\n", false},
                              {"files./etc/hosts.content", "a\nb (n1); a\nc (n2)", "a\nb", true},
                              {"packages.slurmd", "-", std::string(70, 'x'), false}},
                             120),
            "FACT                      gpu-node-001          gpu-node-097\n"
            "os.kernel                 6.1.0-27-amd64        6.1.0-18-amd64\n"
            "files./etc/motd.content   line 2: line two      line 2: line 2\n"
            "files./etc/hosts.content  a\\nb (n1); a\\nc (n2)  a\\nb\n"
            "packages.slurmd           -                     " + std::string(59, 'x') + "…\n"
            "4 facts differ (of 120)\n");
  EXPECT_EQ(facts_diff_table("a", "b", {}, 97), "No differences between a and b in 97 facts\n");
}

// The recorded facts of 128 H200 nodes: built alike, so two nodes of one
// rack differ in nothing once names and addresses are abstracted.
TEST(FactsCompare, RecordedFleetNodesCompareEqual) {
  auto facts = load_facts_file(testing::source_path("tests/fixtures/facts/h200-bare.json"),
                               testing::schema("facts-file"), testing::schema("facts"));
  ASSERT_TRUE(facts) << facts.error().message;
  const NodeSpec a = node("gpu-node-001", "10.40.1.1"), b = node("gpu-node-002", "10.40.1.2");
  const FactComparison same = compare_facts(*facts, {&a}, {&b});
  for (const auto& d : same.differences) ADD_FAILURE() << d.fact << ": " << d.a << " | " << d.b;
  EXPECT_GT(same.facts, 50u);
}

}  // namespace
}  // namespace gpuexpand
