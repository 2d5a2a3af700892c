// Acceptance: settings derived from a real spec, facts checks on recorded
// facts, and the node-side script run for real through /bin/sh with
// stand-ins for scontrol, srun, ping, mountpoint and curl on PATH.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/accept/node_acceptance.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/facts/tool_parsers.hpp"
#include "gpuexpand/playbook/variables.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

json lab_settings() {
  auto loaded = load_spec_file(testing::source_path("examples/lab-rack.yaml"), testing::schema("cluster"));
  EXPECT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const auto& spec = *loaded.spec;
  return acceptance_settings(playbook_variables(spec, spec.nodes[0]));
}

json h200_facts() {
  auto facts = load_facts_file(testing::source_path("tests/fixtures/facts/h200-bare.json"),
                               testing::schema("facts-file"), testing::schema("facts"));
  EXPECT_TRUE(facts) << facts.error().message;
  return facts.value().begin()->second;
}

std::string statuses(const std::vector<CheckResult>& results) {
  std::string out;
  for (const auto& r : results) out += r.check + "=" + std::string(check_status_name(r.status)) + ": " + r.detail + "\n";
  return out;
}

TEST(Acceptance, SettingsFromTheSpec) {
  const json s = lab_settings();
  EXPECT_EQ(s["checks"], (json{"scheduler", "gpu", "network", "storage", "monitoring", "multinode"}));
  EXPECT_EQ(s["gpu"]["expected_count"], 8);
  EXPECT_EQ(s["gpu"]["expected_model"], "NVIDIA H200");
  EXPECT_EQ(s["gpu"]["max_ecc_errors"], 0);
  EXPECT_EQ(s["slurm"]["reservation"], "gpuexpand-accept-" + s["node"].get<std::string>());
  EXPECT_EQ(s["interfaces"][0]["mtu"], 9000);
  EXPECT_EQ(s["mounts"][0]["mountpoint"], "/mnt/shared");
  EXPECT_EQ(s["exporters"][0]["port"], 9100);
  // The record a passing node keeps says what it passed with.
  EXPECT_NE(acceptance_record(s).find("\"expected_model\":\"NVIDIA H200\""), std::string::npos);
}

TEST(Acceptance, DefaultChecksAreThoseWithSomethingToCheck) {
  const json s = acceptance_settings({{"node", {{"name", "n1"}}}, {"scheduler", {{"kind", "none"}}}});
  EXPECT_EQ(s["checks"], json::array());
  const json only = acceptance_settings({{"node", {{"name", "n1"}}}, {"validation", {{"checks", {"gpu"}}}}});
  EXPECT_EQ(only["checks"], json{"gpu"});
  EXPECT_EQ(statuses(facts_checks(only, json::object())), "gpu=skip: no GPUs in the spec\n");
}

TEST(Acceptance, DeclaredChecksChooseAndAdd) {
  const json vars = {{"node", {{"name", "n1"}}},
                     {"gpu", {{"expected_count", 8}}},
                     {"scheduler", {{"kind", "slurm"}, {"slurm", json::object()}}}};
  EXPECT_EQ(acceptance_settings(vars), acceptance_settings(vars, nullptr)) << "nothing declared: every builtin";
  const json declared = json::parse(R"([{"name": "gpu"}, {"name": "ib-fw", "command": "ibstat | grep -q 20.39"}])");
  const json s = acceptance_settings(vars, declared);
  EXPECT_EQ(s["checks"], (json{"gpu", "ib-fw"})) << "scheduler and multinode are not declared: off";
  EXPECT_EQ(s["custom"], json::parse(R"([{"name": "ib-fw", "command": "ibstat | grep -q 20.39", "timeout": 60}])"));
  // Every builtin declared: the same settings (and record) as before.
  json all = json::array();
  for (const auto& name : builtin_checks()) all.push_back({{"name", name}});
  EXPECT_EQ(acceptance_settings(vars, all), acceptance_settings(vars));
  EXPECT_FALSE(acceptance_settings(vars, all).contains("custom"));
}

TEST(Acceptance, ThresholdsFromThePlaybookTheSpecOverrides) {
  const json declared = json::parse(R"([{"name": "scheduler", "job_timeout": 300}, {"name": "gpu", "max_ecc_errors": 2},
                                        {"name": "network", "min_rdma_gbps": 350}])");
  json vars = {{"node", {{"name", "n1"}}}, {"gpu", {{"expected_count", 8}}}};
  json s = acceptance_settings(vars, declared);
  EXPECT_EQ(s["job_timeout"], 300);
  EXPECT_EQ(s["gpu"]["max_ecc_errors"], 2);
  EXPECT_EQ(s["min_rdma_gbps"], 350);
  EXPECT_FALSE(s.contains("min_nccl_busbw")) << "no minimum unless one is set";
  vars["validation"] = {{"job_timeout", 60}, {"max_ecc_errors", 0}, {"min_rdma_gbps", 100}};
  s = acceptance_settings(vars, declared);
  EXPECT_EQ(s["job_timeout"], 60);
  EXPECT_EQ(s["gpu"]["max_ecc_errors"], 0);
  EXPECT_EQ(s["min_rdma_gbps"], 100);
  // Neither: the defaults of old.
  s = acceptance_settings({{"node", {{"name", "n1"}}}, {"gpu", {{"expected_count", 8}}}}, json::array({{{"name", "gpu"}}}));
  EXPECT_EQ(s["job_timeout"], 120);
  EXPECT_EQ(s["gpu"]["max_ecc_errors"], 0);

  const auto wrong = check_declared_checks(json::parse(R"([{"name": "gpu", "job_timeout": 30}])"));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message, "check 'gpu' takes no 'job_timeout' (its thresholds: max_ecc_errors)");
  const auto none = check_declared_checks(json::parse(R"([{"name": "storage", "min_rdma_gbps": 1}])"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "check 'storage' takes no 'min_rdma_gbps' (it has no thresholds)");
  EXPECT_TRUE(check_declared_checks(json::parse(R"([{"name": "x", "command": "true", "timeout": 5}])")));
}

