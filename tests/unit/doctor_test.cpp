// gpuexpand doctor's findings (src/facts/doctor.cpp) on the recorded facts
// of a lab node in service, each rule by an edit of those facts into the
// state it looks for. The lab puts real nodes into some of these states
// (tests/lab/apply-test.sh, "doctor").

#include <gtest/gtest.h>

#include "gpuexpand/playbook/variables.hpp"
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <cstdio>

#include "gpuexpand/facts/doctor.hpp"
#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

using nlohmann::json;

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = load_spec(read_source_file("examples/lab-rack.yaml"), "lab-rack.yaml");
    ASSERT_TRUE(loaded.spec) << diagnostics_text(loaded);
    spec_ = std::make_unique<ClusterSpec>(std::move(*loaded.spec));
    facts_ = json::parse(read_source_file("tests/fixtures/facts/lab-in-service-plan.json"))["nodes"]["node-01"];
    extras_.node_epoch = 1000;
  }

  std::vector<std::string> findings() const {
    std::vector<std::string> out;
    for (const auto& f : diagnose_node(spec_->nodes.front(), facts_, extras_, 1000)) {
      out.push_back(std::string(f.error ? "ERROR " : "warn ") + f.area + ": " + f.what);
    }
    return out;
  }

  std::string next_of(const std::string& area) const {
    for (const auto& f : diagnose_node(spec_->nodes.front(), facts_, extras_, 1000)) {
      if (f.area == area) return f.next;
    }
    return "";
  }

  json& interface(const std::string& name) {
    for (auto& i : facts_["network"]["interfaces"]) {
      if (i["name"] == name) return i;
    }
    throw std::runtime_error("no interface " + name);
  }

  std::unique_ptr<ClusterSpec> spec_;
  json facts_;
  DoctorExtras extras_;
};

TEST_F(DoctorTest, ANodeInServiceHasNoFindings) { EXPECT_EQ(findings(), std::vector<std::string>{}); }

TEST_F(DoctorTest, NetworkMtuDownAndMissing) {
  interface("eth1")["mtu"] = 1500;
  EXPECT_EQ(findings(), std::vector<std::string>{"ERROR network: MTU 1500 on eth1, wanted 9000"});
  EXPECT_NE(next_of("network").find("ping -M do -s 8972 PEER"), std::string::npos) << next_of("network");
  interface("eth1")["mtu"] = 9000;
  interface("eth1")["state"] = "down";
  EXPECT_EQ(findings(), std::vector<std::string>{"ERROR network: eth1 is down"});
  interface("eth1")["name"] = "eth9";
  EXPECT_EQ(findings(), std::vector<std::string>{"ERROR network: compute interface eth1 missing"});
}

TEST_F(DoctorTest, GpuDriverStates) {
  facts_["gpus"] = {{"count", 0}, {"error", "NVML driver/library version mismatch (NVML library 550.144): …"},
                    {"driver_mismatch", true}};
  EXPECT_EQ(findings(), std::vector<std::string>{
                            "ERROR gpu: driver/library version mismatch: the loaded kernel module is not the installed driver's"});
  EXPECT_NE(next_of("gpu").find("reboot the node"), std::string::npos);
  facts_["gpus"] = {{"count", 0}, {"error", "nvidia-smi cannot communicate with the NVIDIA driver: it is not installed or not loaded"}};
  EXPECT_EQ(findings(), std::vector<std::string>{"ERROR gpu: the NVIDIA kernel module is not loaded"});
  facts_["gpus"] = {{"count", 0}, {"error", "nvidia-smi is not installed (command not found)"}};
  EXPECT_EQ(next_of("gpu"), "gpuexpand apply --until gpu-driver");
}

TEST_F(DoctorTest, GpuCountEccPersistenceAndDeviceFiles) {
  facts_["gpus"]["count"] = 7;
  facts_["gpus"]["devices"][3]["ecc_uncorrected_volatile"] = 2;
  facts_["gpus"]["persistence_mode"] = false;
  facts_["gpus"]["device_files"].erase(facts_["gpus"]["device_files"].size() - 1);
  facts_["gpus"]["device_files"].erase(facts_["gpus"]["device_files"].size() - 1);
  EXPECT_EQ(findings(), (std::vector<std::string>{"ERROR gpu: 7 GPUs visible, 8 expected", "warn gpu: persistence mode off",
                                                  "ERROR gpu: 6 of 7 /dev/nvidia* device files",
                                                  "ERROR gpu: GPU 3: 2 uncorrectable ECC errors",
                                                  "ERROR scheduler: Slurm offers 8 GPUs (GRES gpu:8), 7 are visible"}));
}

