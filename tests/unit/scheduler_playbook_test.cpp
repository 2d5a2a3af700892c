// The scheduler phase as planned from real example specs: the exact Slurm
// registration line and the exact kubeadm JoinConfiguration and commands
// (no API server can run here: these are what the Kubernetes path is tested
// on), run through /bin/sh with stand-ins for kubeadm and kubectl. The join
// token never enters a plan.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gpuexpand/exec/checkpoint.hpp"
#include "gpuexpand/steps/action.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/plan/controller.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

constexpr const char* kToken = "q7x9ab.h3k2m8p4r6t1v5w0";

class SchedulerPlaybook : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/gpx-sched-" + std::to_string(::getpid());
    ASSERT_EQ(std::system(("mkdir -p " + dir_ + "/home/.gpuexpand/infer-west " + dir_ + "/home/.gpuexpand-lab " + dir_ +
                           "/bin " + dir_ + "/etc " + dir_ + "/run " + dir_ + "/var " + dir_ + "/dev")
                              .c_str()),
              0);
    std::ofstream(dir_ + "/home/.gpuexpand/infer-west/join-token") << kToken << "\n";
    std::ofstream(dir_ + "/home/.gpuexpand-lab/munge.key") << "munge";
    const char* home = std::getenv("HOME");
    saved_home_ = home ? home : "";
    ::setenv("HOME", (dir_ + "/home").c_str(), 1);
  }
  void TearDown() override {
    ::setenv("HOME", saved_home_.c_str(), 1);
    std::system(("rm -rf " + dir_).c_str());
  }

  // The scheduler phase's steps for the first node of an example spec,
  // planned against a bare node's facts.
  std::vector<ResolvedStep> scheduler_steps(const std::string& example) { return phase_steps(example, "scheduler"); }

  std::vector<ResolvedStep> phase_steps(const std::string& example, const std::string& wanted) {
    auto loaded = load_spec_file(example.front() == '/' ? example : testing::source_path(example),
                                 testing::schema("cluster"));
    EXPECT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
    spec_ = *loaded.spec;
    auto facts = load_facts_file(testing::source_path("tests/fixtures/facts/h200-bare.json"),
                                 testing::schema("facts-file"), testing::schema("facts"));
    EXPECT_TRUE(facts) << facts.error().message;
    json node_facts = facts.value().begin()->second;
    plan_ = plan_node(spec_, spec_.nodes[0], testing::playbooks(), &node_facts);
    for (const auto& phase : plan_.phases) {
      if (phase.phase == wanted) return phase.steps;
    }
    ADD_FAILURE() << "no " << wanted << " phase in the plan: " << plan_.message;
    return {};
  }

  // examples/lab-rack.yaml with its slurm `mode: dynamic` line replaced
  // by `slurm_lines` (at that block's indent), written here as `name`.
  std::string lab_rack_with(const std::string& name, const std::string& slurm_lines) {
    std::string text = testing::read_source_file("examples/lab-rack.yaml");
    const size_t at = text.find("      mode: dynamic");
    EXPECT_NE(at, std::string::npos);
    text.replace(at, text.find('\n', at) - at, slurm_lines);
    std::ofstream(dir_ + "/" + name) << text;
    return dir_ + "/" + name;
  }

  static const ResolvedStep& step(const std::vector<ResolvedStep>& steps, const std::string& id) {
    for (const auto& s : steps) {
      if (s.id == id || s.key == id) return s;
    }
    throw std::runtime_error("no step " + id);
  }

  void tool(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/bin/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
  }

  // Runs a step's shell text with /etc/gpuexpand and /run moved under the
  // test directory and the stand-ins first on PATH.
  std::pair<int, std::string> run(std::string script) {
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"/etc/gpuexpand/", dir_ + "/etc/"},
                                   {"/run/", dir_ + "/run/"},
                                   {"/var/lib/gpuexpand/", dir_ + "/var/"},
                                   {"/sys/class/net/", dir_ + "/sys/"},
                                   {"/etc/slurm/", dir_ + "/etc/"}}) {
      for (size_t at = 0; (at = script.find(from, at)) != std::string::npos; at += to.size()) {
        script.replace(at, from.size(), to);
      }
    }
    std::ofstream(dir_ + "/step.sh") << "PATH=" << dir_ << "/bin:$PATH\n" << script;
    FILE* pipe = ::popen(("sh " + dir_ + "/step.sh 2>&1").c_str(), "r");
    std::string out;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    const int status = ::pclose(pipe);
    return {WEXITSTATUS(status), out};
  }

  std::string dir_, saved_home_;
  ClusterSpec spec_;
  NodePlan plan_;
};

TEST_F(SchedulerPlaybook, SlurmDynamicRegistrationLine) {
  const auto steps = scheduler_steps("examples/lab-rack.yaml");
  EXPECT_EQ(step(steps, "slurm-packages").params["names"], (json{"slurmd", "slurm-client", "munge"}));
  const auto& key = step(steps, "munge-key");
  EXPECT_EQ(key.params["src_sha256"], sha256_hex("munge"));
  EXPECT_EQ(key.params["mode"], "0400");
  const std::string unit = step(steps, "slurmd-dynamic").params["content"];
  EXPECT_NE(unit.find("ConditionPathExists=\n"), std::string::npos) << unit;
  EXPECT_NE(unit.find("ExecStart=/usr/sbin/slurmd -D -s -Z --conf-server 198.18.0.10 --conf \"Gres=gpu:8 "
                      "Feature=h200,lab State=DRAIN\" $SLURMD_OPTIONS\n"),
            std::string::npos)
      << unit;
  // Without static nodes the controller is asked only about the node's
  // gres.conf line: the static node's step is not even probed. That line
  // names the node's device files, so it is asked once the facts are in.
  const FactsRequest request = facts_request_for(steps_to_probe(spec_, spec_.nodes[0], testing::playbooks()));
  EXPECT_TRUE(request.controller_checks.empty());
  EXPECT_EQ(request.controller_unresolved.count("slurm-gres-line"), 1u);
  json facts = {{"gpus", {{"gres_file", "/dev/nvidia[0-7]"}}}};
  const FactsRequest with_facts = facts_request_for(steps_to_probe(spec_, spec_.nodes[0], testing::playbooks(), &facts));
  ASSERT_EQ(with_facts.controller_checks.count("slurm-gres-line"), 1u);
  EXPECT_NE(with_facts.controller_checks.at("slurm-gres-line").find("/dev/nvidia[0-7]"), std::string::npos);
  const std::string registration = step(steps, "slurm-registration").params["run"];
  // The reservation and the record as C++ names them (gpuexpand.* variables).
  EXPECT_EQ(registration.rfind("N=node-01; F=h200,lab; G=gpu:8\n"
                               "R=gpuexpand-accept-node-01; REC=/var/lib/gpuexpand/accepted.json\n",
                               0),
            0u)
      << registration;
  EXPECT_NE(registration.find("flags=maint,ignore_jobs"), std::string::npos);
  // Rollback: a node this step registered is removed from the controller;
  // one registered before gets its old features back and stays.
  // Whether slurmd ran before the phase comes from the checkpoint the
  // restore script points at.
  const std::string rollback = step(steps, "slurm-registration").params["rollback"];
  tool("scontrol", "echo \"$*\" >> " + dir_ + "/scontrol.log");
  ASSERT_EQ(std::system(("mkdir -p " + dir_ + "/cp && printf 'slurmd\\tdisabled\\tinactive\\n' > " + dir_ +
                         "/cp/services && echo h200 > " + dir_ + "/var/slurm-features-before")
                            .c_str()),
            0);
  EXPECT_EQ(run("GPUEXPAND_CHECKPOINT=" + dir_ + "/cp\n" + rollback).first, 0);
  ASSERT_EQ(std::system(("printf 'slurmd\\tenabled\\tactive\\n' > " + dir_ + "/cp/services && echo h200 > " + dir_ +
                         "/var/slurm-features-before")
                            .c_str()),
            0);
  EXPECT_EQ(run("GPUEXPAND_CHECKPOINT=" + dir_ + "/cp\n" + rollback).first, 0);
  EXPECT_EQ(testing::read_file(dir_ + "/scontrol.log"),
            "delete reservation=gpuexpand-accept-node-01\ndelete nodename=node-01\n"
            "update nodename=node-01 availablefeatures=h200 activefeatures=h200\n");
  EXPECT_NE(::access((dir_ + "/var/slurm-features-before").c_str(), F_OK), 0);
}