TEST(Acceptance, GpuCheckOnRecordedFacts) {
  json settings = {{"checks", {"gpu"}},
                   {"gpu",
                    {{"expected_count", 8},
                     {"expected_model", "NVIDIA H200"},
                     {"driver_version", "535.129.03"},
                     {"max_ecc_errors", 0}}}};
  json facts = h200_facts();
  EXPECT_EQ(statuses(facts_checks(settings, facts)), "gpu=pass: 8 x NVIDIA H200, driver 535.129.03\n");
  // The spec's version as packages take it: a branch, a revision, an epoch.
  for (const char* wanted : {"535", "535.129.03-1", "3:535.129.03-1.el9"}) {
    settings["gpu"]["driver_version"] = wanted;
    EXPECT_EQ(statuses(facts_checks(settings, facts)), "gpu=pass: 8 x NVIDIA H200, driver 535.129.03\n") << wanted;
  }
  settings["gpu"]["driver_version"] = "53";
  EXPECT_NE(statuses(facts_checks(settings, facts)).find("expected 53"), std::string::npos);

  settings["gpu"]["driver_version"] = "550.90.07";
  settings["gpu"]["persistence_mode"] = true;
  facts["gpus"]["count"] = 7;
  facts["gpus"]["devices"][3]["ecc_uncorrected_volatile"] = 2;
  EXPECT_EQ(statuses(facts_checks(settings, facts)),
            "gpu=fail: 7 GPUs, expected 8; driver 535.129.03, expected 550.90.07; persistence mode is off; GPU 3: 2 "
            "uncorrected ECC errors (at most 0)\n");

  // A GRES that promises another number of GPUs than the node has.
  json gres = {{"checks", {"gpu"}}, {"gpu", {{"expected_count", 8}}}, {"slurm", {{"gres", {"gpu:h200:4"}}}}};
  EXPECT_EQ(statuses(facts_checks(gres, h200_facts())),
            "gpu=fail: the Slurm GRES promises 4 GPUs, the node has 8\n");

  facts["gpus"] = {{"count", 0}};
  EXPECT_EQ(statuses(facts_checks(settings, facts)), "gpu=fail: no GPU found (nvidia-smi missing or failing)\n");
}

TEST(Acceptance, NetworkFactsPartAndRdma) {
  json settings = {{"checks", {"network"}}, {"interfaces", {{{"name", "eth1"}, {"mtu", 9000}}}}, {"rdma", "none"}};
  json facts = {{"network", {{"interfaces", {{{"name", "eth1"}, {"mtu", 1500}, {"state", "up"}}}}}}};
  EXPECT_EQ(statuses(facts_checks(settings, facts)),
            "network=fail: eth1 MTU 1500, expected 9000\n"
            "network=skip: ib_write_bw: no RDMA fabric (network.rdma.kind none)\n");
  facts["network"]["interfaces"][0]["mtu"] = 9000;
  settings["rdma"] = "infiniband";
  EXPECT_EQ(statuses(facts_checks(settings, facts)),
            "network=pass: eth1 up, MTU 9000\n"
            "network=fail: network.rdma.kind is infiniband but the node has no RDMA device\n");
}

TEST(Acceptance, PingPeersComeFromOtherNodesFacts) {
  json settings = {{"interfaces", {{{"name", "eth1"}}, {{"name", "ib0"}}}}};
  json a = {{"network", {{"interfaces", {{{"name", "eth1"}, {"addresses", json::array()}}}}}}};
  json b = {{"network", {{"interfaces", {{{"name", "eth1"}, {"addresses", {"fe80::1/64", "198.18.1.12/24"}}}}}}}};
  const PingPeers peers = ping_peers(settings, {&a, &b});
  EXPECT_EQ(peers, (PingPeers{{"eth1", "198.18.1.12"}}));
}

// An interface with an address of its own pings a peer in its subnet:
// on a fabric of one subnet per rail, another rail's address is no peer.
TEST(Acceptance, PingPeersShareTheInterfacesSubnet) {
  json settings = {{"interfaces", {{{"name", "ib0"}, {"address", "10.100.1.1/16"}}}}};
  json other_rail = {{"network", {{"interfaces", {{{"name", "ib0"}, {"addresses", {"10.101.1.2/16"}}}}}}}};
  json itself = {{"network", {{"interfaces", {{{"name", "ib0"}, {"addresses", {"10.100.1.1/16"}}}}}}}};
  json peer = {{"network", {{"interfaces", {{{"name", "ib0"}, {"addresses", {"10.9.0.1/8", "10.100.7.3/16"}}}}}}}};
  EXPECT_EQ(ping_peers(settings, {&other_rail, &itself, &peer}), (PingPeers{{"ib0", "10.100.7.3"}}));
  EXPECT_TRUE(ping_peers(settings, {&other_rail}).empty());
}