// A spec that wants an RDMA fabric and NVIDIA's fabric manager (the lab
// has neither, so these are tested here only).
TEST_F(DoctorTest, RdmaDevicesPortsAndTheFabricManager) {
  std::string text = read_source_file("examples/lab-rack.yaml");
  text.replace(text.find("      kind: none "), 17, "      kind: infiniband ");
  text.replace(text.find("    persistence_mode: true"), 26, "    persistence_mode: true\n    fabric_manager: true");
  auto loaded = load_spec(text, "fabric.yaml");
  ASSERT_TRUE(loaded.spec) << diagnostics_text(loaded);
  const NodeSpec& node = loaded.spec->nodes.front();
  auto found = [&](const json& facts) {
    std::vector<std::string> out;
    for (const auto& f : diagnose_node(node, facts, extras_, 1000)) {
      if (f.area == "network" || f.what.find("fabricmanager") != std::string::npos) {
        out.push_back(std::string(f.error ? "ERROR " : "warn ") + f.area + ": " + f.what + " | " + f.next);
      }
    }
    return out;
  };
  json facts = facts_;
  facts["services"]["nvidia-fabricmanager"] = {{"active", false}, {"enabled", true}, {"exists", true}, {"state", "failed"}};
  facts["network"]["rdma"] = json::array();
  EXPECT_EQ(found(facts),
            (std::vector<std::string>{
                "ERROR gpu: nvidia-fabricmanager is not running: NVLink jobs fail (CUDA error 802, system not yet initialized) | "
                "systemctl status nvidia-fabricmanager; its version must equal the driver's",
                "ERROR network: no RDMA devices (rdma.kind infiniband) | lsmod | grep mlx5_ib; rdma link; ibstat (rdma-core "
                "installed? gpuexpand apply --until rdma)"}));
  // As the RDMA parsers give ports (tests/fixtures/tool-output: ibstat with ports down and one in Initializing).
  facts["services"]["nvidia-fabricmanager"]["active"] = true;
  facts["network"]["rdma"] = json::parse(R"([{"device": "mlx5_0", "port": 1, "state": "active", "link_layer": "infiniband"},
                                             {"device": "mlx5_1", "port": 1, "state": "init", "link_layer": "infiniband"},
                                             {"device": "mlx5_2", "port": 1, "state": "down", "link_layer": "infiniband"}])");
  EXPECT_EQ(found(facts), (std::vector<std::string>{
                              "ERROR network: RDMA port mlx5_1/1 is init | no subnet manager has configured it: is opensm "
                              "(or the fabric's SM) running?",
                              "ERROR network: RDMA port mlx5_2/1 is down | ibstat; the cable and switch port (physical state)"}));
}

TEST_F(DoctorTest, XidLinesByMeaning) {
  extras_ = parse_doctor_extras(
      "epoch 1000\n"
      "xid [ 1234.5] NVRM: Xid (PCI:0000:19:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
      "xid [ 1240.1] NVRM: Xid (PCI:0000:3b:00): 13, pid=99, Graphics Exception\n"
      "xid [ 1250.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=99, Graphics Exception\n");
  ASSERT_TRUE(extras_.node_epoch);
  EXPECT_EQ(*extras_.node_epoch, 1000);
  EXPECT_EQ(findings(),
            (std::vector<std::string>{"warn gpu: Xid 13 in the kernel log (2x): graphics engine exception (often the application)",
                                      "ERROR gpu: Xid 79 in the kernel log (1x): the GPU has fallen off the bus"}));
}

// A real kernel log's NVRM lines (a provider node's `dmesg -T | grep NVRM`,
// tests/fixtures/tool-output/SOURCES.md) as doctor's script passes them on:
// only the Xid lines count, by code.
TEST_F(DoctorTest, RealXidLinesByMeaning) {
  std::istringstream log(read_source_file("tests/fixtures/tool-output/dmesg-T-nvrm-xid-akash-244.txt"));
  std::string script_output = "epoch 1000\n";
  for (std::string line; std::getline(log, line);) {
    if (line.find("NVRM: Xid") != std::string::npos) script_output += "xid " + line + "\n";
  }
  extras_ = parse_doctor_extras(script_output);
  EXPECT_EQ(extras_.xid_lines.size(), 4u);
  EXPECT_EQ(findings(),
            (std::vector<std::string>{"warn gpu: Xid 31 in the kernel log (1x): GPU memory page fault (often the application)",
                                      "warn gpu: Xid 43 in the kernel log (2x): GPU stopped processing (a job was killed)",
                                      "warn gpu: Xid 94 in the kernel log (1x): contained ECC error (the application was stopped)"}));
}

