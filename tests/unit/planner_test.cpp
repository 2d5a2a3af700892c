// The planner: a converged node plans nothing; each kind of drift plans the
// right change with the right reason. Pure: facts in, plan out.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/steps/params.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/playbook/variables.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

// A one-phase playbook set from the steps given (YAML list items).
PlaybookSet phase_with(const std::string& steps_yaml) {
  std::vector<Diagnostic> diagnostics;
  auto phase = load_playbook_text("phase: os-init\norder: 1\nsteps:\n" + steps_yaml, "test.yaml",
                                  testing::schema("playbook"), diagnostics);
  std::string text;
  for (const auto& d : diagnostics) text += d.to_string() + "\n";
  EXPECT_TRUE(phase) << text;
  PlaybookSet set;
  if (phase) set.phases.push_back(*phase);
  return set;
}

ClusterSpec spec_with(const std::string& defaults_yaml) {
  auto result = testing::load_spec(testing::minimal_spec("defaults:\n" + defaults_yaml));
  EXPECT_TRUE(result.spec) << testing::diagnostics_text(result);
  return result.spec ? *result.spec : ClusterSpec{};
}

json base_facts() {
  return json::parse(R"({"schema_version": 1, "node": "n1", "hostname": "n1", "timezone": "UTC",
    "os": {"family": "debian"}, "packages": {}, "files": {}, "services": {}, "sysctl": {},
    "kernel_modules": {"loaded": []}, "mounts": [], "fstab": [], "checks": {}})");
}

// "~ target: reason" lines of a node plan, for exact comparison.
std::vector<std::string> lines(const NodePlan& plan) {
  std::vector<std::string> out;
  for (const auto& phase : plan.phases) {
    for (const auto& c : phase.changes) out.push_back(std::string(1, action_marker(c.action)) + " " + c.target + ": " + c.reason);
  }
  return out;
}

NodePlan plan_one(const std::string& defaults_yaml, const std::string& steps_yaml, const json& facts) {
  static ClusterSpec spec;  // NodeSpec settings are shared pointers into it
  spec = spec_with(defaults_yaml);
  if (spec.nodes.empty()) return {};
  return plan_node(spec, spec.nodes[0], phase_with(steps_yaml), &facts);
}

using Lines = std::vector<std::string>;

// Before the facts are in, a step whose parameters read them is probed for
// what renders (a file's path); a check that does not render is left out,
// never sent as an empty check that would pass. With the facts, it renders.
TEST(Planner, StepsToProbeBeforeAndAfterTheFacts) {
  static ClusterSpec spec;
  spec = spec_with("  os: {}\n");
  ASSERT_FALSE(spec.nodes.empty());
  const auto set = phase_with(
      "  - {id: f, type: file, path: /etc/gpus.conf, content: '{{ facts.gpus.gres_file }}'}\n"
      "  - {id: c, type: command, check: 'test {{ facts.gpus.count }} -gt 0', run: 'true', rollback: 'true'}\n"
      "  - {id: d, type: command, check: 'test {{ facts.gpus.count }} -gt 0', run: 'true', rollback: 'true',\n"
      "     delegate_to: controller}\n");
  const FactsRequest before = facts_request_for(steps_to_probe(spec, spec.nodes[0], set));
  EXPECT_EQ(before.files, (std::set<std::string>{"/etc/gpus.conf"}));
  EXPECT_TRUE(before.checks.empty());
  EXPECT_TRUE(before.controller_checks.empty());
  EXPECT_EQ(before.controller_unresolved.count("d"), 1u);
  EXPECT_TRUE(before.needs_controller());
  json facts = base_facts();
  facts["gpus"] = {{"count", 8}};
  const FactsRequest after = facts_request_for(steps_to_probe(spec, spec.nodes[0], set, &facts));
  EXPECT_EQ(after.checks, (std::map<std::string, std::string>{{"c", "test 8 -gt 0"}}));
  EXPECT_EQ(after.controller_checks, (std::map<std::string, std::string>{{"d", "test 8 -gt 0"}}));
  EXPECT_TRUE(after.controller_unresolved.empty());
}

// Conditions the spec alone makes false keep a step out of the probe,
// whatever the facts would say; a condition that needs the facts (even
// gathered ones: a later probe may see others) keeps it in.
TEST(Planner, StepsToProbeLeaveOutWhatTheSpecRulesOut) {
  static ClusterSpec spec;
  spec = spec_with("  os: {timezone: UTC}\n");
  ASSERT_FALSE(spec.nodes.empty());
  const auto set = phase_with(
      "  - {id: a, type: command, when: os.ntp_servers and facts.os.family == 'rhel', check: 'test -e /a', run: 'true', "
      "rollback: 'true'}\n"
      "  - {id: b, type: command, when: os.timezone and facts.os.family == 'rhel', check: 'test -e /b', run: 'true', "
      "rollback: 'true'}\n"
      "  - {id: c, type: command, when: facts.os.family == 'rhel' or os.ntp_servers, check: 'test -e /c', run: 'true', "
      "rollback: 'true'}\n"
      "  - {id: d, type: file, when: not os.timezone, path: /etc/d, content: x}\n");
  json facts = base_facts();
  facts["os"]["family"] = "debian";
  for (const json* seen : std::initializer_list<const json*>{nullptr, &facts}) {
    const FactsRequest request = facts_request_for(steps_to_probe(spec, spec.nodes[0], set, seen));
    EXPECT_EQ(request.checks, (std::map<std::string, std::string>{{"b", "test -e /b"}, {"c", "test -e /c"}}));
    EXPECT_TRUE(request.files.empty());
  }
}