// The script, run through /bin/sh with stand-in tools.
class AcceptanceScript : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/gpx-accept-" + std::to_string(::getpid());
    ::mkdir(dir_.c_str(), 0700);
    ::mkdir((dir_ + "/bin").c_str(), 0700);
    ::mkdir((dir_ + "/it's shared").c_str(), 0700);
  }
  void TearDown() override { std::system(("rm -rf " + shell_quote(dir_)).c_str()); }

  void tool(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/bin/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
  }

  std::string run(std::string script) {
    const std::string marker = "PATH=/usr/local/sbin";
    script.replace(script.find(marker), marker.size(), "PATH=" + dir_ + "/bin:/usr/local/sbin");
    std::ofstream(dir_ + "/script.sh") << script;
    FILE* pipe = ::popen(("sh " + shell_quote(dir_ + "/script.sh") + " 2>&1").c_str(), "r");
    std::string out;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    ::pclose(pipe);
    return out;
  }

  json settings() const {
    return {{"node", "node-01"},
            {"checks", {"scheduler", "network", "storage", "monitoring"}},
            {"job_timeout", 10},
            {"slurm", {{"reservation", "gpuexpand-accept-node-01"}, {"features", {"h200", "lab"}}, {"gres", {"gpu:8"}}}},
            {"interfaces", {{{"name", "eth1"}, {"mtu", 9000}}}},
            {"mounts", {{{"name", "shared"}, {"mountpoint", dir_ + "/it's shared"}, {"min_mbps", 1}}}},
            {"exporters", {{{"name", "node_exporter"}, {"port", 9100}, {"metric", "node_cpu_seconds_total"}}}}};
  }

  std::string dir_;
};

TEST_F(AcceptanceScript, AllPassWithHealthyStandIns) {
  tool("scontrol",
       "case \"$*\" in 'show node node-01 -o') echo 'NodeName=node-01 Arch=x86_64 CoresPerSocket=1 "
       "AvailableFeatures=h200,lab ActiveFeatures=h200,lab Gres=gpu:8 State=IDLE+MAINT ThreadsPerCore=1' ;;"
       " 'show reservation gpuexpand-accept-node-01') exit 0 ;; *) exit 9 ;; esac");
  tool("srun", "[ \"$1 $2\" = '-Q --reservation=gpuexpand-accept-node-01' ] && echo node-01");
  tool("ping", "[ \"$*\" = '-M do -s 8972 -c 2 -W 2 -I eth1 198.18.1.12' ]");
  tool("mountpoint", "[ -d \"$2\" ]");
  tool("curl", "printf '# HELP x\\nnode_cpu_seconds_total{cpu=\"0\"} 1\\n'");
  const std::string out = run(acceptance_script(settings(), {{"eth1", "198.18.1.12"}}, AcceptanceMode::Apply));
  auto results = merge_check_results(settings(), {}, parse_acceptance_output(out));
  ASSERT_EQ(results.size(), 4u) << out;
  EXPECT_TRUE(all_passed(results)) << statuses(results) << out;
  EXPECT_EQ(results[0].detail,
            "state IDLE+MAINT, features h200,lab, GRES gpu:8; a test job ran on node-01 in reservation "
            "gpuexpand-accept-node-01");
  EXPECT_EQ(results[1].detail, "eth1: 9000-byte packets reach 198.18.1.12 unfragmented");
  EXPECT_EQ(results[2].detail.rfind(dir_ + "/it's shared: writable, ", 0), 0u) << results[2].detail;
  EXPECT_EQ(results[3].detail, "node_exporter on port 9100 serves node_cpu_seconds_total");
  // The hold is a field, not a phrase in the detail.
  NodeAcceptance prepared;
  prepared.settings = settings();
  EXPECT_EQ(read_node_acceptance(prepared, out).held_in, "gpuexpand-accept-node-01");
}

// GPUs inside a container: docker through the nvidia runtime when the spec
// configured docker, else podman through CDI; the exact command lines are
// what the stand-ins accept.
TEST_F(AcceptanceScript, AContainerSeesTheGpus) {
  const std::string image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04";
  auto settings_for = [&](const std::string& runtime, const std::string& with_image) {
    return json{{"node", "node-01"},
                {"checks", {"container"}},
                {"job_timeout", 10},
                {"container", {{"runtime", runtime}, {"image", with_image}, {"expected_count", 8}}}};
  };
  auto check = [&](const json& settings) {
    return statuses(merge_check_results(settings, {}, parse_acceptance_output(run(acceptance_script(settings, {}, AcceptanceMode::Apply)))));
  };
  const std::string eight = "for i in 0 1 2 3 4 5 6 7; do echo \"GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-$i)\"; done";
  tool("docker", "[ \"$*\" = 'run --rm --runtime=nvidia --gpus all " + image + " nvidia-smi -L' ] || exit 125; " + eight);
  EXPECT_EQ(check(settings_for("docker", image)), "container=pass: a docker container sees 8 GPUs (" + image + ")\n");
  EXPECT_EQ(check(settings_for("docker", "")), "container=skip: no validation.container_image to run\n");
  // containerd configured (a Kubernetes node): podman reads the CDI spec.
  tool("podman", "[ \"$*\" = 'run --rm --device nvidia.com/gpu=all --security-opt=label=disable " + image +
                     " nvidia-smi -L' ] || exit 125; for i in 0 1 2 3 4 5 6; do echo \"GPU $i: NVIDIA H100 80GB HBM3\"; done");
  EXPECT_EQ(check(settings_for("containerd", image)),
            "container=fail: a podman container sees 7 GPUs, wanted 8: GPU 6: NVIDIA H100 80GB HBM3\n");
  // With pyxis: a job on the node, in its acceptance reservation, asking for its GPUs.
  json pyxis = settings_for("containerd", image);
  pyxis["container"]["pyxis_reservation"] = "gpuexpand-accept-node-01";
  tool("srun", "[ \"$*\" = '-Q --reservation=gpuexpand-accept-node-01 -w node-01 -N 1 --gres=gpu:8 -J gpuexpand-acceptance --container-image=" + image +
                   " nvidia-smi -L' ] || exit 1; " + eight);
  EXPECT_EQ(check(pyxis), "container=pass: a Slurm job (pyxis) container sees 8 GPUs (" + image + ")\n");
  std::system(("rm -f " + shell_quote(dir_ + "/bin/podman")).c_str());
  if (std::system("command -v podman >/dev/null 2>&1") == 0) GTEST_SKIP() << "this machine has podman itself";
  EXPECT_EQ(check(settings_for("containerd", image)),
            "container=skip: no engine to run a container: docker (container_runtime: docker) or podman (CDI)\n");
}

