// init --from: the probes' requests and the draft written from facts
// (src/facts/draft_requests.cpp, src/facts/spec_draft.cpp). The end to end
// (a lab node drafted, validated and planned with no changes) is in
// tests/cli (recorded facts) and tests/lab/apply-test.sh (a live node).

#include <gtest/gtest.h>

#include "gpuexpand/facts/spec_draft.hpp"
#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

using nlohmann::json;

TEST(SpecDraft, SysctlFileKeysAsSystemdSysctlReadsThem) {
  const std::string file =
      "# comment = 1\n; also = 2\n\nnet.core.rmem_max = 268435456\n-vm.swappiness=10\n"
      "  kernel/numa_balancing = 0\nnet.ipv4.conf.*.rp_filter = 2\nnet.core.rmem_max = 1\nno equals sign\n";
  EXPECT_EQ(sysctl_file_keys(file),
            (std::vector<std::string>{"net.core.rmem_max", "vm.swappiness", "kernel.numa_balancing"}));
}

TEST(SpecDraft, EachRoundAsksForWhatThePreviousOneFound) {
  const FactsRequest first = draft_request_listings();
  EXPECT_TRUE(first.listed_directories.count("/etc/sysctl.d"));
  EXPECT_TRUE(first.listed_directories.count("/etc/apt/sources.list.d"));
  EXPECT_TRUE(first.packages.count("jq"));
  EXPECT_TRUE(first.packages.count("slurmd"));
  EXPECT_TRUE(first.sysctl_keys.empty());

  const json listed = {{"directories",
                        {{"/etc/sysctl.d", {"99-sysctl.conf", "README.sysctl", "90-gpuexpand.conf"}},
                         {"/etc/apt/sources.list.d", {"gpuexpand-cuda.sources", "debian.sources", "gpuexpand-x.list"}},
                         {"/etc/apt/keyrings", {"gpuexpand-cuda.gpg", "docker.gpg"}},
                         {"/etc/apt/preferences.d", {"gpuexpand-cuda.pref"}}}}};
  const FactsRequest second = draft_request_files(listed);
  for (const char* path : {"/etc/sysctl.d/99-sysctl.conf", "/etc/sysctl.d/90-gpuexpand.conf",
                           "/etc/apt/sources.list.d/gpuexpand-cuda.sources", "/etc/apt/keyrings/gpuexpand-cuda.gpg",
                           "/etc/apt/preferences.d/gpuexpand-cuda.pref", "/etc/sysctl.conf"}) {
    EXPECT_TRUE(second.files.count(path)) << path;
  }
  for (const char* path : {"/etc/sysctl.d/README.sysctl", "/etc/apt/sources.list.d/debian.sources",
                           "/etc/apt/sources.list.d/gpuexpand-x.list", "/etc/apt/keyrings/docker.gpg"}) {
    EXPECT_FALSE(second.files.count(path)) << path;
  }

  json with_files = listed;
  with_files["files"] = {{"/etc/sysctl.d/90-gpuexpand.conf", {{"exists", true}, {"content", "vm.max_map_count = 262144\n"}}},
                         {"/etc/sysctl.conf", {{"exists", true}, {"content", "#net.ipv4.ip_forward=1\nfs.file-max = 9\n"}}},
                         {"/etc/apt/sources.list.d/gpuexpand-cuda.sources", {{"exists", true}, {"content", "a = b\n"}}}};
  const FactsRequest third = draft_request_sysctl(with_files);
  EXPECT_EQ(third.sysctl_keys, (std::set<std::string>{"vm.max_map_count", "fs.file-max"}));
  EXPECT_TRUE(third.files.count("/etc/sysctl.d/90-gpuexpand.conf"));
}

json node_facts() {
  return {{"hostname", "gpu-a01"},
          {"timezone", "Europe/Berlin"},
          {"time_sync", {{"servers", {"10.0.0.1"}}}},
          {"files", {{"/etc/chrony/chrony.conf", {{"exists", true}, {"content", "pool ntp.example.org iburst\nserver 10.0.0.2 iburst\n"}}}}},
          {"sysctl", {{"net.ipv4.tcp_rmem", "4096\t87380\t16777216"}, {"vm.nonexistent", nullptr}}},
          {"packages", {{"jq", "1.6-2.1"}, {"rsync", nullptr}, {"cuda-drivers-550", "550.90.07-1"},
                        {"nvidia-driver-550", "550.90.07-0ubuntu1"}, {"cuda-toolkit-12-4", "12.4.1-1"},
                        {"nvidia-fabricmanager-550", "550.90.07-1"}}},
          {"gpus", {{"count", 8}, {"model", "NVIDIA H100 80GB HBM3"}, {"driver_version", "550.90.07"}, {"persistence_mode", true}}},
          {"network",
           {{"interfaces",
             {{{"name", "eth0"}, {"state", "up"}, {"mtu", 1500}, {"addresses", {"10.1.0.5/24"}}},
              {{"name", "ib0"}, {"state", "up"}, {"mtu", 4092}, {"addresses", {"10.2.0.5/16"}}},
              {{"name", "docker0"}, {"state", "up"}, {"mtu", 1500}, {"addresses", {"172.17.0.1/16"}}},
              {{"name", "eth2"}, {"state", "down"}, {"mtu", 1500}, {"addresses", json::array()}}}},
            {"rdma", {{{"device", "mlx5_0"}, {"link_layer", "infiniband"}}}}}},
          {"fstab",
           {{{"source", "nfs01:/datasets"}, {"target", "/datasets"}, {"fstype", "nfs"}, {"options", "vers=4.2,hard"}},
            {{"source", "mgs@tcp:/scratch"}, {"target", "/scratch"}, {"fstype", "nfs4"}, {"options", "defaults"}},
            {{"source", "/dev/sda1"}, {"target", "/"}, {"fstype", "ext4"}, {"options", "defaults"}}}}};
}