// A run that stops after a phase probes the phases up to it, unless a
// phase reads a section of the facts only steps ask for (facts.packages,
// facts.checks, ...): which step asks may be one of a later phase, so
// then every phase is probed, as without a last phase.
TEST(Planner, StepsToProbeUpToTheLastPhaseUnlessAPhaseReadsWhatStepsAsk) {
  static ClusterSpec spec;
  spec = spec_with("  os: {}\n");
  ASSERT_FALSE(spec.nodes.empty());
  const auto two_phases = [](const std::string& first_when) {
    PlaybookSet set = phase_with("  - {id: a, type: command, when: \"" + first_when +
                                 "\", check: 'test -e /a', run: 'true', rollback: 'true'}\n");
    PlaybookSet later = phase_with("  - {id: b, type: package, names: [later-tool]}\n"
                                   "  - {id: c, type: command, check: 'test -e /c', run: 'true', rollback: 'true'}\n");
    later.phases.at(0).name = "monitoring";
    set.phases.push_back(later.phases.at(0));
    return set;
  };
  const auto asked = [&](const PlaybookSet& set, const std::string& last) {
    return facts_request_for(steps_to_probe(spec, spec.nodes[0], set, nullptr, last));
  };
  const PlaybookSet plain = two_phases("facts.os.family == 'debian'");
  EXPECT_EQ(asked(plain, "os-init").checks, (std::map<std::string, std::string>{{"a", "test -e /a"}}));
  EXPECT_TRUE(asked(plain, "os-init").packages.empty());
  EXPECT_EQ(asked(plain, "monitoring").checks.size(), 2u);
  EXPECT_EQ(asked(plain, "").packages, (std::set<std::string>{"later-tool"}));
  for (const std::string reads : {"facts.packages['later-tool']", "facts.checks.c == 0", "'/x' in facts.files",
                                  "facts['services'].chrony"}) {
    const PlaybookSet set = two_phases(reads);
    const FactsRequest request = asked(set, "os-init");
    EXPECT_EQ(request.packages, (std::set<std::string>{"later-tool"})) << reads;
    EXPECT_EQ(request.checks.count("c"), 1u) << reads;
  }
}

// What only `facts` and `doctor` show (the RDMA ports, free space) is left
// out of a deciding probe unless a playbook reads it, in any spelling; the
// interfaces are always probed, so reading them is no reason.
TEST(Planner, PlaybooksThatReadWhatOnlyFactsShows) {
  const auto reading = [](const std::string& when) {
    return playbooks_read_shown_facts(phase_with("  - {id: a, type: command, when: \"" + when +
                                                 "\", check: 'true', run: 'true', rollback: 'true'}\n"));
  };
  for (const std::string reads : {"facts.network.rdma", "facts['network']['rdma']", "facts.network",
                                  "facts.disk_free_bytes['/var'] > 1", "facts [ 'disk_free_bytes' ]"}) {
    EXPECT_TRUE(reading(reads)) << reads;
  }
  for (const std::string reads : {"facts.network.interfaces", "facts['network']['interfaces']",
                                  "facts.os.family == 'debian'", "network.rdma.kind != 'none'", "true"}) {
    EXPECT_FALSE(reading(reads)) << reads;
  }
  EXPECT_TRUE(playbooks_read_shown_facts(phase_with(
      "  - {id: a, type: command, check: 'test -n {{ facts.disk_free_bytes | default(1) }}', run: 'true',\n"
      "     rollback: 'true'}\n")));
  EXPECT_FALSE(playbooks_read_shown_facts(testing::playbooks())) << "no shipped playbook reads them";
}

// apply --until shows only what it will do: the later phases' changes go,
// and a node whose changes were all later is unchanged.
TEST(Planner, APlanKeptUpToTheLastPhaseOfTheRun) {
  const auto change = [](const std::string& target) {
    PlannedChange c;
    c.target = target;
    return c;
  };
  Plan plan;
  plan.nodes.resize(3);
  plan.nodes[0].status = NodeStatus::Changes;
  plan.nodes[0].phases = {{"os-init", {change("/etc/hosts")}, {}}, {"gpu-driver", {change("nvidia-driver")}, {}}};
  plan.nodes[1].status = NodeStatus::Changes;
  plan.nodes[1].phases = {{"storage", {change("/mnt/shared")}, {}}};
  plan.nodes[2].status = NodeStatus::Unreachable;
  Plan unknown = plan;
  keep_phases_until(unknown, "no-such-phase");
  EXPECT_EQ(unknown.summary().changes, 3u);
  keep_phases_until(plan, "os-init");
  ASSERT_EQ(plan.nodes[0].phases.size(), 1u);
  EXPECT_EQ(plan.nodes[0].phases[0].phase, "os-init");
  EXPECT_EQ(plan.nodes[1].status, NodeStatus::Unchanged);
  EXPECT_EQ(plan.nodes[2].status, NodeStatus::Unreachable);
  EXPECT_EQ(plan.summary().to_change, 1u);
  EXPECT_EQ(plan.summary().changes, 1u);
}

// A failing check's own words are the reason; without any, its exit code.
TEST(Planner, ACommandsCheckSaysWhyItFails) {
  const std::string step = "  - {id: mtu, type: command, check: 'false', run: 'true', rollback: 'true'}\n";
  auto facts = base_facts();
  facts["checks"]["mtu"] = 1;
  EXPECT_EQ(lines(plan_one("  os: {}\n", step, facts)), Lines{"~ command mtu: check exited 1"});
  facts["check_output"]["mtu"] = "MTU 1500, wanted 9000";
  EXPECT_EQ(lines(plan_one("  os: {}\n", step, facts)), Lines{"~ command mtu: MTU 1500, wanted 9000"});
}

TEST(Planner, Hostname) {
  const std::string step = "  - {id: hostname, type: hostname, name: '{{ node.name }}'}\n";
  auto facts = base_facts();
  EXPECT_EQ(plan_one("  os: {}\n", step, facts).status, NodeStatus::Unchanged);
  facts["hostname"] = "debian";
  auto plan = plan_one("  os: {}\n", step, facts);
  EXPECT_EQ(plan.status, NodeStatus::Changes);
  EXPECT_EQ(lines(plan), Lines{"~ hostname: is 'debian', wanted 'n1'"});
}

TEST(Planner, FileContentModeAndAbsence) {
  const std::string step =
      "  - {id: f, type: file, path: /etc/x.conf, mode: '0644', content: \"a\\nb\\n{{ os.timezone }}\\n\"}\n";
  auto facts = base_facts();
  facts["files"]["/etc/x.conf"] = {{"exists", false}};
  EXPECT_EQ(lines(plan_one("  os: {timezone: UTC}\n", step, facts)), Lines{"+ /etc/x.conf: does not exist"});

  facts["files"]["/etc/x.conf"] = {{"exists", true}, {"mode", "0644"}, {"content", "a\nb\nUTC\n"}};
  EXPECT_EQ(plan_one("  os: {timezone: UTC}\n", step, facts).status, NodeStatus::Unchanged);

  facts["files"]["/etc/x.conf"] = {{"exists", true}, {"mode", "600"}, {"content", "a\nold\nUTC\nextra\n"}};
  EXPECT_EQ(lines(plan_one("  os: {timezone: UTC}\n", step, facts)),
            (Lines{"~ /etc/x.conf: content differs (+1 -2 lines)", "~ /etc/x.conf: mode 600, wanted 0644"}));
}