TEST_F(AcceptanceScript, ThePlaybooksOwnChecksRunOnTheNode) {
  json settings = {{"node", "node-01"},
                   {"checks", {"ok-check", "bad-check", "slow-check", "never-reached"}},
                   {"custom",
                    {{{"name", "ok-check"}, {"command", "echo firmware 20.39.1002; echo all good"}, {"timeout", 5}},
                     {{"name", "bad-check"}, {"command", "echo 'it'\\''s broken' >&2; exit 3"}, {"timeout", 5}},
                     {{"name", "slow-check"}, {"command", "sleep 5"}, {"timeout", 1}}}}};
  const std::string out = run(acceptance_script(settings, {}, AcceptanceMode::Apply));
  const auto results = merge_check_results(settings, {}, parse_acceptance_output(out));
  ASSERT_EQ(results.size(), 4u) << out;
  EXPECT_EQ(statuses(results),
            "ok-check=pass: all good\n"
            "bad-check=fail: exit 3: it's broken\n"
            "slow-check=fail: did not finish within 1 s\n"
            "never-reached=skip: nothing to check in the spec\n")
      << out;
  // A script cut off before its end fails the playbook's checks too.
  const auto stopped = merge_check_results(settings, {}, {}, false);
  EXPECT_EQ(stopped[0].status, CheckStatus::Fail);
  EXPECT_EQ(stopped[0].detail, "the check script stopped before its end");
}

TEST_F(AcceptanceScript, NoReservationNoHold) {
  tool("scontrol",
       "case \"$*\" in 'show node node-01 -o') echo 'NodeName=node-01 AvailableFeatures=h200,lab Gres=gpu:8 "
       "State=IDLE' ;; *) exit 1 ;; esac");
  tool("srun", "[ \"$1 $2\" = '-Q -w' ] && echo node-01");
  json only_scheduler = settings();
  only_scheduler["checks"] = {"scheduler"};
  NodeAcceptance prepared;
  prepared.settings = only_scheduler;
  const std::string out = run(acceptance_script(only_scheduler, {}, AcceptanceMode::Verify));
  const AcceptanceOutcome outcome = read_node_acceptance(prepared, out);
  EXPECT_TRUE(outcome.passed()) << statuses(outcome.results) << out;
  EXPECT_EQ(outcome.held_in, "") << out;
}

TEST_F(AcceptanceScript, FailuresSayWhy) {
  tool("scontrol",
       "case \"$*\" in 'show node node-01 -o') echo 'NodeName=node-01 AvailableFeatures=h200 Gres=gpu:4 "
       "State=IDLE ThreadsPerCore=1' ;; *) exit 1 ;; esac");
  tool("ping", "exit 1");
  tool("mountpoint", "exit 1");
  tool("curl", "exit 7");
  const std::string out = run(acceptance_script(settings(), {{"eth1", "198.18.1.12"}}, AcceptanceMode::Verify));
  auto results = merge_check_results(settings(), {}, parse_acceptance_output(out));
  EXPECT_FALSE(all_passed(results));
  EXPECT_EQ(statuses(results),
            "scheduler=fail: missing feature lab GRES gpu:8 (the controller has Features=h200 Gres=gpu:4)\n"
            "network=fail: eth1: 9000-byte packets do not reach 198.18.1.12 (ping -M do -s 8972)\n"
            "storage=fail: " + dir_ + "/it's shared is not mounted\n"
            "monitoring=fail: node_exporter on port 9100 does not serve node_cpu_seconds_total\n");
}

TEST_F(AcceptanceScript, DrainedOrUnregisteredNodesFailTheSchedulerCheck) {
  tool("scontrol",
       "echo 'NodeName=node-01 AvailableFeatures=h200,lab Gres=gpu:8 State=IDLE+DRAIN ThreadsPerCore=1 "
       "Reason=disk bad [root@2026-11-30T05:00:00]'");
  json s = settings();
  s["checks"] = {"scheduler"};
  auto results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Apply)));
  EXPECT_EQ(statuses(results), "scheduler=fail: state IDLE+DRAIN, reason: disk bad [root@2026-11-30T05:00:00]\n");
  tool("scontrol", "echo 'Node node-01 not found' >&2; exit 1");
  results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Apply)));
  EXPECT_EQ(statuses(results), "scheduler=fail: not registered with the controller: Node node-01 not found\n");
}

