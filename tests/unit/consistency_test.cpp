// The consistency report: cluster.reference in the spec, the set of facts
// compared, the comparison of new nodes (as predicted after apply) with
// the reference nodes, and how the report reads.

#include "gpuexpand/facts/consistency.hpp"

#include <gtest/gtest.h>

#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/view/facts_view.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

const char* const kSpec = R"(apiVersion: gpuexpand/v1
cluster:
  name: test
  reference:
    nodes:
      - hosts: r[1-3]
        addresses: 10.0.9.[1-3]
    facts:
      add: [files./etc/motd]
      drop: [sysctl.vm.swappiness]
defaults:
  network:
    mtu: 9000
    compute_interfaces:
      - name: eth1
nodes:
  - hosts: n[1-2]
    addresses: 10.0.0.[1-2]
)";

ClusterSpec load(const std::string& text = kSpec) {
  auto loaded = testing::load_spec(text);
  EXPECT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  return loaded.spec ? *loaded.spec : ClusterSpec{};
}

json facts_of(const std::string& name, const std::string& kernel) {
  return {{"schema_version", 1},
          {"node", name},
          {"hostname", name},
          {"os", {{"id", "debian"}, {"version_id", "12"}, {"kernel", kernel}, {"pretty_name", "Debian"}}},
          {"gpus", {{"driver_version", "550.90.07"}, {"model", "NVIDIA H200"}, {"count", 8}, {"temperature_c", 40}}},
          {"packages", {{"nvidia-driver", "550.90.07-1"}, {"libnccl2", "2.21.5-1+cuda12.4"}, {"chrony", "4.3-2"}}},
          {"sysctl", {{"vm.swappiness", "60"}, {"net.core.rmem_max", "268435456"}}},
          {"files", {{"/etc/motd", {{"exists", true}, {"content", "welcome\n"}}}}},
          {"network",
           {{"interfaces", json::array({{{"name", "eth0"}, {"mtu", 1500}}, {{"name", "eth1"}, {"mtu", 9000}}})}}},
          {"cpu", {{"model", "Intel(R) Xeon(R) Platinum 8480C"}}}};
}

FactsByNode reference_facts(const ClusterSpec& spec) {
  FactsByNode facts;
  for (const auto& node : spec.reference_nodes) facts[node.name] = facts_of(node.name, "6.1.0-21-amd64");
  return facts;
}

std::vector<ComparedNode> compared(const ClusterSpec& spec, const FactsByNode& facts) {
  std::vector<ComparedNode> out;
  for (const auto& node : spec.nodes) out.push_back({&node, &facts.at(node.name)});
  return out;
}

TEST(Consistency, ReferenceNodesAreReadFromTheSpecAndAreNoNodesToConfigure) {
  const ClusterSpec spec = load();
  ASSERT_EQ(spec.reference_nodes.size(), 3u);
  EXPECT_EQ(spec.reference_nodes[2].name, "r3");
  EXPECT_EQ(spec.reference_nodes[2].address, "10.0.9.3");
  EXPECT_EQ(spec.nodes.size(), 2u);
  EXPECT_EQ(spec.reference_facts_add, std::vector<std::string>{"files./etc/motd"});
  EXPECT_TRUE(is_reference_node(spec, spec.reference_nodes[0]));
  EXPECT_FALSE(is_reference_node(spec, spec.nodes[0]));
}

TEST(Consistency, ANodeBothReferenceAndNewIsALocatedError) {
  std::string text = kSpec;
  text.replace(text.find("r[1-3]"), 6, "n[2-4]");
  auto loaded = testing::load_spec(text);
  ASSERT_FALSE(loaded.spec);
  EXPECT_NE(testing::diagnostics_text(loaded).find("spec.yaml:6:16: duplicate node name n2 (already in nodes[0] on line 17)"),
            std::string::npos)
      << testing::diagnostics_text(loaded);
}