TEST(Planner, FileComparedBySha256WhenContentIsNotInTheFacts) {
  const std::string step = "  - {id: f, type: file, path: /etc/x, content: \"hello\\n\"}\n";
  auto facts = base_facts();
  // sha256("hello\n")
  facts["files"]["/etc/x"] = {{"exists", true},
                              {"sha256", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}};
  EXPECT_EQ(plan_one("  os: {}\n", step, facts).status, NodeStatus::Unchanged);
  facts["files"]["/etc/x"]["sha256"] = std::string(64, '0');
  EXPECT_EQ(lines(plan_one("  os: {}\n", step, facts)), Lines{"~ /etc/x: content differs"});
}

// A secret copied from the operator's machine is compared by digest only.
TEST(Planner, CopyComparesTheSourceDigestNeverContent) {
  const std::string step =
      "  - {id: k, type: copy, path: /etc/munge/munge.key, src: /keys/munge.key, src_sha256: '{{ os.timezone }}', "
      "mode: '0400', owner: munge}\n";
  auto facts = base_facts();
  facts["files"]["/etc/munge/munge.key"] = {{"exists", false}};
  EXPECT_EQ(lines(plan_one("  os: {timezone: abc}\n", step, facts)), Lines{"+ /etc/munge/munge.key: does not exist"});
  facts["files"]["/etc/munge/munge.key"] = {{"exists", true}, {"sha256", "abc"}, {"mode", "0400"}, {"owner", "munge"}};
  EXPECT_EQ(plan_one("  os: {timezone: abc}\n", step, facts).status, NodeStatus::Unchanged);
  facts["files"]["/etc/munge/munge.key"]["sha256"] = "def";
  facts["files"]["/etc/munge/munge.key"]["mode"] = "0644";
  EXPECT_EQ(lines(plan_one("  os: {timezone: abc}\n", step, facts)),
            (Lines{"~ /etc/munge/munge.key: content differs from /keys/munge.key",
                   "~ /etc/munge/munge.key: mode 0644, wanted 0400"}));
  // No digest (the source is not readable where the plan runs): unknown.
  const std::string unreadable =
      "  - {id: k, type: copy, path: /etc/munge/munge.key, src: /keys/munge.key, src_sha256: ''}\n";
  EXPECT_EQ(lines(plan_one("  os: {}\n", unreadable, facts)),
            Lines{"? /etc/munge/munge.key: cannot read /keys/munge.key here; decided at apply"});
  // Predicted: after the copy the node holds the source's digest.
  ResolvedStep resolved{"k", "k", "copy", {{"path", "/k"}, {"src", "/s"}, {"src_sha256", "abc"}}};
  json predicted = base_facts();
  predict_facts_after(resolved, predicted);
  EXPECT_EQ(predicted["files"]["/k"], (json{{"exists", true}, {"sha256", "abc"}}));
}

TEST(Planner, MissingFactsAreUnknownNotAssumed) {
  const std::string step = "  - {id: f, type: file, path: /etc/x, content: x}\n";
  EXPECT_EQ(lines(plan_one("  os: {}\n", step, base_facts())),
            Lines{"? /etc/x: not in the facts; decided on the node"});
}

TEST(Planner, PackagesInstallUpgradeDowngradeRemove) {
  const std::string step =
      "  - {id: driver, type: package, names: [nvidia-driver], version: '{{ gpu.driver_version }}'}\n";
  auto facts = base_facts();
  facts["packages"]["nvidia-driver"] = nullptr;
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '550.90.07'}\n", step, facts)),
            Lines{"+ package nvidia-driver: not installed, wanted 550.90.07"});
  facts["packages"]["nvidia-driver"] = "535.129.03-1";
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '550.90.07'}\n", step, facts)),
            Lines{"~ package nvidia-driver: 535.129.03-1 installed, 550.90.07 wanted"});
  facts["packages"]["nvidia-driver"] = "550.90.07-1";
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '535.129.03'}\n", step, facts)),
            Lines{"~ package nvidia-driver: 550.90.07-1 installed, 535.129.03 wanted"});
  // The distribution's revision and epoch do not make a pinned version differ.
  EXPECT_EQ(plan_one("  gpu: {driver_version: '550.90.07'}\n", step, facts).status, NodeStatus::Unchanged);
  facts["packages"]["nvidia-driver"] = "1:550.90.07-0ubuntu1";
  EXPECT_EQ(plan_one("  gpu: {driver_version: '550.90.07'}\n", step, facts).status, NodeStatus::Unchanged);

  facts["packages"]["telnet"] = "0.17-44";
  EXPECT_EQ(lines(plan_one("  os: {}\n", "  - {id: p, type: package, names: [telnet], state: absent}\n", facts)),
            Lines{"- package telnet: 0.17-44 installed, wanted absent"});
}

// With the versions the node's sources offer in the facts, the plan names
// what a version resolves to, and "550" means the newest 550.x offered.
TEST(Planner, PackagesNameTheVersionTheSourcesOffer) {
  const std::string step =
      "  - {id: driver, type: package, names: [nvidia-driver-550], version: '{{ gpu.driver_version }}'}\n";
  auto facts = base_facts();
  facts["packages"]["nvidia-driver-550"] = nullptr;
  facts["package_candidates"]["nvidia-driver-550"] = {"550.107.02-0ubuntu0.22.04.1", "550.90.07-0ubuntu0.22.04.1"};
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '550'}\n", step, facts)),
            Lines{"+ package nvidia-driver-550: not installed, wanted 550 (550.107.02-0ubuntu0.22.04.1 in the sources)"});
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '550.90.07'}\n", step, facts)),
            Lines{"+ package nvidia-driver-550: not installed, wanted 550.90.07 (550.90.07-0ubuntu0.22.04.1 in the sources)"});
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '550.54.15'}\n", step, facts)),
            Lines{"+ package nvidia-driver-550: not installed, wanted 550.54.15 (not in the node's sources now)"});
  facts["packages"]["nvidia-driver-550"] = "550.90.07-0ubuntu0.22.04.1";
  EXPECT_EQ(plan_one("  gpu: {driver_version: '550.90.07'}\n", step, facts).status, NodeStatus::Unchanged);
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '550'}\n", step, facts)),
            Lines{"~ package nvidia-driver-550: 550.90.07-0ubuntu0.22.04.1 installed, the sources offer "
                  "550.107.02-0ubuntu0.22.04.1 for 550"});
}