// Right after (re)registration the controller may still say NOT_RESPONDING
// until its next ping: the check waits for that to clear.
TEST_F(AcceptanceScript, ATransientNotRespondingIsWaitedOut) {
  tool("scontrol",
       "case \"$*\" in 'show node node-01 -o') n=$(cat " + dir_ + "/calls 2>/dev/null || echo 0); echo $((n + 1)) > " +
           dir_ + "/calls; if [ $n -lt 2 ]; then s=IDLE+DYNAMIC_NORM+NOT_RESPONDING; else s=IDLE+DYNAMIC_NORM; fi;"
           " echo \"NodeName=node-01 AvailableFeatures=h200,lab Gres=gpu:8 State=$s ThreadsPerCore=1\" ;; *) exit 1 ;; esac");
  tool("srun", "echo node-01");
  json s = settings();
  s["checks"] = {"scheduler"};
  auto results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Apply)));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, CheckStatus::Pass) << results[0].detail;
  EXPECT_NE(results[0].detail.find("state IDLE+DYNAMIC_NORM,"), std::string::npos) << results[0].detail;
}

// RoCE QoS: checked where the NIC has the controls, skipped with the reason
// where it has not.
TEST_F(AcceptanceScript, PfcCheckedEcnSkippedWithoutControls) {
  json s = {{"node", "node-01"},
            {"checks", {"network"}},
            {"interfaces", {{{"name", "gx-no-such-if0"}, {"mtu", 9000}}}},
            {"pfc_on", "3"},
            {"ecn_priorities", "3"}};
  tool("dcb", "echo 'prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off'");
  auto results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify)));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, CheckStatus::Pass) << results[0].detail;
  EXPECT_NE(results[0].detail.find("gx-no-such-if0: PFC on priorities 3"), std::string::npos) << results[0].detail;
  EXPECT_NE(results[0].detail.find("gx-no-such-if0: ECN not checked: no mlx5 ECN controls in "
                                   "/sys/class/net/gx-no-such-if0/ecn"),
            std::string::npos)
      << results[0].detail;
  tool("dcb", "echo 'prio-pfc 0:off 1:off 2:off 3:off 4:on 5:off 6:off 7:off'");
  results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify)));
  EXPECT_EQ(results[0].status, CheckStatus::Fail);
  EXPECT_NE(results[0].detail.find("gx-no-such-if0: PFC on priorities 4, expected 3"), std::string::npos)
      << results[0].detail;
  tool("dcb", "exit 1");
  results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify)));
  EXPECT_EQ(results[0].status, CheckStatus::Skip) << results[0].detail;
  EXPECT_NE(results[0].detail.find("PFC not checked: the NIC has no DCB support"), std::string::npos);
}