// pyxis: enroot and the plugin's package installed, its plugstack line for
// the plugin the Debian package installs, slurmd restarted for it.
TEST_F(SchedulerPlaybook, PyxisPackagesAndPlugin) {
  const auto steps = scheduler_steps(lab_rack_with("pyxis.yaml", "      mode: dynamic\n      pyxis: true"));
  EXPECT_EQ(step(steps, "pyxis-packages").params["names"], (json{"enroot", "enroot+caps", "nvslurm-plugin-pyxis"}));
  EXPECT_EQ(step(steps, "pyxis-plugin").params["path"], "/etc/slurm/plugstack.conf.d/pyxis.conf");
  EXPECT_EQ(step(steps, "pyxis-plugin").params["content"], "required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n");
  bool restarts = false;
  for (const auto& phase : plan_.phases) {
    for (const auto& c : phase.changes) restarts = restarts || (phase.phase == "scheduler" && c.target == "service slurmd");
  }
  EXPECT_TRUE(restarts);
  const auto none = scheduler_steps("examples/lab-rack.yaml");
  EXPECT_THROW(step(none, "pyxis-packages"), std::runtime_error) << "only where the spec asks";
}

TEST_F(SchedulerPlaybook, KubeadmJoinConfigurationAndCommands) {
  const auto steps = scheduler_steps("examples/k8s-rack.yaml");
  const auto& token = step(steps, "kubeadm-token");
  EXPECT_EQ(token.params["src_sha256"], sha256_hex(std::string(kToken) + "\n"));
  EXPECT_EQ(token.params["path"], "/etc/gpuexpand/kubeadm-join-token");
  EXPECT_EQ(step(steps, "kubeadm-join-config").params["content"],
            "# Managed by gpuexpand. The bootstrap token is not in this file: it is\n"
            "# read from /etc/gpuexpand/kubeadm-join-token when kubeadm runs.\n"
            "apiVersion: kubeadm.k8s.io/v1beta3\n"
            "kind: JoinConfiguration\n"
            "discovery:\n"
            "  bootstrapToken:\n"
            "    apiServerEndpoint: \"k8s-api.example.com:6443\"\n"
            "    token: \"@GPUEXPAND_TOKEN@\"\n"
            "    caCertHashes: [\"sha256:5038ca523182bf42d0da9b8a962d7ce03df0eb42479ba0346b7aa24b80c6f810\"]\n"
            "nodeRegistration:\n"
            "  name: \"k8s-gpu-01\"\n"
            "  taints: [{\"effect\":\"NoSchedule\",\"key\":\"nvidia.com/gpu\",\"value\":\"present\"}]\n"
            "  kubeletExtraArgs:\n"
            "    node-labels: \"gpu-type=h100,network-tier=roce-400g,storage-zone=zone-b\"\n");
  // The token is nowhere in the plan document.
  Plan plan;
  plan.nodes.push_back(plan_);
  EXPECT_EQ(plan_to_json(plan).dump().find(kToken), std::string::npos);

  // The join, run: kubeadm gets a configuration with the token in it, which
  // is gone afterwards; the command line never holds the token.
  std::ofstream(dir_ + "/etc/kubeadm-join-token") << kToken << "\n";
  std::ofstream(dir_ + "/etc/kubeadm-join.yaml") << step(steps, "kubeadm-join-config").params["content"].get<std::string>();
  tool("kubeadm", "echo \"args: $*\" > " + dir_ + "/kubeadm.args; cp \"$3\" " + dir_ + "/kubeadm.config");
  const std::string join = step(steps, "kubeadm-join").params["run"];
  EXPECT_EQ(join.find(kToken), std::string::npos);
  EXPECT_NE(join.find("sed -f \"$c.sed\""), std::string::npos) << "the token never reaches a process's argv";
  auto [rc, out] = run(join);
  EXPECT_EQ(rc, 0) << out;
  const std::string a = testing::read_file(dir_ + "/kubeadm.args"), c = testing::read_file(dir_ + "/kubeadm.config");
  EXPECT_EQ(a.rfind("args: join --config " + dir_ + "/run/gpuexpand-kubeadm.", 0), 0u) << a;
  EXPECT_NE(c.find(std::string("    token: \"") + kToken + "\"\n"), std::string::npos) << c;
  EXPECT_EQ(std::system(("ls " + dir_ + "/run | grep -q .").c_str()) == 0, false) << "the filled-in config is removed";

  // A token file that does not hold a bootstrap token: refused, kubeadm not run.
  std::ofstream(dir_ + "/etc/kubeadm-join-token") << "not-a-token\n";
  ::unlink((dir_ + "/kubeadm.args").c_str());
  auto [bad_rc, bad_out] = run(join);
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(bad_out.find("does not hold a kubeadm bootstrap token"), std::string::npos) << bad_out;
  EXPECT_NE(::access((dir_ + "/kubeadm.args").c_str(), F_OK), 0);

  // Labels through the kubelet's credentials (taints are set at the join).
  tool("kubectl", "echo \"$*\" >> " + dir_ + "/kubectl.log");
  auto [label_rc, label_out] = run(step(steps, "kubernetes-labels").params["run"]);
  EXPECT_EQ(label_rc, 0) << label_out;
  EXPECT_EQ(testing::read_file(dir_ + "/kubectl.log"),
            "--kubeconfig=/etc/kubernetes/kubelet.conf label node k8s-gpu-01 --overwrite gpu-type=h100 "
            "network-tier=roce-400g storage-zone=zone-b\n");
  // The check passes on a node that has them, fails on one that lacks one.
  tool("kubectl", "printf '{\"gpu-type\":\"h100\",\"network-tier\":\"roce-400g\",\"storage-zone\":\"zone-b\"}'");
  const std::string check = step(steps, "kubernetes-labels").params["check"];
  EXPECT_EQ(run(check).first, 0) << run(check).second;
  tool("kubectl", "printf '{\"gpu-type\":\"h100\"}'");
  EXPECT_EQ(run(check).first, 1);
}