TEST(Consistency, TheSetIsTheDefaultsWithTheSpecsAdditionsLessWhatItDrops) {
  ConsistencySet set = consistency_set(load());
  for (const char* fact : {"os.kernel", "gpus.driver_version", "gpus.count", "packages.libnccl2", "sysctl.net.core.rmem_max",
                           "network.interfaces[eth1].mtu", "files./etc/motd.content", "timezone"}) {
    EXPECT_TRUE(set.contains(fact)) << fact;
  }
  EXPECT_FALSE(set.contains("mounts[/mnt/shared].fstype")) << "a mount only where it is configuration";
  set.mountpoints.insert("/mnt/shared");
  EXPECT_TRUE(set.contains("mounts[/mnt/shared].fstype"));
  for (const char* fact : {"sysctl.vm.swappiness", "network.interfaces[eth0].mtu", "cpu.model", "os.pretty_name",
                           "files./etc/hosts.content", "gpus.temperature_c"}) {
    EXPECT_FALSE(set.contains(fact)) << fact;
  }
}

TEST(Consistency, TheProbeAsksWhatTheSetNamesOnNewAndReferenceNodesAlike) {
  const ClusterSpec spec = load();
  const FactsRequest also = consistency_request(spec);
  EXPECT_TRUE(also.packages.count("libnccl2"));
  EXPECT_TRUE(also.packages.count("slurmd"));
  EXPECT_TRUE(also.files.count("/etc/motd"));
  for (const NodeSpec* node : {&spec.nodes[0], &spec.reference_nodes[0]}) {
    const FactsRequest request = node_probe_request(spec, *node, testing::playbooks());
    EXPECT_TRUE(request.packages.count("rdma-core")) << node->name;
    EXPECT_TRUE(request.files.count("/etc/motd")) << node->name;
  }
  // Packages installed without a version: their candidates only with reference nodes.
  std::string with_jq = kSpec;
  with_jq.replace(with_jq.find("defaults:\n"), 10, "defaults:\n  os: {packages: [jq]}\n");
  const ClusterSpec jq = load(with_jq);
  ASSERT_FALSE(jq.nodes.empty());
  EXPECT_TRUE(node_probe_request(jq, jq.nodes[0], testing::playbooks()).unpinned_packages.count("jq"));
  const ClusterSpec plain = testing::load_spec(testing::minimal_spec("defaults:\n  os: {packages: [jq]}\n")).spec.value_or(ClusterSpec{});
  ASSERT_FALSE(plain.nodes.empty());
  EXPECT_TRUE(node_probe_request(plain, plain.nodes[0], testing::playbooks()).unpinned_packages.empty());
  // A reference node is only read: no step checks run there.
  EXPECT_TRUE(node_probe_request(spec, spec.reference_nodes[0], testing::playbooks()).checks.empty());
}

TEST(Consistency, NodesBuiltLikeTheReferenceMatch) {
  const ClusterSpec spec = load();
  FactsByNode mine = {{"n1", facts_of("n1", "6.1.0-21-amd64")}, {"n2", facts_of("n2", "6.1.0-21-amd64")}};
  // Version facts compare by the spec's version rule: the plan predicts
  // the version it wants, the reference reports the package's.
  mine["n1"]["packages"]["nvidia-driver"] = "550.90.07";
  mine["n2"]["gpus"]["driver_version"] = "550";
  // Apply leaves an unpinned package's version to the node.
  mine["n2"]["packages"]["chrony"] = "installed";
  // The kernel separates a sysctl's numbers by tabs, a spec by spaces.
  mine["n1"]["sysctl"]["net.core.rmem_max"] = "268435456 ";
  // Not in the set: no difference.
  mine["n2"]["sysctl"]["vm.swappiness"] = "10";
  mine["n2"]["cpu"]["model"] = "AMD EPYC 9654";
  const ConsistencyReport report = check_consistency(spec, compared(spec, mine), reference_facts(spec));
  EXPECT_TRUE(report.consistent());
  EXPECT_EQ(report.reference_nodes, (std::vector<std::string>{"r1", "r2", "r3"}));
  EXPECT_GT(report.facts, 10u);
  EXPECT_EQ(consistency_text(report, "after apply"),
            "Consistent: n[1-2] match the reference nodes r[1-3] in " + std::to_string(report.facts) +
                " facts (after apply)\n");
}