// A package installed without a version: where the facts know apt's
// candidate (asked with reference nodes), the plan names it and predicts
// it, so the consistency report holds the node to it; else "installed".
TEST(Planner, AnUnpinnedPackageIsPredictedAtItsCandidate) {
  const std::string step = "  - {id: slurm, type: package, names: [slurmd, munge]}\n";
  auto facts = base_facts();
  facts["packages"]["slurmd"] = nullptr;
  facts["packages"]["munge"] = nullptr;
  facts["package_install_candidates"]["slurmd"] = "24.11.5-4+deb13u1";
  const NodePlan plan = plan_one("  os: {}\n", step, facts);
  EXPECT_EQ(lines(plan), (Lines{"+ package slurmd: not installed (24.11.5-4+deb13u1 in the sources)",
                                "+ package munge: not installed"}));
  ASSERT_TRUE(plan.predicted_facts);
  EXPECT_EQ((*plan.predicted_facts)["packages"]["slurmd"], "24.11.5-4+deb13u1");
  EXPECT_EQ((*plan.predicted_facts)["packages"]["munge"], "installed");
  // When the same plan changes the node's package sources first, the
  // candidate read from the old sources is no prediction.
  const std::string with_sources =
      "  - {id: sources, type: repository, sources: \"{{ gpuexpand.package_sources }}\"}\n" + step;
  const NodePlan changed = plan_one(
      "  os: {repositories: [{name: r, uris: ['http://mirror.example/debian'], suites: [bookworm], components: [main], insecure: true}]}\n",
      with_sources, facts);
  ASSERT_TRUE(changed.predicted_facts) << changed.message;
  EXPECT_EQ((*changed.predicted_facts)["packages"]["slurmd"], "installed");
}

// sets_facts names a list's element by its name, which may be a template:
// the element is updated where it exists and made where it does not.
TEST(Planner, SetsFactsReachesAListElementByName) {
  const std::string steps = R"(  - id: mtu
    type: command
    for_each: network.compute_interfaces
    label: "{{ item.name }}"
    check: "false"
    run: "true"
    rollback: "true"
    sets_facts:
      "network.interfaces[{{ item.name }}].mtu": "{{ item.mtu }}"
)";
  auto facts = base_facts();
  facts["network"]["interfaces"] = json::array({{{"name", "eth0"}, {"mtu", 1500}}, {{"name", "eth1.100"}, {"mtu", 1500}}});
  const NodePlan plan = plan_one("  network: {mtu: 9000, compute_interfaces: [{name: eth1.100}, {name: ib0, mtu: 4092}]}\n",
                                 steps, facts);
  ASSERT_TRUE(plan.predicted_facts) << plan.message;
  EXPECT_EQ((*plan.predicted_facts)["network"]["interfaces"],
            json::parse(R"([{"name": "eth0", "mtu": 1500}, {"name": "eth1.100", "mtu": "9000"}, {"name": "ib0", "mtu": "4092"}])"));
}

// hold: true holds what it installs; a hold someone released is planned back.
TEST(Planner, PackageHolds) {
  const std::string step =
      "  - {id: driver, type: package, names: [nvidia-driver], version: '550.90.07', hold: \"{{ gpu.hold_packages | default('true') }}\"}\n";
  auto facts = base_facts();
  facts["packages"]["nvidia-driver"] = "550.90.07";
  facts["held_packages"] = {"nvidia-driver"};
  EXPECT_EQ(plan_one("  gpu: {}\n", step, facts).status, NodeStatus::Unchanged);
  facts["held_packages"] = json::array();
  EXPECT_EQ(lines(plan_one("  gpu: {}\n", step, facts)), Lines{"~ package nvidia-driver: 550.90.07 installed, not held"});
  EXPECT_EQ(plan_one("  gpu: {hold_packages: false}\n", step, facts).status, NodeStatus::Unchanged);
  facts["held_packages"] = {"nvidia-driver"};
  EXPECT_EQ(lines(plan_one("  gpu: {hold_packages: false}\n", step, facts)), Lines{"~ package nvidia-driver: held, wanted not held"});
  // rpm nodes: no hold facts, nothing planned for the hold alone.
  facts.erase("held_packages");
  EXPECT_EQ(plan_one("  gpu: {}\n", step, facts).status, NodeStatus::Unchanged);
}

// replaces: another branch's installed packages are planned away, and the
// prediction drops them (so a second step does not plan them again).
TEST(Planner, PackagesReplaceAnotherBranch) {
  const std::string step =
      "  - {id: driver, type: package, names: [nvidia-driver-550, cuda-drivers-550], version: '550.90.07',\n"
      "     replaces: ['nvidia-driver-[0-9]*', 'cuda-drivers-[0-9]*']}\n"
      "  - {id: again, type: package, names: [nvidia-driver-550], replaces: ['nvidia-driver-[0-9]*']}\n";
  auto facts = base_facts();
  facts["packages"]["nvidia-driver-550"] = nullptr;
  facts["packages"]["cuda-drivers-550"] = nullptr;
  facts["packages"]["nvidia-driver-535"] = "535.183.01-0ubuntu1";
  facts["packages"]["cuda-drivers-535"] = "535.183.01-1";
  facts["packages"]["nvidia-driver-libs"] = "1.0";  // no branch: not the pattern's
  EXPECT_EQ(lines(plan_one("  gpu: {}\n", step, facts)),
            (Lines{"+ package nvidia-driver-550: not installed, wanted 550.90.07",
                   "+ package cuda-drivers-550: not installed, wanted 550.90.07",
                   "- package cuda-drivers-535: 535.183.01-1 installed, replaced by nvidia-driver-550, cuda-drivers-550",
                   "- package nvidia-driver-535: 535.183.01-0ubuntu1 installed, replaced by nvidia-driver-550, cuda-drivers-550"}));
}

// A hold is bookkeeping: a driver step that only puts its hold back does
// not reboot the node; a new version does.
TEST(Planner, AHoldAloneTriggersNoReboot) {
  const std::string steps =
      "  - {id: driver, type: package, names: [nvidia-driver], version: '550', hold: 'true'}\n"
      "  - {id: reboot, type: reboot, reboot_on: [driver]}\n";
  auto facts = base_facts();
  facts["packages"]["nvidia-driver"] = "550.90.07-1";
  facts["held_packages"] = json::array();
  EXPECT_EQ(lines(plan_one("  gpu: {}\n", steps, facts)), Lines{"~ package nvidia-driver: 550.90.07-1 installed, not held"});
  facts["package_candidates"]["nvidia-driver"] = {"550.127.05-1", "550.90.07-1"};
  EXPECT_EQ(lines(plan_one("  gpu: {}\n", steps, facts)),
            (Lines{"~ package nvidia-driver: 550.90.07-1 installed, the sources offer 550.127.05-1 for 550",
                   "~ reboot: driver changes"}));
}