DraftSource source() {
  DraftSource s;
  s.node = "gpu-a01";
  s.address = "10.1.0.5";
  s.cluster = "train";
  s.key_dir = "keys";
  s.drafted_at = "2026-12-03T00:00:00Z";
  return s;
}

TEST(SpecDraft, TheDraftReproducesTheNodeAndValidates) {
  const SpecDraft draft = draft_spec(node_facts(), source());
  const auto has = [&](const std::string& line) { return draft.yaml.find(line) != std::string::npos; };
  EXPECT_TRUE(has("    timezone: \"Europe/Berlin\"\n")) << draft.yaml;
  EXPECT_TRUE(has("    ntp_servers: [\"ntp.example.org\", \"10.0.0.2\"]\n")) << "chrony.conf wins over chronyc";
  EXPECT_TRUE(has("      \"net.ipv4.tcp_rmem\": \"4096 87380 16777216\"\n"));
  EXPECT_FALSE(has("vm.nonexistent"));
  EXPECT_TRUE(has("    packages: [\"jq=1.6-2.1\"]\n"));
  EXPECT_TRUE(has("    source: nvidia-cuda-repo\n"));
  EXPECT_TRUE(has("    cuda_version: \"12.4\"\n"));
  EXPECT_TRUE(has("    fabric_manager: true\n"));
  EXPECT_TRUE(has("    expected_count: 8\n"));
  EXPECT_TRUE(has("      - name: \"ib0\"\n")) << "compute: up, not the management or a virtual one";
  EXPECT_FALSE(has("name: \"eth0\"") || has("name: \"docker0\"") || has("name: \"eth2\""));
  EXPECT_TRUE(has("    mtu: 4092\n"));
  EXPECT_TRUE(has("      kind: infiniband\n"));
  EXPECT_TRUE(has("      \"ib0\": \"10.2.0.5/16\"\n"));
  EXPECT_TRUE(has("    - name: \"datasets\"\n      type: nfs\n      source: \"nfs01:/datasets\"\n      mountpoint: \"/datasets\"\n"
                  "      options: [\"vers=4.2\", \"hard\"]\n"));
  EXPECT_EQ(draft.covered_phases, (std::vector<std::string>{"os-init", "gpu-driver", "rdma", "storage", "monitoring"}));
  ASSERT_EQ(draft.todo.size(), 1u) << "nfs4 cannot be written as it is";
  EXPECT_NE(draft.todo[0].find("/scratch as nfs4"), std::string::npos) << draft.todo[0];
  const auto loaded = load_spec(draft.yaml, "draft.yaml");
  EXPECT_TRUE(loaded.spec) << diagnostics_text(loaded) << draft.yaml;
}

// Whatever a node reports stays a value: quotes, newlines and YAML syntax
// in facts cannot add keys to the draft.
TEST(SpecDraft, HostileFactsStayValues) {
  json facts = node_facts();
  facts["timezone"] = "UTC\"\n  evil: true\n#";
  facts["fstab"][0]["target"] = "/data\n    type: bind";
  facts["network"]["interfaces"][1]["name"] = "ib0\": x";
  const SpecDraft draft = draft_spec(facts, source());
  EXPECT_EQ(draft.yaml.find("\n  evil: true"), std::string::npos) << draft.yaml;
  EXPECT_EQ(draft.yaml.find("\n    type: bind"), std::string::npos) << draft.yaml;
  const auto loaded = load_spec(draft.yaml, "draft.yaml");
  // The schema refuses the odd values where it has rules for them; what it
  // accepts is the literal text.
  if (loaded.spec) FAIL() << "a timezone with a newline should not validate";
  EXPECT_NE(diagnostics_text(loaded).find("timezone"), std::string::npos) << diagnostics_text(loaded);
}

TEST(SpecDraft, ANodeWithoutGpusOrSlurmStillDraftsAndSaysSo) {
  json facts = {{"hostname", "cpu-01"},
                {"gpus", {{"count", 0}, {"error", "nvidia-smi: command not found"}}},
                {"packages", {{"slurmd", "22.05.8-4"}}},
                {"files", {{"/etc/systemd/system/slurmd.service.d/gpuexpand.conf",
                            {{"exists", true},
                             {"content", "ExecStart=/usr/sbin/slurmd -D -s -Z --conf-server ctl01:6817 --conf \"Gres=gpu:4 Feature=a,b\"\n"}}}}}};
  const SpecDraft draft = draft_spec(facts, source());
  EXPECT_NE(draft.yaml.find("no GPU seen on gpu-a01 (nvidia-smi: command not found)"), std::string::npos) << draft.yaml;
  EXPECT_NE(draft.yaml.find("    #   controller_address: \"ctl01\"\n"), std::string::npos) << draft.yaml;
  EXPECT_NE(draft.yaml.find("    #   features: [\"a\", \"b\"]\n    #   gres: [\"gpu:4\"]\n"), std::string::npos) << draft.yaml;
  EXPECT_NE(draft.yaml.find("    kernel_modules: []\n"), std::string::npos) << "os: is never empty";
  ASSERT_EQ(draft.todo.size(), 2u);
  EXPECT_NE(draft.todo[0].find("no time servers"), std::string::npos);
  EXPECT_NE(draft.todo[1].find("slurmd 22.05.8-4 runs on gpu-a01 (configuration from ctl01)"), std::string::npos);
  const auto loaded = load_spec(draft.yaml, "draft.yaml");
  EXPECT_TRUE(loaded.spec) << diagnostics_text(loaded) << draft.yaml;
}

}  // namespace
}  // namespace gpuexpand::testing