TEST(Consistency, DifferencesAreFoldedByFactAndValueWithTheReferenceHosts) {
  const ClusterSpec spec = load();
  FactsByNode mine = {{"n1", facts_of("n1", "6.1.0-18-amd64")}, {"n2", facts_of("n2", "6.1.0-18-amd64")}};
  mine["n2"]["packages"]["nvidia-driver"] = "535.129.03-1";
  mine["n2"]["files"]["/etc/motd"]["content"] = "welcome\nmaintenance at 3\n";
  mine["n1"]["network"]["interfaces"][1]["mtu"] = 1500;
  FactsByNode reference = reference_facts(spec);
  reference["r3"]["sysctl"]["net.core.rmem_max"] = "212992";  // the reference disagrees
  const ConsistencyReport report = check_consistency(spec, compared(spec, mine), reference);
  EXPECT_FALSE(report.consistent());
  ASSERT_EQ(report.reference_disagreements.size(), 1u);
  EXPECT_EQ(report.reference_disagreements[0].first, "sysctl.net.core.rmem_max");
  EXPECT_EQ(consistency_text(report, "after apply"),
            "Consistency with the reference nodes r[1-3] (" + std::to_string(report.facts) +
                " facts, the nodes after apply):\n"
                "  the reference nodes disagree on sysctl.net.core.rmem_max: 268435456 (r[1-2]); 212992 (r3)\n"
                "  n2: files./etc/motd.content line 2: maintenance at 3, reference line 2: (end) (r[1-3])\n"
                "  n1: network.interfaces[eth1].mtu 1500, reference 9000 (r[1-3])\n"
                "  n[1-2]: os.kernel 6.1.0-18-amd64, reference 6.1.0-21-amd64 (r[1-3])\n"
                "  n2: packages.nvidia-driver 535.129.03-1, reference 550.90.07-1 (r[1-3])\n"
                "  2 of 2 nodes differ from the reference\n");
  // New nodes are held to the value most reference nodes have.
  const json document = consistency_json(report);
  EXPECT_EQ(document["differences"].size(), 4u);
  EXPECT_EQ(document["differences"][2]["nodes"], "n[1-2]");
  EXPECT_EQ(document["reference_disagreements"][0]["values"][1]["nodes"], "r3");
  EXPECT_FALSE(document["consistent"].get<bool>());
}

// Mounts compare where they are configuration: in a compared node's fstab,
// or a network filesystem; their options as fstab has them. The mounts systemd and a container make at run
// time (Debian 13's systemd mounts /run/credentials/* as tmpfs, Debian 12's
// as ramfs; the root overlay's lowerdir) are not, unless facts.add says.
TEST(Consistency, OnlyConfiguredMountsAreCompared) {
  const ClusterSpec spec = load();
  auto with_mounts = [](json facts, const std::string& credentials_fstype, const std::string& data_options) {
    facts["mounts"] = json::array({{{"target", "/"}, {"source", "overlay"}, {"fstype", "overlay"}, {"options", "rw,lowerdir=/a"}},
                                   {{"target", "/run/credentials/x.service"}, {"source", credentials_fstype},
                                    {"fstype", credentials_fstype}, {"options", "ro"}},
                                   {{"target", "/data"}, {"source", "/dev/md0"}, {"fstype", "xfs"}, {"options", data_options}}});
    facts["fstab"] = json::array({{{"source", "/dev/md0"}, {"target", "/data"}, {"fstype", "xfs"}, {"options", "noatime"}}});
    return facts;
  };
  FactsByNode reference = reference_facts(spec);
  for (auto& [name, facts] : reference) {
    facts = with_mounts(facts, "ramfs", "rw,noatime");
    facts["mounts"].push_back({{"target", "/mnt/shared"}, {"source", "nas:/shared"}, {"fstype", "nfs4"}, {"options", "rw"}});
  }
  FactsByNode mine = {{"n1", with_mounts(facts_of("n1", "6.1.0-21-amd64"), "tmpfs", "rw,relatime")},
                      {"n2", with_mounts(facts_of("n2", "6.1.0-21-amd64"), "tmpfs", "rw,noatime")}};
  mine["n1"]["mounts"][0]["options"] = "rw,lowerdir=/b";
  mine["n1"]["fstab"][0]["options"] = "defaults";  // what the node is configured to mount with
  mine["n2"]["mounts"].push_back({{"target", "/mnt/shared"}, {"source", "nas:/shared"}, {"fstype", "nfs4"}, {"options", "rw"}});
  const ConsistencyReport report = check_consistency(spec, compared(spec, mine), reference);
  std::vector<std::string> facts;
  for (const auto& d : report.differences) facts.push_back(d.fact + " " + fold_hostlist(d.nodes));
  // Options as configured (fstab): the kernel's list of a live mount is
  // not what a plan can predict.
  EXPECT_EQ(facts, (std::vector<std::string>{"fstab[/data].options n1", "mounts[/mnt/shared].fstype n1",
                                             "mounts[/mnt/shared].source n1"}));

  std::string text = kSpec;
  text.replace(text.find("files./etc/motd"), 15, "files./etc/motd, 'mounts[/run/credentials/*].fstype'");
  const ClusterSpec added = load(text);
  const ConsistencyReport asked = check_consistency(added, compared(added, mine), reference);
  EXPECT_TRUE(std::any_of(asked.differences.begin(), asked.differences.end(), [](const ConsistencyDifference& d) {
    return d.fact == "mounts[/run/credentials/x.service].fstype" && d.value == "tmpfs" && d.reference == "ramfs";
  })) << "named in facts.add, a runtime mount is compared";
}