TEST(Planner, PackageVersionMatching) {
  EXPECT_TRUE(package_version_matches("550.90.07", "550.90.07"));
  EXPECT_TRUE(package_version_matches("550.90.07-1", "550.90.07"));
  EXPECT_TRUE(package_version_matches("550.90.07+deb12u1", "550.90.07"));
  EXPECT_TRUE(package_version_matches("1:550.90.07-1", "550.90.07"));
  EXPECT_FALSE(package_version_matches("550.90.070", "550.90.07"));
  EXPECT_FALSE(package_version_matches("550.90", "550.90.07"));
  // Fewer components: anything under them (the newest is chosen at install).
  EXPECT_TRUE(package_version_matches("550.90.07.1", "550.90.07"));
}

// Real version strings: NVIDIA's CUDA repository for Ubuntu (550.90.07-1),
// Ubuntu's own driver packages (550.90.07-0ubuntu0.22.04.1), NVIDIA's
// RHEL 9 repository with its epoch (3:550.90.07-1.el9), cuda-toolkit 12.4.1-1.
TEST(Planner, PackageVersionMatchingOnVendorVersions) {
  for (const char* installed : {"550.90.07-1", "550.90.07-0ubuntu0.22.04.1", "3:550.90.07-1.el9"}) {
    EXPECT_TRUE(package_version_matches(installed, "550.90.07")) << installed;
    EXPECT_TRUE(package_version_matches(installed, "550")) << installed << ": the 550 branch";
    EXPECT_FALSE(package_version_matches(installed, "535")) << installed;
    EXPECT_FALSE(package_version_matches(installed, "55")) << installed << ": 55 is not a prefix of the branch";
  }
  EXPECT_FALSE(package_version_matches("550.90.070-1", "550.90.07"));
  EXPECT_TRUE(package_version_matches("12.4.1-1", "12.4"));
  EXPECT_FALSE(package_version_matches("12.40.1-1", "12.4"));
  // An epoch or a revision given explicitly must be there.
  EXPECT_TRUE(package_version_matches("3:550.90.07-1.el9", "3:550.90.07"));
  EXPECT_FALSE(package_version_matches("550.90.07-1", "3:550.90.07"));
  EXPECT_TRUE(package_version_matches("550.90.07-1", "0:550.90.07"));
  EXPECT_TRUE(package_version_matches("550.90.07-0ubuntu0.22.04.1", "550.90.07-0ubuntu0.22.04.1"));
  EXPECT_FALSE(package_version_matches("550.90.07-1", "550.90.07-0ubuntu0.22.04.1"));
  EXPECT_FALSE(package_version_matches("550.90.07-10", "550.90.07-1"));
}

TEST(Planner, ServiceStatesAndRestartOnChange) {
  const std::string steps =
      "  - {id: conf, type: file, path: /etc/s.conf, content: new}\n"
      "  - {id: svc, type: service, name: chrony, enabled: true, state: running, restart_on: [conf]}\n";
  auto facts = base_facts();
  facts["files"]["/etc/s.conf"] = {{"exists", true}, {"content", "new"}};
  facts["services"]["chrony"] = {{"exists", true}, {"enabled", false}, {"active", false}};
  EXPECT_EQ(lines(plan_one("  os: {}\n", steps, facts)),
            (Lines{"~ service chrony: disabled, wanted enabled", "~ service chrony: inactive, wanted running"}));
  facts["services"]["chrony"] = {{"exists", true}, {"enabled", true}, {"active", true}};
  EXPECT_EQ(plan_one("  os: {}\n", steps, facts).status, NodeStatus::Unchanged);
  facts["files"]["/etc/s.conf"]["content"] = "old";
  EXPECT_EQ(lines(plan_one("  os: {}\n", steps, facts)),
            (Lines{"~ /etc/s.conf: content differs (+1 -1 lines)", "~ service chrony: restart: conf changes"}));
  facts["services"]["chrony"] = {{"exists", false}};
  EXPECT_EQ(lines(plan_one("  os: {}\n", steps, facts))[1],
            "+ service chrony: not installed yet; will be enabled and started");
}

TEST(Planner, RestartOnAnUnknownChangeIsUnknown) {
  const std::string steps =
      "  - {id: conf, type: file, path: /etc/s.conf, content: new}\n"
      "  - {id: svc, type: service, name: chrony, restart_on: [conf]}\n";
  auto facts = base_facts();
  facts["services"]["chrony"] = {{"exists", true}, {"enabled", true}, {"active", true}};
  EXPECT_EQ(lines(plan_one("  os: {}\n", steps, facts)),
            (Lines{"? /etc/s.conf: not in the facts; decided on the node", "? service chrony: restart if conf changes"}));
}

TEST(Planner, BooleanParametersMayBeTemplates) {
  const std::string step =
      "  - {id: svc, type: service, name: nvidia-persistenced, enabled: '{{ gpu.persistence_mode }}'}\n";
  auto facts = base_facts();
  facts["services"]["nvidia-persistenced"] = {{"exists", true}, {"enabled", true}, {"active", true}};
  EXPECT_EQ(lines(plan_one("  gpu: {persistence_mode: false}\n", step, facts)),
            Lines{"~ service nvidia-persistenced: enabled, wanted disabled"});
}

TEST(Planner, TemplatesInsideMappingsAndListsAreRendered) {
  const std::string steps =
      "  - {id: s, type: sysctl, values: {vm.swappiness: '{{ os.timezone }}'}}\n"
      "  - {id: p, type: package, names: ['{{ os.timezone }}-tools']}\n";
  auto facts = base_facts();
  facts["sysctl"]["vm.swappiness"] = "60";
  facts["packages"]["UTC-tools"] = nullptr;
  EXPECT_EQ(lines(plan_one("  os: {timezone: UTC}\n", steps, facts)),
            (Lines{"~ sysctl vm.swappiness: 60, wanted UTC", "+ package UTC-tools: not installed"}));
}

TEST(Planner, ParameterShapeIsCheckedAfterRendering) {
  auto plan = plan_one("  os: {timezone: UTC}\n", "  - {id: s, type: sysctl, values: '{{ os.timezone }}'}\n", base_facts());
  EXPECT_EQ(plan.status, NodeStatus::Error);
  EXPECT_EQ(plan.message, "test.yaml:4:5: step 's': 'values' must be a mapping, got \"UTC\"");
}