// The script doctor sends, run here under sh with a stand-in dmesg printing
// real Xid line formats (tests/fixtures/SOURCES.md, "Xid lines"): only the
// lines of this boot (stamped at or after PID 1's start, read from
// /proc/1/stat as the node would) and unstamped ones reach doctor.
TEST(DoctorExtrasScript, KeepsOnlyThisBootsXidLines) {
  const std::string dir = ::testing::TempDir() + "gx-doctor-extras";
  std::filesystem::create_directories(dir);
  long long start_ticks = 0;
  {
    std::ifstream stat("/proc/1/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(") ") + 2));
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
      if (i == 22) start_ticks = std::stoll(field);
    }
  }
  if (start_ticks < 2) GTEST_SKIP() << "PID 1 here started at tick " << start_ticks << ": no time before it to stamp";
  const long long hz = sysconf(_SC_CLK_TCK);
  const double before = (static_cast<double>(start_ticks) - 1) / static_cast<double>(hz);
  const double after = static_cast<double>(start_ticks + 100) / static_cast<double>(hz);
  char stamp_before[32], stamp_after[32];
  std::snprintf(stamp_before, sizeof stamp_before, "[%12.6f]", before);
  std::snprintf(stamp_after, sizeof stamp_after, "[%12.6f]", after);
  {
    std::ofstream dmesg(dir + "/dmesg");
    dmesg << "#!/bin/sh\ncat <<'EOF'\n"
          << stamp_before << " NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
          << stamp_after << " NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception\n"
          << stamp_after << " mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE\n"
          << "NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008\n"
          << "EOF\n";
  }
  std::filesystem::permissions(dir + "/dmesg", std::filesystem::perms::owner_all);
  {
    std::ofstream script(dir + "/script.sh");
    script << doctor_extras_script() << "\n";
  }
  FILE* pipe = ::popen(("PATH=" + dir + ":$PATH sh " + dir + "/script.sh 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  ASSERT_EQ(::pclose(pipe), 0) << output;
  const DoctorExtras extras = parse_doctor_extras(output);
  ASSERT_TRUE(extras.node_epoch) << output;
  EXPECT_EQ(extras.xid_lines,
            (std::vector<std::string>{
                std::string(stamp_after) +
                    " NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception",
                "NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008"}))
      << output;
}

TEST_F(DoctorTest, StorageSchedulerDiskAndClock) {
  for (auto it = facts_["mounts"].begin(); it != facts_["mounts"].end(); ++it) {
    if ((*it)["target"] == "/mnt/shared") {
      facts_["mounts"].erase(it);
      break;
    }
  }
  facts_["scheduler"]["slurm"]["slurmd_active"] = false;
  facts_["scheduler"]["slurm"]["node_state"] = "IDLE+DRAIN";
  facts_["disk_free_bytes"]["/var/lib/gpuexpand"] = 100 * 1024 * 1024;
  extras_.node_epoch = 1000 - 400;
  EXPECT_EQ(findings(), (std::vector<std::string>{
                            "ERROR disk: 100 MiB free under /var/lib/gpuexpand (at least 1024 MiB needed)",
                            "ERROR clock: clock 400 s behind this machine: munge credentials (Slurm) fail beyond 300 s",
                            "ERROR storage: shared: /mnt/shared is not mounted", "ERROR scheduler: slurmd is not running",
                            "warn scheduler: drained in Slurm (IDLE+DRAIN)"}));
  EXPECT_NE(next_of("scheduler").find("journalctl -u slurmd"), std::string::npos);
}

// Slurm's reason is in the finding (the controller's words, as the probe
// read them), and a RealMemory above the node's memory is named: Slurm
// drains such a node as "Low RealMemory".
// Storage throughput: acceptance's write test of each mount with a minimum,
// its lines read one by one (the script run for real through /bin/sh on a
// temporary directory standing for the mount is acceptance's own test).
TEST_F(DoctorTest, StorageSlowerThanItsMinimumOrNotWritable) {
  const json vars = playbook_variables(*spec_, spec_->nodes.front());
  const std::string script = doctor_storage_script(vars);
  EXPECT_NE(script.find("dd if=/dev/zero of=\"$f\" bs=1M count=32 conv=fsync"), std::string::npos) << script;
  EXPECT_NE(script.find("/mnt/shared/.gpuexpand-acceptance-node-01"), std::string::npos);
  EXPECT_EQ(script.find("scontrol"), std::string::npos) << "only the storage check";
  json none = vars;
  for (auto& m : none["storage"]) m.erase("min_throughput_mbps");
  EXPECT_EQ(doctor_storage_script(none), "") << "no minimum, nothing to measure";

  const std::string output =
      "@@check storage fail 1.2 /mnt/shared: 3 MB/s write, below the minimum 50 MB/s\n"
      "@@check storage fail 0.0 /mnt/scratch is not mounted\n"
      "@@check storage fail 0.1 /mnt/ro is not writable\n"
      "@@check storage pass 0.4 /mnt/fast: writable, 900 MB/s write, read back\n@@end\n";
  std::vector<std::string> what;
  for (const auto& f : storage_findings("node-01", output)) what.push_back(f.area + ": " + f.what + (f.error ? "" : " (warn)"));
  EXPECT_EQ(what, (std::vector<std::string>{"storage: /mnt/shared: 3 MB/s write, below the minimum 50 MB/s",
                                            "storage: /mnt/ro is not writable"}));
  EXPECT_NE(storage_findings("node-01", output).front().next.find("iperf3"), std::string::npos);
}

// The MTU along the path: a small ping to the peer first (a peer that does
// not answer says nothing about the MTU), then one at the interface's MTU
// with fragmentation forbidden (the lab test runs it between real nodes).
TEST_F(DoctorTest, PathMtuPingAndItsFindings) {
  const json vars = playbook_variables(*spec_, spec_->nodes.front());
  EXPECT_EQ(doctor_path_mtu_script(vars, {}), "") << "no peer, nothing to ping";
  const std::string script = doctor_path_mtu_script(vars, {{"eth1", "198.18.1.12"}});
  EXPECT_NE(script.find("elif ! ping -c 1 -W 2 -I eth1 198.18.1.12 >/dev/null 2>&1; then echo \"@@mtu eth1 198.18.1.12 9000 unreachable\""),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("elif ping -M do -s 8972 -c 2 -W 2 -I eth1 198.18.1.12"), std::string::npos) << script;
  const auto found = path_mtu_findings("node-01", "@@mtu eth1 198.18.1.12 9000 fragmented\n"
                                                  "@@mtu eth2 198.18.2.12 9000 unreachable\n"
                                                  "@@mtu eth3 198.18.3.12 9000 ok\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].what, "eth1: 9000-byte packets do not reach 198.18.1.12 unfragmented (ping -M do -s 8972), small "
                           "ones do: the path does not carry the MTU");
  EXPECT_TRUE(found[0].error);
  EXPECT_EQ(found[1].what, "eth2: 198.18.2.12 does not answer a small ping: the MTU along the path is not measured");
  EXPECT_FALSE(found[1].error);
}

TEST_F(DoctorTest, SlurmsReasonAndARealMemoryTheNodeDoesNotHave) {
  facts_["scheduler"]["slurm"]["real_memory_mb"] = 2048000;
  facts_["memory_mib"] = 2015000;
  EXPECT_EQ(findings(), (std::vector<std::string>{"ERROR scheduler: Slurm expects RealMemory=2048000 MB, the node has "
                                                  "2015000 MiB: Slurm drains it (Low RealMemory)"}));
  EXPECT_NE(next_of("scheduler").find("slurmd's --conf set it"), std::string::npos) << "a dynamic node (the default)";
  auto settings = std::make_shared<json>(*spec_->nodes.front().settings);
  (*settings)["scheduler"]["slurm"]["mode"] = "static";
  const auto dynamic = spec_->nodes.front().settings;
  spec_->nodes.front().settings = settings;
  EXPECT_NE(next_of("scheduler").find("at most what `slurmd -C` prints"), std::string::npos);
  spec_->nodes.front().settings = dynamic;
  facts_["scheduler"]["slurm"]["node_state"] = "IDLE+DRAIN";
  facts_["scheduler"]["slurm"]["reason"] = "Low RealMemory [slurm@2026-12-03T10:00:00]";
  EXPECT_EQ(findings(),
            (std::vector<std::string>{
                "warn scheduler: drained in Slurm (IDLE+DRAIN): Low RealMemory [slurm@2026-12-03T10:00:00]",
                "ERROR scheduler: Slurm expects RealMemory=2048000 MB, the node has 2015000 MiB: Slurm drains it (Low RealMemory)"}));
  facts_["scheduler"]["slurm"]["real_memory_mb"] = 2015000;  // as much as it has: fine
  facts_["scheduler"]["slurm"]["node_state"] = "DOWN+NOT_RESPONDING";
  facts_["scheduler"]["slurm"]["reason"] = "Not responding [slurm@2026-11-30T05:56:41]";
  EXPECT_EQ(findings(), (std::vector<std::string>{"ERROR scheduler: Slurm has the node DOWN+NOT_RESPONDING: Not responding "
                                                  "[slurm@2026-11-30T05:56:41]"}));
}

// As the lab's controller had node-10 registered with a RealMemory above
// its memory (tests/fixtures/slurm/scontrol-show-node-invalid-registration.txt):
// Slurm refuses `state=resume` there, so "drained" and its resume advice
// would mislead; the registration is what to redo.
TEST_F(DoctorTest, ARegistrationSlurmRefusedIsNamedNotJustDrained) {
  facts_["scheduler"]["slurm"]["node_state"] = "UNKNOWN+DRAIN+DYNAMIC_NORM+INVALID_REG";
  facts_["scheduler"]["slurm"]["real_memory_mb"] = 64000;
  facts_["memory_mib"] = 24105;
  EXPECT_EQ(findings(), (std::vector<std::string>{
                            "ERROR scheduler: Slurm refused the node's registration (UNKNOWN+DRAIN+DYNAMIC_NORM+INVALID_REG)",
                            "ERROR scheduler: Slurm expects RealMemory=64000 MB, the node has 24105 MiB: Slurm drains it "
                            "(Low RealMemory)"}));
  EXPECT_NE(next_of("scheduler").find("gpuexpand apply --until scheduler registers it again"), std::string::npos)
      << next_of("scheduler");
  EXPECT_EQ(next_of("scheduler").find("state=resume"), std::string::npos) << "Slurm refuses it for INVALID_REG";
}

TEST_F(DoctorTest, AnAllocationSlurmLostIsNamedWithHowToClearIt) {
  // As the lab's controller had node-05 after a reconfigure 20 ms into a
  // job (tests/fixtures/slurm/scontrol-show-node-lost-allocation.txt).
  facts_["scheduler"]["slurm"]["node_state"] = "ALLOCATED+DYNAMIC_NORM";
  facts_["scheduler"]["slurm"]["cpus_allocated"] = 0;
  EXPECT_EQ(findings(), (std::vector<std::string>{"warn scheduler: Slurm has the node ALLOCATED+DYNAMIC_NORM with no CPU "
                                                  "allocated: a job's end it lost track of"}));
  EXPECT_NE(next_of("scheduler").find("squeue -w node-01 (no job on it?); then, with no job running there, systemctl "
                                      "restart slurmctld"),
            std::string::npos);
  // A job holding CPUs, or a node completing one (its CPUs already given back): nothing to say.
  facts_["scheduler"]["slurm"]["cpus_allocated"] = 2;
  EXPECT_TRUE(findings().empty());
  facts_["scheduler"]["slurm"]["node_state"] = "COMPLETING+DYNAMIC_NORM";
  facts_["scheduler"]["slurm"]["cpus_allocated"] = 0;
  EXPECT_TRUE(findings().empty());
}

TEST_F(DoctorTest, NcclSettingsAndTheDevicesTheyName) {
  json settings = *spec_->nodes.front().settings;
  settings["network"]["nccl"] = {{"env", {{"NCCL_SOCKET_IFNAME", "ib0"}, {"NCCL_IB_HCA", "mlx5_0:1"}, {"NCCL_DEBUG", "WARN"}}},
                                 {"topology_file", "/etc/nccl-topo.xml"}};
  spec_->nodes.front().settings = std::make_shared<const json>(settings);
  facts_["files"]["/etc/nccl.conf"] = {{"exists", true}, {"content", "NCCL_SOCKET_IFNAME=eth1\nNCCL_IB_HCA=mlx5_0:1\n"}};
  facts_["files"]["/etc/nccl-topo.xml"] = {{"exists", false}};
  EXPECT_EQ(findings(), (std::vector<std::string>{
                            "warn network: NCCL_DEBUG is not in /etc/nccl.conf (the spec sets WARN)",
                            "ERROR network: NCCL_IB_HCA names mlx5_0, which this node does not have",
                            "warn network: NCCL_SOCKET_IFNAME=eth1 in /etc/nccl.conf, the spec wants ib0",
                            "ERROR network: NCCL_SOCKET_IFNAME names ib0, which this node does not have",
                            "ERROR network: the NCCL topology file /etc/nccl-topo.xml is missing"}));
}

TEST_F(DoctorTest, MountOptionsGresAndFeaturesAsTheSpecWantsThem) {
  facts_["fstab"][0]["options"] = "allow_other";
  facts_["scheduler"]["slurm"]["gres"] = "gpu:4";
  facts_["scheduler"]["slurm"]["features"] = {"h200"};
  EXPECT_EQ(findings(), (std::vector<std::string>{
                            "warn storage: shared: fstab mounts /mnt/shared with allow_other, the spec wants "
                            "allow_other,reconnect,IdentityFile=/root/.ssh/id_ed25519",
                            "warn scheduler: Slurm has GRES gpu:4, the spec wants gpu:8",
                            "warn scheduler: Slurm has features h200, the spec wants h200,lab"}));
}

TEST_F(DoctorTest, ConnectionFindingsSayWhatToCheck) {
  const NodeSpec& node = spec_->nodes.front();
  const auto next = [&](FailureKind kind) { return connection_finding(node, kind, "m", spec_->ssh).next; };
  EXPECT_NE(next(FailureKind::ConnectTimeout).find("ping 198.18.0.11"), std::string::npos);
  EXPECT_NE(next(FailureKind::Unresolvable).find("getent hosts 198.18.0.11"), std::string::npos);
  EXPECT_NE(next(FailureKind::HostKeyChanged).find("ssh-keygen -R 198.18.0.11 -f ~/.gpuexpand-lab/known_hosts"),
            std::string::npos);
  EXPECT_NE(next(FailureKind::AuthFailed).find("~/.gpuexpand-lab/id_ed25519 in ~root/.ssh/authorized_keys"), std::string::npos);
  EXPECT_NE(next(FailureKind::SudoPassword).find("NOPASSWD"), std::string::npos);
  const Finding f = connection_finding(node, FailureKind::Refused, "node-01 (198.18.0.11): connection refused", spec_->ssh);
  EXPECT_EQ(f.node, "node-01");
  EXPECT_EQ(f.what, "node-01 (198.18.0.11): connection refused");
  EXPECT_TRUE(f.error);
}

TEST_F(DoctorTest, ThisMachineKeyKnownHostsAndLocalFiles) {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpuexpand-doctor-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::string dir = pattern;
  std::ofstream(dir + "/known_hosts") << "198.18.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n";
  spec_->ssh.identity_file = dir + "/no_such_key";
  spec_->ssh.known_hosts = dir + "/known_hosts";
  std::vector<const NodeSpec*> nodes;
  for (const auto& n : spec_->nodes) nodes.push_back(&n);
  std::vector<std::string> got;
  for (const auto& f : diagnose_local(*spec_, nodes, dir + "/.gpuexpand/state.db")) {
    got.push_back(std::string(f.error ? "ERROR " : "warn ") + f.what);
  }
  // A file where the store's folder would be (as root, every folder is writable).
  std::ofstream(dir + "/not-a-folder") << "";
  bool file_in_the_way = false;
  for (const auto& f : diagnose_local(*spec_, nodes, dir + "/not-a-folder/state.db")) {
    file_in_the_way = file_in_the_way || f.what == "cannot write the state store's folder " + dir + "/not-a-folder";
  }
  std::filesystem::remove_all(dir);
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0], "ERROR cannot read the SSH key " + dir + "/no_such_key");
  EXPECT_EQ(got[1], "warn 5 node(s) not in " + dir + "/known_hosts: node-02, node-03, node-04, node-05, node-06");
  EXPECT_TRUE(file_in_the_way);
}

}  // namespace
}  // namespace gpuexpand::testing