// The registration check runs in every facts probe and decides from one
// `scontrol show node -o` line: here lines captured from the lab's
// slurmctld (tests/fixtures/slurm/), edited where a case needs it.
TEST_F(SchedulerPlaybook, SlurmRegistrationCheckOnCapturedLines) {
  const auto steps = scheduler_steps("examples/lab-rack.yaml");
  const std::string check = step(steps, "slurm-registration").params["check"];
  std::ofstream(dir_ + "/var/accepted.json") << "{}";
  auto check_with = [&](const std::string& fixture, const std::string& edit = "", bool reserved = false) {
    tool("scontrol", "case \"$1 $2\" in\n'show node') sed -e " + shell_quote(edit.empty() ? "p;d" : edit) + " " +
                         shell_quote(testing::source_path("tests/fixtures/slurm/" + fixture)) + " ;;\n" +
                         "'show reservation') exit " + (reserved ? "0" : "1") + " ;;\nesac");
    return run(check).first;
  };
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt"), 0) << "features h200,lab and gpu:8 as the spec says";
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt", "s/AvailableFeatures=h200,lab/AvailableFeatures=lab,h200/"), 0)
      << "features are a set";
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt", "s/AvailableFeatures=h200,lab/AvailableFeatures=h200/"), 1);
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt", "s/AvailableFeatures=h200,lab/AvailableFeatures=h200,lab,x/"), 1);
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt", "s/ Gres=gpu:8 / Gres=gpu:8(S:0-1) /"), 0)
      << "the socket suffix is not part of the GRES";
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt", "s/ Gres=gpu:8 / Gres=gpu:4 /"), 1);
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt", "s/ Gres=gpu:8 / Gres=(null) /"), 1);
  EXPECT_EQ(check_with("scontrol-show-node-drained.txt"), 0) << "drained with a reason: by acceptance, not pending";
  EXPECT_EQ(check_with("scontrol-show-node-drained.txt", "s/ Reason=.*//"), 1)
      << "drained without a reason: its registration's State=DRAIN still stands";
  EXPECT_EQ(check_with("scontrol-show-node-missing.txt"), 1) << "not registered";
  ASSERT_EQ(::unlink((dir_ + "/var/accepted.json").c_str()), 0);
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt"), 1) << "not accepted and not held";
  EXPECT_EQ(check_with("scontrol-show-node-idle.txt", "", true), 0) << "held in its reservation";
}

// Inside the facts probe the check reads the probe's own `scontrol show
// node` line (GX_SLURM_NODE, asked by the hostname) when it is this node's:
// one RPC to slurmctld per node and probe. Another node's line (a hostname
// that is not the node's name) is not taken for it.
TEST_F(SchedulerPlaybook, SlurmRegistrationCheckReadsTheProbesLineForThisNode) {
  const auto steps = scheduler_steps("examples/lab-rack.yaml");
  const std::string check = step(steps, "slurm-registration").params["check"];
  std::ofstream(dir_ + "/var/accepted.json") << "{}";
  const std::string log = dir_ + "/scontrol.log";
  tool("scontrol", "echo \"$*\" >> " + log + "; exit 1");
  std::string line = testing::read_file(testing::source_path("tests/fixtures/slurm/scontrol-show-node-idle.txt"));
  line = line.substr(0, line.find('\n'));
  ASSERT_EQ(line.rfind("NodeName=node-05 ", 0), 0u);
  const std::string this_node = "NodeName=node-01 " + line.substr(17);
  EXPECT_EQ(run("GX_SLURM_NODE=" + shell_quote(this_node) + "; export GX_SLURM_NODE\n" + check).first, 0);
  EXPECT_FALSE(std::filesystem::exists(log)) << "scontrol asked again: " << testing::read_file(log);
  EXPECT_EQ(run("GX_SLURM_NODE=" + shell_quote(line) + "; export GX_SLURM_NODE\n" + check).first, 1)
      << "node-05's line is not node-01's";
  EXPECT_EQ(testing::read_file(log), "show node node-01 -o\n");
}