// The acceptance step's declared checks: the builtin ones it lists (the
// spec chooses among them), its own with a command whose template values
// are shell-quoted like a command step's; folded into the settings.
TEST(Planner, AcceptanceChecksAreThePlaybooksAndCommandsAreQuoted) {
  const std::string steps =
      "  - id: checks\n    type: acceptance\n    checks:\n      - name: gpu\n"
      "      - name: gpu-names\n        command: nvidia-smi -L | grep -c {{ gpu.expected_model }}\n"
      "        timeout: 20\n";
  const std::string gpu = "  gpu: {expected_count: 8, expected_model: NVIDIA H200, driver_version: '550.90.07'}\n";
  auto plan = plan_one(gpu, steps, base_facts());
  ASSERT_EQ(plan.status, NodeStatus::Changes) << plan.message;
  static ClusterSpec spec;
  spec = spec_with(gpu);
  const json settings = node_acceptance_settings(spec, spec.nodes[0], phase_with(steps));
  EXPECT_EQ(settings["checks"], (json{"gpu", "gpu-names"})) << settings.dump();
  ASSERT_EQ(settings["custom"].size(), 1u);
  EXPECT_EQ(settings["custom"][0]["timeout"], 20);
  EXPECT_EQ(settings["custom"][0]["command"], "nvidia-smi -L | grep -c 'NVIDIA H200'") << "the value is one word";

  std::vector<Diagnostic> diagnostics;
  auto quoted = load_playbook_text(
      "phase: acceptance\norder: 7\nsteps:\n  - id: checks\n    type: acceptance\n    checks:\n"
      "      - name: x\n        command: echo \"{{ node.name }}\"\n",
      "t.yaml", testing::schema("playbook"), diagnostics);
  EXPECT_FALSE(quoted) << "a placeholder inside double quotes in a check's command is refused";
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_NE(diagnostics.front().message.find("inside double quotes"), std::string::npos) << diagnostics.front().message;
}

TEST(Planner, AcceptanceChecksThatCannotBeRun) {
  const std::string defaults = "  os: {timezone: UTC}\n";
  auto plan = plan_one(defaults, "  - {id: checks, type: acceptance, checks: [{name: gpu, command: 'true'}]}\n",
                       base_facts());
  EXPECT_EQ(plan.status, NodeStatus::Error);
  EXPECT_NE(plan.message.find("'gpu' is a builtin check: a check with its own 'command' needs another name"),
            std::string::npos)
      << plan.message;
  plan = plan_one(defaults, "  - {id: checks, type: acceptance, checks: [{name: bmc}]}\n", base_facts());
  EXPECT_NE(plan.message.find("check 'bmc' is not a builtin check"), std::string::npos) << plan.message;
  plan = plan_one(defaults, "  - {id: checks, type: acceptance, checks: [{name: gpu}, {name: gpu}]}\n",
                  base_facts());
  EXPECT_NE(plan.message.find("check 'gpu' is declared twice"), std::string::npos) << plan.message;
}