TEST(Consistency, AFactOnlyTheNewNodeHasIsADifference) {
  const ClusterSpec spec = load();
  FactsByNode mine = {{"n1", facts_of("n1", "6.1.0-21-amd64")}, {"n2", facts_of("n2", "6.1.0-21-amd64")}};
  mine["n1"]["sysctl"]["net.ipv4.tcp_mtu_probing"] = "1";
  const ConsistencyReport report = check_consistency(spec, compared(spec, mine), reference_facts(spec));
  ASSERT_EQ(report.differences.size(), 1u);
  EXPECT_EQ(report.differences[0].fact, "sysctl.net.ipv4.tcp_mtu_probing");
  EXPECT_EQ(report.differences[0].reference, "-");
}

TEST(Consistency, UnreachableReferenceNodesAreNamedAndNeverCountAsConsistent) {
  const ClusterSpec spec = load();
  FactsByNode mine = {{"n1", facts_of("n1", "6.1.0-21-amd64")}, {"n2", facts_of("n2", "6.1.0-21-amd64")}};
  FactsByNode reference = reference_facts(spec);
  reference["r2"] = {{"unreachable", "r2 (10.0.9.2:22): connection refused"}};
  ConsistencyReport report = check_consistency(spec, compared(spec, mine), reference);
  EXPECT_FALSE(report.consistent());
  EXPECT_EQ(report.reference_nodes, (std::vector<std::string>{"r1", "r3"}));
  EXPECT_NE(consistency_text(report, "now").find("  reference node r2 unreachable: r2 (10.0.9.2:22): connection refused\n"),
            std::string::npos);
  report = check_consistency(spec, compared(spec, mine), FactsByNode{});
  EXPECT_EQ(consistency_text(report, "now").substr(0, 52), "Consistency not checked: no reference node answered\n");
}

TEST(Consistency, ThePlanPredictsTheDriverTheGpuPhaseInstalls) {
  // A bare recorded H200 node (driver 535) planned to 550: after apply its
  // nvidia-smi reports 550, which the driver step declares (sets_facts).
  const ClusterSpec spec = load(testing::read_source_file("examples/h200-expansion.yaml"));
  const FactsByNode facts = load_facts_file(testing::source_path("tests/fixtures/facts/h200-bare.json"),
                                            testing::schema("facts-file"), testing::schema("facts"))
                                .value();
  std::vector<const NodeSpec*> selected = {&spec.nodes[0]};
  const Plan plan = make_plan(spec, selected, testing::playbooks(), facts, "2026-12-03T00:00:00Z");
  ASSERT_TRUE(plan.nodes[0].predicted_facts);
  const json& predicted = *plan.nodes[0].predicted_facts;
  EXPECT_EQ(facts.at(spec.nodes[0].name)["gpus"]["driver_version"], "535.129.03");
  EXPECT_EQ(predicted["gpus"]["driver_version"], "550.90.07");
  EXPECT_EQ(predicted["sysctl"]["vm.swappiness"], "1");

  // The plan document carries the report, as its schema says.
  FactsByNode reference;
  reference[spec.nodes[1].name] = facts.at(spec.nodes[1].name);
  ClusterSpec with_reference = spec;
  with_reference.reference_nodes = {spec.nodes[1]};
  const ConsistencyReport report =
      check_consistency(with_reference, {{&spec.nodes[0], plan.nodes[0].predicted_facts.get()}}, reference);
  EXPECT_FALSE(report.consistent());
  json document = plan_to_json(plan);
  document["consistency"] = consistency_json(report);
  EXPECT_EQ(testing::schema("plan").validate_json(document), std::vector<std::string>{});
}

}  // namespace
}  // namespace gpuexpand