// mode: static. The node's NodeName line is written on the controller (a
// step delegated there), slurmctld restarted, the new node held in its
// reservation; the node's slurmd runs without -Z. The controller script
// runs here against a slurm.conf copy with stand-ins for scontrol and
// systemctl; the lab test runs it against the real slurmctld.
TEST_F(SchedulerPlaybook, SlurmStaticNodeLineOnTheController) {
  const std::string spec =
      lab_rack_with("static.yaml", "      mode: static\n      cpus: 2\n      real_memory_mb: 1024");
  const auto steps = scheduler_steps(spec);
  const auto& node_line = step(steps, "slurm-static-node");
  EXPECT_EQ(node_line.params["delegate_to"], "controller");
  EXPECT_TRUE(delegated_to_controller(node_line));
  EXPECT_FALSE(delegated_to_controller(step(steps, "slurm-registration")));
  const std::string unit = step(steps, "slurmd-static").params["content"];
  EXPECT_NE(unit.find("ExecStart=/usr/sbin/slurmd -D -s -N node-01 --conf-server 198.18.0.10 $SLURMD_OPTIONS\n"),
            std::string::npos)
      << unit;
  for (const auto& s : steps) EXPECT_NE(s.id, "slurmd-dynamic") << "one slurmd drop-in per mode";

  // The facts request sends the check to the controller, not to the node;
  // the gres.conf line names the node's device files, so before its facts
  // are in that check waits (never asked with the empty default).
  const FactsRequest before_facts = facts_request_for(steps_to_probe(spec_, spec_.nodes[0], testing::playbooks()));
  EXPECT_EQ(before_facts.controller_checks.size(), 1u) << "the node's line in slurm.conf";
  EXPECT_EQ(before_facts.controller_unresolved.count("slurm-gres-line"), 1u) << "its line in gres.conf";
  const FactsRequest request = facts_request_for(steps);
  EXPECT_EQ(request.controller_checks.count("slurm-static-node"), 1u);
  EXPECT_EQ(request.checks.count("slurm-static-node"), 0u);
  EXPECT_EQ(probe_script(request).find("slurm.conf"), std::string::npos);
  // And the rollback is the controller's, kept apart in the checkpoint manifest.
  const PhaseTouch touch = PhaseTouch::from_json(phase_touch(steps).to_json());
  ASSERT_EQ(touch.controller_rollbacks.size(), 2u);
  EXPECT_EQ(touch.controller_rollbacks[0], node_line.params["rollback"]);
  EXPECT_EQ(touch.controller_rollbacks[1], step(steps, "slurm-gres-line").params["rollback"]);
  for (const auto& r : touch.command_rollbacks) EXPECT_EQ(r.find("slurm.conf"), std::string::npos);

  const std::string conf = dir_ + "/etc/slurm.conf";
  const std::string original =
      "ClusterName=lab\nSlurmctldHost=ctl(198.18.0.10)\nNodeName=node-010 NodeAddr=198.18.0.30 Gres=gpu:8\n"
      "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  std::ofstream(conf) << original;
  const std::string log = dir_ + "/ctl.log";
  tool("systemctl", "echo \"systemctl $*\" >> " + log);
  tool("scontrol", "echo \"scontrol $*\" >> " + log + "\ncase \"$1\" in\nping) echo 'Slurmctld(primary) at ctl is UP' ;;\n"
                   "show) [ \"$2\" = reservation ] && exit 1; grep -q '^NodeName=node-01 ' " + conf +
                       " && echo 'NodeName=node-01 Arch=x86_64 State=IDLE' ;;\nesac");
  const std::string line = "NodeName=node-01 NodeAddr=198.18.0.11 CPUs=2 RealMemory=1024 Gres=gpu:8 Feature=h200,lab\n";
  const std::string run_script = "GPUEXPAND_RUN_ID=7\n" + node_line.params["run"].get<std::string>();
  const std::string rollback = "GPUEXPAND_RUN_ID=7\n" + node_line.params["rollback"].get<std::string>();
  const std::string check = node_line.params["check"];

  EXPECT_EQ(run(check).first, 1) << "not in slurm.conf yet";
  auto [rc, out] = run(run_script);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(testing::read_file(conf), original + line) << "one line added, node-010 (same prefix) untouched";
  EXPECT_EQ(testing::read_file(log),
            "scontrol show node node-01 -o\nscontrol show node node-01 -o\nsystemctl restart slurmctld\nscontrol ping\n"
            "scontrol reconfigure\nscontrol show reservation gpuexpand-accept-node-01\n"
            "scontrol create reservation reservationname=gpuexpand-accept-node-01 nodes=node-01 starttime=now "
            "duration=infinite users=root flags=maint,ignore_jobs\n")
      << "a new node is held before its slurmd can register";
  EXPECT_EQ(testing::read_file(dir_ + "/var/controller/7/node-01.before"), "") << "the controller had no line for it";
  EXPECT_EQ(run(check).first, 0);
  std::ofstream(log, std::ios::trunc).close();
  ASSERT_EQ(run(run_script).first, 0);
  EXPECT_EQ(testing::read_file(conf), original + line) << "run again: still one line";
  EXPECT_EQ(testing::read_file(log).find("restart"), std::string::npos) << "nothing changed: slurmctld keeps running";

  // The rollback of run 7 puts slurm.conf back byte for byte; of a run in
  // which the step never ran, it does nothing.
  std::ofstream(log, std::ios::trunc).close();
  EXPECT_EQ(run("GPUEXPAND_RUN_ID=8\n" + node_line.params["rollback"].get<std::string>()).first, 0);
  EXPECT_EQ(testing::read_file(conf), original + line);
  EXPECT_EQ(testing::read_file(log), "");
  ASSERT_EQ(run(rollback).first, 0);
  EXPECT_EQ(testing::read_file(conf), original);
  EXPECT_EQ(testing::read_file(log),
            "scontrol delete reservation=gpuexpand-accept-node-01\nsystemctl restart slurmctld\nscontrol ping\n"
            "scontrol reconfigure\n");

  // A node already on the controller with other features: its line is
  // replaced, it is not put in a reservation (it is in service), and the
  // rollback brings the old line back.
  const std::string old_line = "NodeName=node-01 NodeAddr=198.18.0.11 Gres=gpu:8 Feature=h100\n";
  std::ofstream(conf, std::ios::trunc) << original << old_line;
  std::ofstream(log, std::ios::trunc).close();
  const std::string run9 = "GPUEXPAND_RUN_ID=9\n" + node_line.params["run"].get<std::string>();
  ASSERT_EQ(run(run9).first, 0);
  EXPECT_EQ(testing::read_file(conf), original + line);
  EXPECT_EQ(testing::read_file(log).find("create reservation"), std::string::npos);
  ASSERT_EQ(run("GPUEXPAND_RUN_ID=9\n" + node_line.params["rollback"].get<std::string>()).first, 0);
  EXPECT_EQ(testing::read_file(conf), original + old_line);
}