// The playbooks' variables: the strings only playbooks need are derived
// per node here, not carried in the spec's settings; the names C++ owns
// come from C++.
TEST(Planner, PlaybookVariablesDeriveWhatOnlyPlaybooksNeed) {
  auto loaded = load_spec_file(testing::source_path("examples/lab-rack.yaml"), testing::schema("cluster"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  const NodeSpec& node = loaded.spec->nodes[0];
  const json vars = playbook_variables(*loaded.spec, node);
  EXPECT_EQ(vars["gpuexpand"]["acceptance_reservation"], acceptance_reservation(node.name));
  EXPECT_EQ(vars["gpuexpand"]["acceptance_record"], kAcceptanceRecordPath);
  const json& slurm = vars["scheduler"]["slurm"];
  EXPECT_EQ(slurm["conf_server_option"], "--conf-server 198.18.0.10 ");
  EXPECT_EQ(slurm["node_conf"], "Gres=gpu:8 Feature=h200,lab State=DRAIN");
  EXPECT_EQ(slurm["gpu_gres_conf"], "Name=gpu");
  EXPECT_FALSE((*node.settings)["scheduler"]["slurm"].contains("conf_server_option"))
      << "the spec's settings carry no playbook-only strings";
}

TEST(Planner, SysctlComparesFieldsNotWhitespace) {
  const std::string step = "  - {id: s, type: sysctl, values: '{{ os.sysctl }}'}\n";
  const std::string defaults = "  os: {sysctl: {net.ipv4.tcp_rmem: '4096 87380 134217728', vm.swappiness: 1}}\n";
  auto facts = base_facts();
  facts["sysctl"] = {{"net.ipv4.tcp_rmem", "4096\t87380\t134217728"}, {"vm.swappiness", "60"}};
  EXPECT_EQ(lines(plan_one(defaults, step, facts)), Lines{"~ sysctl vm.swappiness: 60, wanted 1"});
  facts["sysctl"]["vm.swappiness"] = nullptr;
  EXPECT_EQ(lines(plan_one(defaults, step, facts)),
            Lines{"~ sysctl vm.swappiness: not known to this kernel (no /proc/sys entry)"});
}

TEST(Planner, KernelModulesUseTheKernelsSpelling) {
  const std::string step = "  - {id: m, type: kernel_module, names: '{{ os.kernel_modules }}'}\n";
  auto facts = base_facts();
  facts["kernel_modules"]["loaded"] = {"nvidia_peermem"};
  EXPECT_EQ(lines(plan_one("  os: {kernel_modules: [nvidia-peermem, ib_ipoib]}\n", step, facts)),
            Lines{"~ module ib_ipoib: not loaded"});
}

TEST(Planner, MountFstabAndLiveState) {
  const std::string step =
      "  - {id: mount, type: mount, for_each: storage, label: '{{ item.name }}', source: '{{ item.source }}',"
      " path: '{{ item.mountpoint }}', fstype: '{{ item.type }}', options: \"{{ item.options | join(',') }}\"}\n";
  const std::string defaults =
      "  storage:\n    - {name: data, type: sshfs, source: 'root@s:/srv', mountpoint: /mnt/data, options: "
      "[allow_other, reconnect]}\n";
  auto facts = base_facts();
  EXPECT_EQ(lines(plan_one(defaults, step, facts)),
            (Lines{"+ mount /mnt/data: no fstab entry", "~ mount /mnt/data: not mounted"}));
  facts["fstab"] = {{{"source", "root@s:/srv"}, {"target", "/mnt/data"}, {"fstype", "fuse.sshfs"},
                     {"options", "allow_other"}}};
  facts["mounts"] = {{{"target", "/mnt/data"}, {"source", "root@s:/srv"}, {"fstype", "fuse.sshfs"}}};
  auto plan = plan_one(defaults, step, facts);
  EXPECT_EQ(lines(plan), Lines{"~ mount /mnt/data: fstab options allow_other, wanted allow_other,reconnect"});
  EXPECT_EQ(plan.phases[0].changes[0].step, "mount[data]");
  facts["fstab"][0]["options"] = "allow_other,reconnect";
  EXPECT_EQ(plan_one(defaults, step, facts).status, NodeStatus::Unchanged);
}

TEST(Planner, CommandStepsDecideByTheirCheck) {
  const std::string step = "  - {id: c, type: command, check: 'test -e /x', run: 'touch /x', rollback: 'rm -f /x'}\n";
  auto facts = base_facts();
  EXPECT_EQ(lines(plan_one("  os: {}\n", step, facts)), Lines{"? command c: check not run yet; decided on the node"});
  facts["checks"]["c"] = 1;
  EXPECT_EQ(lines(plan_one("  os: {}\n", step, facts)), Lines{"~ command c: check exited 1"});
  facts["checks"]["c"] = 0;
  EXPECT_EQ(plan_one("  os: {}\n", step, facts).status, NodeStatus::Unchanged);
}

TEST(Planner, RebootOnlyWhenItsTriggerChanges) {
  const std::string steps =
      "  - {id: driver, type: package, names: [nvidia-driver], version: '{{ gpu.driver_version }}'}\n"
      "  - {id: reboot, type: reboot, reboot_on: [driver]}\n";
  auto facts = base_facts();
  facts["packages"]["nvidia-driver"] = "535.129.03-1";
  EXPECT_EQ(lines(plan_one("  gpu: {driver_version: '550.90.07'}\n", steps, facts)),
            (Lines{"~ package nvidia-driver: 535.129.03-1 installed, 550.90.07 wanted", "~ reboot: driver changes"}));
  EXPECT_EQ(plan_one("  gpu: {driver_version: '535.129.03'}\n", steps, facts).status, NodeStatus::Unchanged);
}

TEST(Planner, WhenSkipsSteps) {
  const std::string step = "  - {id: tz, type: timezone, when: os.timezone, zone: '{{ os.timezone }}'}\n";
  auto facts = base_facts();
  facts["timezone"] = "Etc/UTC";
  EXPECT_EQ(plan_one("  os: {}\n", step, facts).status, NodeStatus::Unchanged);
  EXPECT_EQ(lines(plan_one("  os: {timezone: UTC}\n", step, facts)), Lines{"~ timezone: is 'Etc/UTC', wanted 'UTC'"});
}

TEST(Planner, LaterStepsSeeEarlierStepsEffects) {
  const std::string steps =
      "  - {id: a, type: package, names: [chrony]}\n"
      "  - {id: b, type: package, names: '{{ os.packages }}'}\n";
  auto facts = base_facts();
  facts["packages"] = {{"chrony", nullptr}, {"jq", nullptr}};
  EXPECT_EQ(lines(plan_one("  os: {packages: [chrony, jq]}\n", steps, facts)),
            (Lines{"+ package chrony: not installed", "+ package jq: not installed"}));
}

TEST(Planner, TemplateErrorFailsOnlyThatNodeWithTheStepLocation) {
  auto plan = plan_one("  os: {}\n", "  - {id: h, type: hostname, name: '{{ os.timezone }}'}\n", base_facts());
  EXPECT_EQ(plan.status, NodeStatus::Error);
  EXPECT_EQ(plan.message, "test.yaml:4:5: step 'h': 'name': undefined variable 'os.timezone'");
}

TEST(Planner, NoFactsOrUnreachable) {
  auto spec = spec_with("  os: {}\n");
  auto set = phase_with("  - {id: h, type: hostname, name: x}\n");
  auto none = plan_node(spec, spec.nodes[0], set, nullptr);
  EXPECT_EQ(none.status, NodeStatus::Unreachable);
  EXPECT_EQ(none.message, "no facts for this node");
  json down = {{"schema_version", 1}, {"node", "n1"}, {"unreachable", "connection refused"}};
  auto unreachable = plan_node(spec, spec.nodes[0], set, &down);
  EXPECT_EQ(unreachable.status, NodeStatus::Unreachable);
  EXPECT_EQ(unreachable.message, "connection refused");
}

// The real playbooks on a factory-fresh lab node: apply what the plan
// says (predicted), plan again: nothing is left. This is the property a
// second `apply` relies on.
TEST(Planner, RealPlaybooksConvergeToNoChanges) {
  // The example's munge key (~/.gpuexpand-lab/munge.key) must be readable
  // for its copy step to plan a digest rather than '?'.
  const std::string home = "/tmp/gpx-planner-home-" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("mkdir -p " + home + "/.gpuexpand-lab && printf k > " + home + "/.gpuexpand-lab/munge.key").c_str()), 0);
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  ::setenv("HOME", home.c_str(), 1);
  auto loaded = load_spec_file(testing::source_path("examples/lab-rack.yaml"), testing::schema("cluster"));
  ::setenv("HOME", saved_home.c_str(), 1);
  ASSERT_TRUE(loaded.spec);
  auto facts = load_facts_file(testing::source_path("tests/fixtures/facts/lab-bare.json"),
                               testing::schema("facts-file"), testing::schema("facts"));
  ASSERT_TRUE(facts) << facts.error().message;
  const NodeSpec& node = loaded.spec->nodes[0];
  json node_facts = facts.value().at(node.name);
  NodePlan first = plan_node(*loaded.spec, node, testing::playbooks(), &node_facts);
  ASSERT_EQ(first.status, NodeStatus::Changes) << first.message;
  EXPECT_EQ(first.phases.size(), 7u) << "every phase has work on a bare node";
  for (const auto& phase : first.phases) {
    for (const auto& step : phase.steps) predict_facts_after(step, node_facts);
  }
  NodePlan second = plan_node(*loaded.spec, node, testing::playbooks(), &node_facts);
  EXPECT_EQ(second.status, NodeStatus::Unchanged) << testing::diagnostics_text({}) << [&] {
    std::string text;
    for (const auto& l : lines(second)) text += l + "\n";
    return text;
  }();
}