// ib_write_bw between pairs of the node's active RDMA devices, read from
// real client output (tests/fixtures/perftest/, see SOURCES.md) printed by
// a stand-in: the server side (no address) just exits.
TEST_F(AcceptanceScript, RdmaBandwidthBetweenTheNodesHcaPairs) {
  const json facts = {{"network",
                       {{"rdma",
                         {{{"device", "mlx5_2"}, {"port", 1}, {"state", "active"}, {"link_layer", "infiniband"}},
                          {{"device", "mlx5_0"}, {"port", 1}, {"state", "active"}, {"link_layer", "infiniband"}},
                          {{"device", "mlx5_1"}, {"port", 1}, {"state", "down"}, {"link_layer", "infiniband"}},
                          {{"device", "mlx5_3"}, {"port", 2}, {"state", "active"}, {"link_layer", "infiniband"}},
                          {{"device", "mlx5_8"}, {"port", 1}, {"state", "active"}, {"link_layer", "ethernet"}}}}}}};
  const RdmaPairs pairs = rdma_pairs(facts);
  EXPECT_EQ(pairs, (RdmaPairs{{{"mlx5_0", 1}, {"mlx5_2", 1}}, {{"mlx5_3", 2}, {"mlx5_0", 1}}}))
      << "active ones of one link layer (the lone RoCE NIC pairs with nobody), an odd last with the first";
  EXPECT_TRUE(rdma_pairs({{"network", {{"rdma", {{{"device", "mlx5_0"}, {"state", "active"}}}}}}}).empty());

  json s = {{"node", "node-01"}, {"checks", {"network"}}, {"rdma", "roce"}};
  RdmaPairs tested = pairs;
  auto client_prints = [&](const std::string& fixture, int code) {
    tool("ib_write_bw", "echo \"$*\" >> " + shell_quote(dir_ + "/calls") + "\ncase \"$*\" in *127.0.0.1) cat " +
                            shell_quote(testing::source_path("tests/fixtures/perftest/" + fixture)) + "; exit " +
                            std::to_string(code) + " ;; esac");
    return parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify, {tested, 0})));
  };
  auto results = client_prints("ib_write_bw-report-gbits-roce.txt", 0);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, CheckStatus::Pass) << results[0].detail;
  EXPECT_EQ(results[0].detail, "ib_write_bw mlx5_0 -> mlx5_2: 0.48 Gb/s; ib_write_bw mlx5_3 -> mlx5_0: 0.48 Gb/s");
  EXPECT_EQ(testing::read_file(dir_ + "/calls"),
            "-d mlx5_2 -i 1 -p 18515 -D 5 -F --report_gbits\n-d mlx5_0 -i 1 -p 18515 -D 5 -F --report_gbits 127.0.0.1\n"
            "-d mlx5_0 -i 1 -p 18516 -D 5 -F --report_gbits\n-d mlx5_3 -i 2 -p 18516 -D 5 -F --report_gbits 127.0.0.1\n");

  tested = {pairs[0]};  // one pair from here on: each waits a second for its server
  results = client_prints("ib_write_bw-a-report-gbits-ib-first-rows.txt", 0);
  EXPECT_EQ(results[0].detail, "ib_write_bw mlx5_0 -> mlx5_2: 0.34 Gb/s") << "the last row's average";

  s["min_rdma_gbps"] = 1;
  results = client_prints("ib_write_bw-a-report-gbits-ib-first-rows.txt", 0);
  EXPECT_EQ(results[0].status, CheckStatus::Fail);
  EXPECT_NE(results[0].detail.find("ib_write_bw mlx5_0 -> mlx5_2: 0.34 Gb/s, below the minimum 1 Gb/s"), std::string::npos)
      << results[0].detail;

  std::ofstream(dir_ + "/calls", std::ios::trunc).close();
  results = client_prints("ib_write_bw-client-cannot-connect.txt", 1);
  const std::string calls = testing::read_file(dir_ + "/calls");
  size_t clients = 0;
  for (size_t at = 0; (at = calls.find("127.0.0.1", at)) != std::string::npos; ++at) ++clients;
  EXPECT_EQ(clients, 3u) << "a server not listening yet: the client tries three times";
  EXPECT_EQ(results[0].status, CheckStatus::Fail);
  EXPECT_NE(results[0].detail.find("ib_write_bw mlx5_0 -> mlx5_2 failed (exit 1): Couldn't connect to "
                                   "192.168.125.211:18515"),
            std::string::npos)
      << results[0].detail;

  // No perftest on the node: a failure that says what to install.
  ::unlink((dir_ + "/bin/ib_write_bw").c_str());
  s.erase("min_rdma_gbps");
  const std::string no_tool = run(acceptance_script(s, {}, AcceptanceMode::Verify, {pairs, 0}));
  if (std::system("command -v ib_write_bw >/dev/null 2>&1") != 0) {
    results = parse_acceptance_output(no_tool);
    EXPECT_EQ(results[0].detail.find("ib_write_bw is not installed (perftest)"), 0u) << results[0].detail;
  }

  // From facts: one active device is a skip with the reason.
  const auto from_facts = facts_checks(s, {{"network", {{"rdma", {{{"device", "mlx5_0"}, {"state", "active"}}}}}}});
  ASSERT_EQ(from_facts.size(), 1u);
  EXPECT_EQ(from_facts[0].detail, "ib_write_bw: fewer than 2 active RDMA devices: no pair to test between");
  EXPECT_TRUE(facts_checks(s, facts).empty()) << "a pair: ib_write_bw runs in the script, not skipped here";
}

// Only ports that can reach each other inside the node are paired: RoCE
// rails on separate IPv4 subnets (rail-optimized) reach each other only
// between nodes; InfiniBand ports under different subnet managers are
// separate fabrics.
TEST(RdmaPairs, OnlyPortsThatReachEachOtherInsideTheNode) {
  auto roce = [](const std::string& device, const std::string& netdev) {
    return json{{"device", device}, {"port", 1}, {"state", "active"}, {"link_layer", "ethernet"}, {"netdev", netdev}};
  };
  auto interface = [](const std::string& name, const std::string& address) {
    return json{{"name", name}, {"addresses", {"fe80::1/64", address}}};
  };
  json rails = {{"network",
                 {{"rdma", {roce("mlx5_0", "ens1np0"), roce("mlx5_1", "ens2np0"), roce("mlx5_2", "ens3np0")}},
                  {"interfaces",
                   {interface("ens1np0", "10.0.0.5/24"), interface("ens2np0", "10.0.1.5/24"),
                    interface("ens3np0", "10.0.2.5/24")}}}}};
  EXPECT_TRUE(rdma_pairs(rails).empty());
  const json s = {{"node", "node-01"}, {"checks", {"network"}}, {"rdma", "roce"}};
  const auto skipped = facts_checks(s, rails);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].status, CheckStatus::Skip);
  EXPECT_EQ(skipped[0].detail,
            "ib_write_bw: no two active RDMA ports share a link layer and subnet (rails on separate subnets reach "
            "each other only between nodes): no pair inside the node");

  // Two on one /16 (10.0.1.5 and 10.0.200.9), one elsewhere.
  rails["network"]["interfaces"][0]["addresses"][1] = "10.0.200.9/16";
  rails["network"]["interfaces"][1]["addresses"][1] = "10.0.1.5/16";
  EXPECT_EQ(rdma_pairs(rails), (RdmaPairs{{{"mlx5_0", 1}, {"mlx5_1", 1}}}));

  auto ib = [](const std::string& device, int sm) {
    return json{{"device", device}, {"port", 1}, {"state", "active"}, {"link_layer", "infiniband"}, {"sm_lid", sm}};
  };
  const json fabrics = {{"network", {{"rdma", {ib("mlx5_0", 1), ib("mlx5_1", 7), ib("mlx5_2", 1), ib("mlx5_3", 7)}}}}};
  EXPECT_EQ(rdma_pairs(fabrics), (RdmaPairs{{{"mlx5_0", 1}, {"mlx5_2", 1}}, {{"mlx5_1", 1}, {"mlx5_3", 1}}}));

  // A real H100 server (tests/fixtures/tool-output/SOURCES.md): eight NDR
  // HCAs under one subnet manager pair up; its Ethernet ports are down.
  auto ports = parse_ibstat(testing::read_file(
      testing::source_path("tests/fixtures/tool-output/ibstat-cx7-ib-ndr400-h100x8-3eth-down.txt")));
  ASSERT_TRUE(ports) << ports.error().message;
  const RdmaPairs real = rdma_pairs({{"network", {{"rdma", *ports}}}});
  EXPECT_EQ(real.size(), 4u);
  for (const auto& [a, b] : real) EXPECT_NE(a.device, b.device);
}