// gres_conf: from_facts (the default): the node's gres.conf line comes from
// the GPU device files its facts found. Configless, it is a line in the
// controller's gres.conf, rendered with the node's facts before the
// controller is asked; gpuexpand owns only NodeName=NODE lines and refuses
// a gres.conf where another gpu line would apply to the node as well.
TEST_F(SchedulerPlaybook, GresConfLineFromTheGpusFoundOnTheNode) {
  std::string text = testing::read_source_file("examples/lab-rack.yaml");
  const size_t at = text.find("gres: [\"gpu:8\"]");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("gres: [\"gpu:8\"]").size(), "gres: [\"gpu:h200:4\", \"nic:2\"]");
  std::ofstream(dir_ + "/four.yaml") << text;
  auto loaded = load_spec_file(dir_ + "/four.yaml", testing::schema("cluster"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  spec_ = *loaded.spec;
  json facts = load_facts_file(testing::source_path("tests/fixtures/facts/h200-bare.json"), testing::schema("facts-file"),
                               testing::schema("facts"))
                   .value()
                   .begin()
                   ->second;
  facts["gpus"]["device_files"] = {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"};
  facts["gpus"]["gres_file"] = "/dev/nvidia[0-3]";
  EXPECT_TRUE(testing::schema("facts").validate_json(facts).empty());

  // Probing before the facts are in still knows the controller is needed;
  // the check it is asked is the one rendered with the node's facts.
  const auto& node = spec_.nodes[0];
  EXPECT_TRUE(facts_request_for(steps_to_probe(spec_, node, testing::playbooks())).needs_controller());
  const FactsRequest asked = controller_request_for(spec_, node, testing::playbooks(), facts);
  ASSERT_EQ(asked.controller_checks.count("slurm-gres-line"), 1u);
  EXPECT_EQ(asked.controller_checks.at("slurm-gres-line").rfind(
                "N=node-01; G='Name=gpu Type=h200'; F='/dev/nvidia[0-3]'; conf=", 0),
            0u)
      << asked.controller_checks.at("slurm-gres-line");

  plan_ = plan_node(spec_, node, testing::playbooks(), &facts);
  std::vector<ResolvedStep> steps;
  for (const auto& phase : plan_.phases) {
    if (phase.phase == "scheduler") steps = phase.steps;
  }
  const auto& gres_line = step(steps, "slurm-gres-line");
  EXPECT_TRUE(delegated_to_controller(gres_line));
  EXPECT_EQ(asked.controller_checks.at("slurm-gres-line"), gres_line.params["check"]);
  for (const auto& s : steps) EXPECT_NE(s.id, "gres-conf-node") << "configless: no gres.conf on the node";

  // The node-side guard: as many device files as the spec's GRES counts.
  std::string guard = step(steps, "gpu-gres-devices").params["check"];
  guard.replace(guard.find("/dev/nvidia[0-9]*"), std::string("/dev/nvidia").size(), dir_ + "/dev/nvidia");
  guard.replace(guard.find("${f#/dev/nvidia}"), std::string("${f#/dev/nvidia}").size(), "${f#" + dir_ + "/dev/nvidia}");
  for (int i = 0; i < 4; ++i) std::ofstream(dir_ + "/dev/nvidia" + std::to_string(i)).put('\n');
  std::ofstream(dir_ + "/dev/nvidiactl").put('\n');
  EXPECT_EQ(run(guard).first, 0);
  std::remove((dir_ + "/dev/nvidia3").c_str());
  auto [lost_rc, lost] = run(guard);
  EXPECT_EQ(lost_rc, 1);
  EXPECT_NE(lost.find("node-01 has 3 GPU device files (" + dir_ + "/dev/nvidia0 " + dir_ + "/dev/nvidia1 " + dir_ +
                      "/dev/nvidia2) but scheduler.slurm.gres counts 4 GPUs"),
            std::string::npos)
      << lost;

  // On the controller (stand-in scontrol): the line is added, other
  // nodes' lines kept byte for byte; run again, nothing changes.
  const std::string conf = dir_ + "/etc/gres.conf", log = dir_ + "/ctl.log";
  tool("scontrol", "echo \"scontrol $*\" >> " + log +
                       "\ncase \"$1 $3\" in\n'show node-0[1-2]') echo node-01; echo node-02 ;;\n"
                       "show*) echo \"$3\" | tr , '\\n' ;;\nesac");
  const std::string original = "AutoDetect=off\nNodeName=node-010 Name=gpu File=/dev/nvidia[0-7]  # other rack\n"
                               "Name=nic Count=2\n";
  std::ofstream(conf) << original;
  const std::string line = "NodeName=node-01 Name=gpu Type=h200 File=/dev/nvidia[0-3]\n";
  const std::string run7 = "GPUEXPAND_RUN_ID=7\n" + gres_line.params["run"].get<std::string>();
  const std::string check = gres_line.params["check"];
  EXPECT_EQ(run(check).first, 1);
  auto [rc, out] = run(run7);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(testing::read_file(conf), original + line);
  EXPECT_EQ(testing::read_file(log), "scontrol reconfigure\n") << "another node's plain line needs no scontrol";
  EXPECT_EQ(run(check).first, 0);
  std::ofstream(log, std::ios::trunc).close();
  ASSERT_EQ(run(run7).first, 0);
  EXPECT_EQ(testing::read_file(conf), original + line);
  EXPECT_EQ(testing::read_file(log).find("reconfigure"), std::string::npos) << "unchanged: no reconfigure";

  // Its rollback puts back what was there; a rollback of a run that never
  // got to the controller stops that run from changing it later.
  ASSERT_EQ(run("GPUEXPAND_RUN_ID=7\n" + gres_line.params["rollback"].get<std::string>()).first, 0);
  EXPECT_EQ(testing::read_file(conf), original);
  ASSERT_EQ(run("GPUEXPAND_RUN_ID=8\n" + gres_line.params["rollback"].get<std::string>()).first, 0);
  auto [late_rc, late] = run("GPUEXPAND_RUN_ID=8\n" + gres_line.params["run"].get<std::string>());
  EXPECT_EQ(late_rc, 1);
  EXPECT_NE(late.find("run 8 was rolled back"), std::string::npos) << late;
  EXPECT_EQ(testing::read_file(conf), original);

  // An operator's own gpu line for the node is replaced where it stands;
  // the node's other GRES lines are not gpuexpand's and stay; the rollback
  // puts the file back byte for byte.
  const std::string hand = "NodeName=node-01 name=GPU File=/dev/nvidia[0-7]\n";
  const std::string nic = "NodeName=node-01 Name=nic Count=2\n";
  std::ofstream(conf, std::ios::trunc) << hand << nic << original;
  ASSERT_EQ(run("GPUEXPAND_RUN_ID=9\n" + gres_line.params["run"].get<std::string>()).first, 0);
  EXPECT_EQ(testing::read_file(conf), line + nic + original);
  EXPECT_EQ(run(check).first, 0);
  ASSERT_EQ(run("GPUEXPAND_RUN_ID=9\n" + gres_line.params["rollback"].get<std::string>()).first, 0);
  EXPECT_EQ(testing::read_file(conf), hand + nic + original);

  // No gres.conf on the controller: created with the line; the rollback
  // removes it again.
  std::remove(conf.c_str());
  ASSERT_EQ(run("GPUEXPAND_RUN_ID=11\n" + gres_line.params["run"].get<std::string>()).first, 0);
  EXPECT_EQ(testing::read_file(conf), line);
  ASSERT_EQ(run("GPUEXPAND_RUN_ID=11\n" + gres_line.params["rollback"].get<std::string>()).first, 0);
  EXPECT_NE(::access(conf.c_str(), F_OK), 0);

  // A gpu line for every node added after gpuexpand's: the check no longer
  // passes (the run would refuse it, below).
  std::ofstream(conf, std::ios::trunc) << original << line << "Name=gpu File=/dev/nvidia[0-7]\r\n";
  EXPECT_EQ(run(check).first, 1);

  // Refused: gpu lines that would apply to node-01 too.
  // (CRLF line ends and comments do not hide them; NodeName= need not come
  // first.)
  for (const std::string other : {"Name=gpu File=/dev/nvidia[0-7]", "name=GPU Type=h200 File=/dev/nvidia0",
                                  "NodeName=node-0[1-2] Name=gpu File=/dev/nvidia[0-7]",
                                  "Name=gpu NodeName=node-0[1-2] File=/dev/nvidia[0-7]",
                                  "NodeName=node-02,node-01 Name=gpu File=/dev/nvidia[0-7]",
                                  "Name=gpu NodeName=node-01 File=/dev/nvidia[0-7]"}) {
    for (const std::string end : {"\n", "\r\n", "  # rack 1\n"}) {
      std::ofstream(conf, std::ios::trunc) << original << other << end;
      auto [refused_rc, refused] = run("GPUEXPAND_RUN_ID=10\n" + gres_line.params["run"].get<std::string>());
      EXPECT_EQ(refused_rc, 1) << other;
      EXPECT_NE(refused.find("gres.conf on the controller already has a gpu line for node-01: '" + other),
                std::string::npos)
          << refused;
      EXPECT_EQ(testing::read_file(conf), original + other + end);
    }
  }

  // What cannot be read is refused, not taken for "no other line": a host
  // list scontrol cannot expand, a gres.conf awk cannot read.
  std::ofstream(conf, std::ios::trunc) << original << "NodeName=bad[1-x] Name=gpu File=/dev/nvidia0\n";
  tool("scontrol", "echo 'scontrol: error: Invalid hostlist: bad[1-x]' >&2; exit 1");
  auto [unexpanded_rc, unexpanded] = run("GPUEXPAND_RUN_ID=12\n" + gres_line.params["run"].get<std::string>());
  EXPECT_EQ(unexpanded_rc, 1);
  EXPECT_NE(unexpanded.find("scontrol could not expand the host list 'bad[1-x]' in "), std::string::npos) << unexpanded;
  std::remove(conf.c_str());
  ::mkdir(conf.c_str(), 0755);
  auto [unread_rc, unread] = run("GPUEXPAND_RUN_ID=13\n" + gres_line.params["run"].get<std::string>());
  EXPECT_EQ(unread_rc, 1);
  EXPECT_NE(unread.find("/etc/gres.conf on the controller could not be read"), std::string::npos)
      << unread;
  EXPECT_EQ(run(check).first, 1);
  ::rmdir(conf.c_str());

  // configless: false: the node's own gres.conf, from the same facts;
  // gres_conf: controller keeps the controller's file as it is.
  text.replace(text.find("      mode: dynamic"), std::string("      mode: dynamic").size(),
               "      mode: dynamic\n      configless: false");
  std::string gpus_only = text;  // the node's gres.conf holds its gpu line only
  gpus_only.replace(gpus_only.find(", \"nic:2\""), std::string(", \"nic:2\"").size(), "");
  std::ofstream(dir_ + "/local.yaml") << gpus_only;
  loaded = load_spec_file(dir_ + "/local.yaml", testing::schema("cluster"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  spec_ = *loaded.spec;
  plan_ = plan_node(spec_, spec_.nodes[0], testing::playbooks(), &facts);
  steps.clear();
  for (const auto& phase : plan_.phases) {
    if (phase.phase == "scheduler") steps = phase.steps;
  }
  EXPECT_EQ(step(steps, "gres-conf-node").params["content"],
            "# Managed by gpuexpand: this node's GPUs as found on it (scheduler.slurm.gres_conf: from_facts).\n"
            "NodeName=node-01 Name=gpu Type=h200 File=/dev/nvidia[0-3]\n");
  for (const auto& s : steps) {
    EXPECT_NE(s.id, "slurm-gres-line");
    EXPECT_NE(s.id, "gres-conf");
  }
  text.replace(text.find("      configless: false"), std::string("      configless: false").size(),
               "      configless: false\n      gres_conf: controller");
  std::ofstream(dir_ + "/keep.yaml") << text;
  loaded = load_spec_file(dir_ + "/keep.yaml", testing::schema("cluster"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  spec_ = *loaded.spec;
  EXPECT_EQ(step(scheduler_steps(dir_ + "/keep.yaml"), "gres-conf").params["src_host"], "controller");

  // Without a gpu count above 0 or with gres_conf: controller, configless
  // nodes never need the controller (the conditions name gres_from_facts,
  // which is not a fact).
  for (const std::string gres : {"\"gpu:0\", \"nic:2\"", "\"nic:2\""}) {
    std::string cpu_only = testing::read_source_file("examples/lab-rack.yaml");
    cpu_only.replace(cpu_only.find("\"gpu:8\""), 7, gres);
    std::ofstream(dir_ + "/cpu.yaml") << cpu_only;
    auto cpu = load_spec_file(dir_ + "/cpu.yaml", testing::schema("cluster"));
    ASSERT_TRUE(cpu.spec) << testing::diagnostics_text(cpu);
    EXPECT_FALSE(facts_request_for(steps_to_probe(*cpu.spec, cpu.spec->nodes[0], testing::playbooks())).needs_controller())
        << gres;
  }
  {
    std::string kept = testing::read_source_file("examples/lab-rack.yaml");
    kept.replace(kept.find("      mode: dynamic"), std::string("      mode: dynamic").size(),
                 "      gres_conf: controller\n      mode: dynamic");
    std::ofstream(dir_ + "/kept.yaml") << kept;
    auto k = load_spec_file(dir_ + "/kept.yaml", testing::schema("cluster"));
    ASSERT_TRUE(k.spec) << testing::diagnostics_text(k);
    EXPECT_FALSE(facts_request_for(steps_to_probe(*k.spec, k.spec->nodes[0], testing::playbooks())).needs_controller());
  }

  // Refused by validate: the spec as `yaml` must not load, its diagnostics
  // naming `message`.
  auto refused_with = [&](const std::string& yaml, const std::string& message) {
    std::ofstream(dir_ + "/refused.yaml", std::ios::trunc) << yaml;
    auto refused = load_spec_file(dir_ + "/refused.yaml", testing::schema("cluster"));
    EXPECT_FALSE(refused.spec) << message;
    EXPECT_NE(testing::diagnostics_text(refused).find(message), std::string::npos) << testing::diagnostics_text(refused);
  };
  const std::string kept_line = "\n      gres_conf: controller";
  text.replace(text.find(kept_line), kept_line.size(), "");
  // configless: false writes the node's gres.conf whole: other GRES refused.
  refused_with(text, "scheduler.slurm.gres has GRES other than gpu (nic:2) with configless: false");
  // Two gpu types cannot be told apart by device files.
  text.replace(text.find("\"nic:2\""), 7, "\"gpu:a100:4\"");
  refused_with(text, "scheduler.slurm.gres names more than one gpu entry (gpu:h200:4, gpu:a100:4)");
}

// configless: false (dynamic nodes): the node keeps copies of the
// controller's slurm.conf and gres.conf, compared with the digests the
// controller reports, fetched from there when they differ; slurmd runs
// without --conf-server.
TEST_F(SchedulerPlaybook, SlurmConfCopiedFromTheControllerWithoutConfigless) {
  const std::string spec = lab_rack_with("local-conf.yaml", "      mode: dynamic\n      configless: false");
  const auto steps = scheduler_steps(spec);
  const std::string unit = step(steps, "slurmd-dynamic").params["content"];
  EXPECT_NE(unit.find("ExecStart=/usr/sbin/slurmd -D -s -Z --conf \"Gres=gpu:8 Feature=h200,lab State=DRAIN\" "
                      "$SLURMD_OPTIONS\n"),
            std::string::npos)
      << unit;
  const auto& conf_step = step(steps, "slurm-conf");
  EXPECT_EQ(controller_source_command(conf_step), "cat -- /etc/slurm/slurm.conf");

  // The controller's part of the probe, run here: the digest of its
  // slurm.conf, and gres.conf missing there.
  const FactsRequest request = facts_request_for(steps_to_probe(spec_, spec_.nodes[0], testing::playbooks()));
  EXPECT_EQ(request.controller_files, (std::set<std::string>{"/etc/slurm/slurm.conf"}))
      << "gres.conf is written from the node's facts (gres_conf: from_facts), not copied";
  EXPECT_EQ(request.controller_checks.count("slurm-node-known"), 1u) << "a rollback removes the node from there";
  // (Here with files under the test directory: run() would rewrite the
  // paths in the section names too.)
  const std::string conf = "ClusterName=lab\nSlurmctldHost=ctl(198.18.0.10)\n";
  std::ofstream(dir_ + "/etc/slurm.conf") << conf;
  FactsRequest here;
  here.controller_files = {dir_ + "/etc/slurm.conf", dir_ + "/etc/gres.conf"};
  auto [rc, out] = run(controller_check_script({{"node-01", here}}));
  ASSERT_EQ(rc, 0) << out;
  json facts = load_facts_file(testing::source_path("tests/fixtures/facts/h200-bare.json"), testing::schema("facts-file"),
                               testing::schema("facts"))
                   .value()
                   .begin()
                   ->second;
  CommandOutcome answer;
  answer.exit_code = 0;
  answer.out = out;
  ASSERT_EQ(merge_controller_answer(answer, {{"node-01", &facts}}), std::vector<std::string>{}) << out;
  EXPECT_EQ(facts["controller_files"][dir_ + "/etc/slurm.conf"], sha256_hex(conf));
  EXPECT_TRUE(facts["controller_files"][dir_ + "/etc/gres.conf"].is_null());
  const auto problems = testing::schema("facts").validate_json(facts);
  EXPECT_TRUE(problems.empty()) << problems.front();
  facts["controller_files"] = {{"/etc/slurm/slurm.conf", sha256_hex(conf)}, {"/etc/slurm/gres.conf", nullptr}};

  // The decision against the node's copy (here: present, root 0644).
  auto reason_for_conf = [&](const json& node_facts) {
    const NodePlan p = plan_node(spec_, spec_.nodes[0], testing::playbooks(), &node_facts);
    for (const auto& phase : p.phases) {
      for (const auto& c : phase.changes) {
        if (c.target == "/etc/slurm/slurm.conf") return c.reason;
      }
    }
    return std::string("converged");
  };
  json copy_there = facts;
  copy_there["files"]["/etc/slurm/slurm.conf"] = {
      {"exists", true}, {"mode", "0644"}, {"owner", "root"}, {"group", "root"}, {"sha256", sha256_hex(conf)}};
  EXPECT_EQ(reason_for_conf(copy_there), "converged");
  copy_there["files"]["/etc/slurm/slurm.conf"]["sha256"] = sha256_hex("older\n");
  EXPECT_EQ(reason_for_conf(copy_there), "content differs from /etc/slurm/slurm.conf on the controller");
  copy_there.erase("controller_files");
  EXPECT_EQ(reason_for_conf(copy_there), "/etc/slurm/slurm.conf on the controller: not found or not asked; decided at apply");

  // Planned with those facts, the copy pins the controller's digest: the
  // content read at apply time must still have it.
  const NodePlan plan = plan_node(spec_, spec_.nodes[0], testing::playbooks(), &facts);
  const ResolvedStep* planned = nullptr;
  for (const auto& phase : plan.phases) {
    for (const auto& s : phase.steps) {
      if (s.id == "slurm-conf") planned = &s;
    }
  }
  ASSERT_NE(planned, nullptr);
  EXPECT_EQ(planned->params["src_sha256"], sha256_hex(conf));
  auto written = copy_action(*planned, conf);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->stdin_data, conf);
  auto changed = copy_action(*planned, conf + "NodeName=x\n");
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().message,
            "step 'slurm-conf': /etc/slurm/slurm.conf on the controller changed since the plan was made");

  // Static nodes would make every other node's copy stale: refused.
  const std::string both = lab_rack_with("static-local.yaml", "      mode: static\n      configless: false");
  auto refused = load_spec_file(both, testing::schema("cluster"));
  EXPECT_FALSE(refused.spec);
  EXPECT_NE(testing::diagnostics_text(refused).find("configless: false cannot go with mode: static"), std::string::npos)
      << testing::diagnostics_text(refused);
}

TEST_F(SchedulerPlaybook, RocePfcAndEcnWhereTheNicSupportsThem) {
  const auto steps = phase_steps("examples/k8s-rack.yaml", "rdma");
  const auto& pfc = step(steps, "pfc[ens1f0np0]");
  const auto& ecn = step(steps, "ecn[ens1f0np0]");
  tool("dcb", "echo \"$*\" >> " + dir_ + "/dcb.log; case \"$1 $2\" in 'pfc show') cat " + dir_ + "/pfc ;; esac");
  std::ofstream(dir_ + "/pfc") << "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n";
  EXPECT_EQ(run(pfc.params["check"]).first, 0) << "priority 3 lossless: converged";
  std::ofstream(dir_ + "/pfc") << "prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off\n";
  EXPECT_EQ(run(pfc.params["check"]).first, 1);
  auto [rc, out] = run(pfc.params["run"]);
  EXPECT_EQ(rc, 0) << out;
  const std::string l = testing::read_file(dir_ + "/dcb.log");
  EXPECT_NE(l.find("pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"), std::string::npos)
      << l;
  EXPECT_EQ(testing::read_file(dir_ + "/var/pfc/ens1f0np0"), "0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off\n");
  EXPECT_EQ(run(pfc.params["rollback"]).first, 0);
  const std::string l2 = testing::read_file(dir_ + "/dcb.log");
  EXPECT_NE(l2.find("pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off\n"),
            std::string::npos)
      << l2;
  tool("dcb", "echo 'Operation not supported' >&2; exit 1");
  EXPECT_EQ(run(pfc.params["check"]).first, 0) << "no DCB on the NIC: nothing gpuexpand can set";

  // ECN through mlx5's sysfs controls.
  const std::string e = dir_ + "/sys/ens1f0np0/ecn";
  ASSERT_EQ(std::system(("mkdir -p " + e + "/roce_np/enable " + e + "/roce_rp/enable && echo 0 > " + e +
                         "/roce_np/enable/3 && echo 0 > " + e + "/roce_rp/enable/3")
                            .c_str()),
            0);
  EXPECT_EQ(run(ecn.params["check"]).first, 1);
  EXPECT_EQ(run(ecn.params["run"]).first, 0);
  EXPECT_EQ(run(ecn.params["check"]).first, 0);
  EXPECT_EQ(run(ecn.params["rollback"]).first, 0);
  std::ifstream np(e + "/roce_np/enable/3");
  std::string value;
  np >> value;
  EXPECT_EQ(value, "0") << "rollback puts the old value back";
  ASSERT_EQ(std::system(("rm -rf " + dir_ + "/sys").c_str()), 0);
  EXPECT_EQ(run(ecn.params["check"]).first, 0) << "no ECN controls: left alone";
}

TEST_F(SchedulerPlaybook, LabelsAKubeletMayNotSetAndOddEndpointsAreRefused) {
  const std::string base =
      "defaults:\n  scheduler:\n    kind: kubernetes\n    kubernetes:\n      token_file: /t\n      ca_cert_hash: sha256:" +
      std::string(64, 'a') + "\n";
  auto labels = testing::load_spec(testing::minimal_spec(
      base + "      api_endpoint: https://k:6443\n      labels: {node-role.kubernetes.io/gpu: '', "
             "node.kubernetes.io/pool: a, gpu-type: h100}\n"));
  EXPECT_EQ(testing::diagnostics_text(labels),
            "spec.yaml:14:16: label 'node-role.kubernetes.io/gpu' cannot be set by the node itself (Kubernetes "
            "NodeRestriction allows only kubelet.kubernetes.io/, node.kubernetes.io/ and "
            "topology.kubernetes.io/{region,zone}): set it with kubectl as a cluster admin\n");
  auto endpoint = testing::load_spec(testing::minimal_spec(base + "      api_endpoint: 'https://k\"x:6443'\n"));
  EXPECT_NE(testing::diagnostics_text(endpoint).find("must be an https:// URL: host or [IPv6], optional :port and path"),
            std::string::npos)
      << testing::diagnostics_text(endpoint);
}

// Bonds (this machine's kernel has no bonding driver, so ip(8) and sysfs
// are stand-ins): networkd files, the live bond, and a rollback that removes
// only a bond the step created.
TEST_F(SchedulerPlaybook, BondsPersistentAndLive) {
  std::ofstream(dir_ + "/bond.yaml")
      << "apiVersion: gpuexpand/v1\ncluster: {name: t}\ndefaults:\n  network:\n    bonding:\n"
         "      - {name: bond0, mode: 802.3ad, members: [eth1, eth2], mtu: 9000}\nnodes:\n  - {name: n1}\n";
  const auto steps = phase_steps(dir_ + "/bond.yaml", "rdma");
  EXPECT_EQ(step(steps, "bond-netdev[bond0]").params["path"], "/etc/systemd/network/50-gpuexpand-bond0.netdev");
  EXPECT_EQ(step(steps, "bond-netdev[bond0]").params["content"],
            "# Managed by gpuexpand: changes here are overwritten.\n[NetDev]\nName=bond0\nKind=bond\n\n[Bond]\n"
            "Mode=802.3ad\n");
  EXPECT_EQ(step(steps, "bond-members[bond0]").params["content"],
            "# Managed by gpuexpand: changes here are overwritten.\n[Match]\nName=eth1 eth2\n\n[Network]\nBond=bond0\n");
  const std::string sys = dir_ + "/sys";
  ASSERT_EQ(std::system(("mkdir -p " + sys + "/eth1 " + sys + "/eth2").c_str()), 0);
  tool("ip", "echo \"$*\" >> " + dir_ + "/ip.log\ncase \"$*\" in\n"
             "  'link add bond0 type bond mode 802.3ad') mkdir -p " + sys + "/bond0/bonding && echo '802.3ad 4' > " + sys +
             "/bond0/bonding/mode ;;\n"
             "  'link set eth1 master bond0'|'link set eth2 master bond0') ln -s ../bond0 " + sys + "/$3/master ;;\n"
             "  'link set bond0 mtu 9000') echo 9000 > " + sys + "/bond0/mtu ;;\nesac");
  const auto& live = step(steps, "bond-live[bond0]");
  EXPECT_EQ(run(live.params["check"]).first, 1);
  auto [rc, out] = run(live.params["run"]);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(run(live.params["check"]).first, 0) << run(live.params["check"]).second;
  EXPECT_EQ(run(live.params["rollback"]).first, 0);
  EXPECT_EQ(testing::read_file(dir_ + "/ip.log"),
            "link add bond0 type bond mode 802.3ad\nlink set eth1 down\nlink set eth1 master bond0\n"
            "link set eth2 down\nlink set eth2 master bond0\nlink set bond0 mtu 9000\nlink set bond0 up\n"
            "link del bond0\nlink set eth1 up\nlink set eth2 up\n");
  EXPECT_NE(::access((dir_ + "/var/bond-bond0-created").c_str(), F_OK), 0);
}

TEST_F(SchedulerPlaybook, KubernetesWithoutACaHashIsRefused) {
  auto result = testing::load_spec(testing::minimal_spec(
      "defaults:\n  scheduler:\n    kind: kubernetes\n    kubernetes: {api_endpoint: 'https://k:6443', token_file: /t}\n"));
  EXPECT_NE(testing::diagnostics_text(result).find("ca_cert_hash"), std::string::npos)
      << testing::diagnostics_text(result);
}

}  // namespace
}  // namespace gpuexpand