// A step that is one of several by release names its variant on each of
// its changes; the shipped chrony configuration is chosen by the node's
// release: Debian 13 reads leap seconds from the IERS list (its tzdata has
// no right/ zones), Debian 12 from right/UTC (its chrony 4.3 has no
// leapseclist).
TEST(Planner, AVariantStepNamesItsVariantOnEachChange) {
  const std::string steps = R"(  - id: conf-old
    type: file
    variant: before release 13
    when: facts.os.version_id < '13'
    path: /etc/x.conf
    content: "old\n"
  - id: conf-new
    type: file
    variant: release 13 and later
    when: facts.os.version_id >= '13'
    path: /etc/x.conf
    content: "new\n"
  - {id: h, type: hostname, name: n1}
)";
  json facts = base_facts();
  facts["hostname"] = "other";
  facts["os"]["version_id"] = "13";
  NodePlan plan = plan_one("  os: {timezone: UTC}\n", steps, facts);
  ASSERT_EQ(plan.phases.size(), 1u) << plan.message;
  ASSERT_EQ(plan.phases[0].changes.size(), 2u);
  EXPECT_EQ(plan.phases[0].changes[0].step, "conf-new");
  EXPECT_EQ(plan.phases[0].changes[0].variant, "release 13 and later");
  EXPECT_EQ(plan.phases[0].changes[1].variant, "") << "a step without variants names none";
  const json phases = node_phases_json(plan);
  EXPECT_EQ(phases[0]["changes"][0]["variant"], "release 13 and later");
  EXPECT_FALSE(phases[0]["changes"][1].contains("variant"));

  facts["os"]["version_id"] = "12";
  plan = plan_one("  os: {timezone: UTC}\n", steps, facts);
  ASSERT_EQ(plan.phases.size(), 1u) << plan.message;
  EXPECT_EQ(plan.phases[0].changes[0].step, "conf-old");
  EXPECT_EQ(plan.phases[0].changes[0].variant, "before release 13");
}

TEST(Planner, ChronyConfigurationByDebianRelease) {
  auto loaded = testing::load_spec(testing::minimal_spec("defaults:\n  os: {ntp_servers: [10.0.0.1]}\n"));
  ASSERT_TRUE(loaded.spec) << testing::diagnostics_text(loaded);
  auto chrony = [&](const std::string& id, const std::string& version_id) {
    json facts = base_facts();
    facts["os"]["id"] = id;
    if (!version_id.empty()) facts["os"]["version_id"] = version_id;
    NodePlan plan = plan_node(*loaded.spec, loaded.spec->nodes[0], testing::playbooks(), &facts);
    for (const auto& phase : plan.phases) {
      for (size_t i = 0; i < phase.steps.size(); ++i) {
        if (phase.steps[i].params.value("path", "") != "/etc/chrony/chrony.conf") continue;
        const std::string content = phase.steps[i].params.value("content", "");
        const bool list = content.find("\nleapseclist /usr/share/zoneinfo/leap-seconds.list\n") != std::string::npos;
        const bool zone = content.find("\nleapsectz right/UTC\n") != std::string::npos;
        return phase.steps[i].id + (list ? " leapseclist" : "") + (zone ? " leapsectz" : "");
      }
    }
    return std::string("none");
  };
  EXPECT_EQ(chrony("debian", "13"), "chrony-config-debian13 leapseclist");
  EXPECT_EQ(chrony("debian", "14"), "chrony-config-debian13 leapseclist");
  EXPECT_EQ(chrony("debian", "12"), "chrony-config-debian leapsectz");
  EXPECT_EQ(chrony("debian", ""), "chrony-config-debian leapsectz") << "testing/sid name no VERSION_ID";
  EXPECT_EQ(chrony("ubuntu", "24.04"), "chrony-config-debian leapsectz");
}

// The plan document matches its schema, and 1,000 nodes of one build are
// one entry of "plans": the fold is exact, expanding a node's entry with
// its own values gives back exactly the phases it would have unfolded.
TEST(Planner, PlanDocumentMatchesItsSchemaAndFoldsExactly) {
  auto loaded = load_spec_file(testing::source_path("examples/h200-expansion.yaml"), testing::schema("cluster"));
  ASSERT_TRUE(loaded.spec);
  auto facts = load_facts_file(testing::source_path("tests/fixtures/facts/h200-bare.json"),
                               testing::schema("facts-file"), testing::schema("facts"));
  ASSERT_TRUE(facts) << facts.error().message;
  std::vector<const NodeSpec*> nodes;
  for (const auto& n : loaded.spec->nodes) nodes.push_back(&n);
  Plan plan = make_plan(*loaded.spec, nodes, testing::playbooks(), facts.value(), "2026-11-30T00:00:00Z");
  const PlanSummary summary = plan.summary();
  EXPECT_EQ(summary.nodes, 128u);
  EXPECT_EQ(summary.unreachable, 1u);
  EXPECT_EQ(summary.to_change, 127u);
  const json document = plan_to_json(plan);
  const auto problems = testing::schema("plan").validate_json(document);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(document["format_version"], 2);
  EXPECT_EQ(document["nodes"][0]["rack"], "r01");
  ASSERT_EQ(document["nodes"].size(), 128u);
  EXPECT_LE(document["plans"].size(), 4u) << "racks differ in time servers and features, not per node";
  EXPECT_EQ(document["plans"][0]["nodes"], "gpu-node-[001-064]");

  auto expand = [](std::string text, const json& node) {
    std::vector<std::pair<std::string, std::string>> values = {{"{node.address}", node["address"]},
                                                               {"{node.name}", node["name"]}};
    if (node.contains("values")) {
      for (const auto& [placeholder, value] : node["values"].items()) values.emplace_back(placeholder, value);
    }
    for (const auto& [placeholder, value] : values) {
      for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size())) {
        text.replace(at, placeholder.size(), value);
      }
    }
    return text;
  };
  size_t compared = 0;
  bool some_own_value = false;
  // Every fifth node (and the last) of each rack: the check is exact for
  // each; all 128 would make the sanitizer run slow for no more coverage.
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const json& node = document["nodes"][i];
    if (!node.contains("plan") || (i % 5 != 0 && i % 32 != 31)) continue;
    some_own_value = some_own_value || node.contains("values");
    const json& shared = document["plans"][node["plan"].get<size_t>()]["phases"];
    EXPECT_EQ(json::parse(expand(shared.dump(), node)), node_phases_json(plan.nodes[i])) << node["name"];
    ++compared;
  }
  EXPECT_EQ(compared, 29u);  // 26 every fifth, 4 rack ends (index 95 is both); not the unreachable gpu-node-077
  EXPECT_TRUE(some_own_value) << "the example gives nodes compute addresses";
  const std::string shared_text = document["plans"][0].dump();
  EXPECT_NE(shared_text.find("{node.name}"), std::string::npos);
  EXPECT_EQ(shared_text.find("gpu-node-001"), std::string::npos) << "a node's own name stays out of a shared entry";
}

}  // namespace
}  // namespace gpuexpand