// all_reduce_perf over the node's GPUs where nccl-tests is installed, read
// from real output (tests/fixtures/nccl-tests/, see SOURCES.md) printed by
// a stand-in.
TEST_F(AcceptanceScript, NcclAllReduceOverTheNodesGpus) {
  json s = {{"node", "node-01"}, {"checks", {"network"}}, {"job_timeout", 30}};
  const NodeHardware eight{{}, 8};
  tool("all_reduce_perf", "echo \"$*\" > " + shell_quote(dir_ + "/args") + "\ncat " +
                              shell_quote(testing::source_path("tests/fixtures/nccl-tests/all_reduce_perf-ring-tail.txt")));
  auto results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify, eight)));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, CheckStatus::Pass) << results[0].detail;
  EXPECT_EQ(results[0].detail, "NCCL: all_reduce_perf over 8 GPUs: bus bandwidth 95.3009 GB/s");
  EXPECT_EQ(testing::read_file(dir_ + "/args"), "-b 8M -e 256M -f 2 -g 8\n");

  s["min_nccl_busbw"] = 150;
  results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify, eight)));
  EXPECT_EQ(results[0].status, CheckStatus::Fail);
  EXPECT_EQ(results[0].detail, "NCCL: all_reduce_perf over 8 GPUs: bus bandwidth 95.3009 GB/s, below the minimum 150 GB/s");

  tool("all_reduce_perf", "sed 's/^# Out of bounds values : 0 OK/# Out of bounds values : 3 FAILED/' " +
                              shell_quote(testing::source_path("tests/fixtures/nccl-tests/all_reduce_perf-ring-tail.txt")));
  s.erase("min_nccl_busbw");
  results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify, eight)));
  EXPECT_EQ(results[0].status, CheckStatus::Fail);
  EXPECT_EQ(results[0].detail, "NCCL: all_reduce_perf over 8 GPUs: 3 out-of-bounds values");

  tool("all_reduce_perf", "echo 'Cuda failure common.cu:1011 no CUDA-capable device is detected' >&2; exit 1");
  results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify, eight)));
  EXPECT_EQ(results[0].status, CheckStatus::Fail);
  EXPECT_NE(results[0].detail.find("NCCL: all_reduce_perf over 8 GPUs failed (exit 1): Cuda failure"), std::string::npos)
      << results[0].detail;

  // Not installed: a skip that says so. One GPU: nothing to all-reduce.
  ::unlink((dir_ + "/bin/all_reduce_perf").c_str());
  if (std::system("command -v all_reduce_perf >/dev/null 2>&1") != 0) {
    results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify, eight)));
    EXPECT_EQ(results[0].status, CheckStatus::Skip);
    EXPECT_EQ(results[0].detail, "NCCL: all_reduce_perf (nccl-tests) is not installed");
  }
  EXPECT_EQ(run(acceptance_script(s, {}, AcceptanceMode::Verify, {{}, 1})).find("all_reduce_perf"), std::string::npos);
  const auto from_facts = facts_checks(s, {{"gpus", {{"count", 1}}}});
  ASSERT_EQ(from_facts.size(), 2u) << "no RDMA fabric, and one GPU";
  EXPECT_EQ(from_facts[1].detail, "NCCL: fewer than 2 GPUs on the node, no all_reduce_perf");
}

TEST_F(AcceptanceScript, NcclTopologyFileMustBeThere) {
  json s = {{"node", "node-01"}, {"checks", {"network"}}, {"nccl_topology_file", dir_ + "/it's topo.xml"}};
  auto results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify)));
  EXPECT_EQ(statuses(results), "network=fail: NCCL topology " + dir_ +
                                   "/it's topo.xml is missing or not an NCCL topology (no <system>)\n");
  std::ofstream(dir_ + "/it's topo.xml") << "<system version=\"1\">\n</system>\n";
  results = parse_acceptance_output(run(acceptance_script(s, {}, AcceptanceMode::Verify)));
  EXPECT_EQ(statuses(results), "network=pass: NCCL topology " + dir_ + "/it's topo.xml present\n");
}

TEST_F(AcceptanceScript, NoPeerIsASkipAndAStoppedScriptFails) {
  json s = settings();
  s["checks"] = {"network", "storage"};
  auto results = merge_check_results(s, {}, parse_acceptance_output("@@check network skip 0.00 eth1: no peer\n"));
  EXPECT_EQ(statuses(results),
            "network=skip: eth1: no peer\nstorage=fail: no result: the check script stopped early\n");
  // A script that never reached its end (the connection dropped): what it
  // did not report fails, even where the facts alone would pass.
  EXPECT_FALSE(acceptance_script_finished("@@check network skip 0.00 eth1: no peer\n"));
  EXPECT_TRUE(acceptance_script_finished("@@check network skip 0.00 x\n@@end\n"));
  results = merge_check_results(s, {{0, "", "network", CheckStatus::Pass, "eth1 up, MTU 9000", 0, ""}}, {}, false);
  EXPECT_EQ(statuses(results),
            "network=fail: eth1 up, MTU 9000; the check script stopped before its end\n"
            "storage=fail: the check script stopped before its end\n");
  const std::string script = acceptance_script(s, {}, AcceptanceMode::Verify);
  EXPECT_NE(script.find("no other node of this run has an IPv4 address on eth1"), std::string::npos);
}

TEST(Acceptance, ResultLinesMerge) {
  auto results = parse_acceptance_output(
      "noise\n@@check storage pass 0.50 /a: writable\n@@check storage fail 1.25 /b is not mounted\n"
      "@@check gpu skip 0 x\n@@check bogus maybe 1 y\n");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, CheckStatus::Fail);
  EXPECT_EQ(results[0].detail, "/a: writable; /b is not mounted");
  EXPECT_DOUBLE_EQ(results[0].seconds, 1.75);
  EXPECT_EQ(failure_summary(results), "storage: /a: writable; /b is not mounted");
}

TEST(Acceptance, ReleaseDrainAndMultinodeCommands) {
  const json s = {{"node", "node-01"}, {"slurm", {{"reservation", "gpuexpand-accept-node-01"}}}};
  const AcceptanceCommand release = release_command(s);
  EXPECT_EQ(release.command.rfind("if scontrol show reservation gpuexpand-accept-node-01 >/dev/null 2>&1; then "
                                  "scontrol delete reservation=gpuexpand-accept-node-01 || exit 1; fi; ",
                                  0),
            0u);
  EXPECT_EQ(release.stdin_data, acceptance_record(s));
  EXPECT_EQ(drain_command(s, "gpu: driver 535, it's wrong"),
            "scontrol update nodename=node-01 state=drain reason='gpuexpand acceptance: gpu: driver 535, it'\\''s wrong'");
  EXPECT_EQ(drain_command({{"node", "n"}}, "x"), "true") << "no Slurm: nothing to drain";
  EXPECT_EQ(multinode_command({"node-01", "node-02"}, 60),
            "timeout 60 srun -Q -N 2 -w node-01,node-02 -t 2 -J gpuexpand-multinode hostname 2>&1");
  EXPECT_EQ(multinode_result({"node-01", "node-02"}, 0, "node-02\nnode-01\n", 1.5).status, CheckStatus::Pass);
  const CheckResult failed = multinode_result({"node-01", "node-02"}, 1, "srun: error: Unable to allocate\n", 1);
  EXPECT_EQ(failed.status, CheckStatus::Fail);
  EXPECT_EQ(failed.detail, "the job over node-01, node-02 failed (exit 1): srun: error: Unable to allocate ");
}

// validation.multinode_nodes: jobs of K nodes each, every node in exactly
// one job, never a job of one node.
TEST(Acceptance, MultinodeGroups) {
  using Groups = std::vector<std::vector<size_t>>;
  EXPECT_EQ(multinode_groups(0, 0), Groups{});
  EXPECT_EQ(multinode_groups(1, 0), Groups{}) << "one node: no multi-node job";
  EXPECT_EQ(multinode_groups(4, 0), (Groups{{0, 1, 2, 3}})) << "unset: one job over all";
  EXPECT_EQ(multinode_groups(4, 2), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(multinode_groups(5, 2), (Groups{{0, 1}, {2, 3, 4}})) << "a lone last node joins the job before";
  EXPECT_EQ(multinode_groups(7, 3), (Groups{{0, 1, 2}, {3, 4, 5, 6}}));
  EXPECT_EQ(multinode_groups(8, 3), (Groups{{0, 1, 2}, {3, 4, 5}, {6, 7}}));
  EXPECT_EQ(multinode_groups(3, 8), (Groups{{0, 1, 2}})) << "fewer nodes than K: one job over those there are";

  json vars = {{"node", {{"name", "n1"}}}, {"validation", {{"job_timeout", 60}}}};
  EXPECT_FALSE(acceptance_settings(vars).contains("multinode_nodes")) << "records made without it stay valid";
  vars["validation"]["multinode_nodes"] = 4;
  EXPECT_EQ(acceptance_settings(vars)["multinode_nodes"], 4);
}

}  // namespace
}  // namespace gpuexpand

namespace gpuexpand::testing {
namespace {

TEST(CheckStatusWords, RoundTripAndNothingElse) {
  for (CheckStatus status : {CheckStatus::Pass, CheckStatus::Fail, CheckStatus::Skip}) {
    EXPECT_EQ(parse_check_status(check_status_name(status)), status);
  }
  EXPECT_EQ(check_status_name(CheckStatus::Skip), "skip");
  EXPECT_EQ(parse_check_status("PASS"), std::nullopt);
  EXPECT_EQ(parse_check_status("ok"), std::nullopt);
}

}  // namespace
}  // namespace gpuexpand::testing
