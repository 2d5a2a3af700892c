// Human plan output: markers, reasons, folding of identical nodes with the
// node's own values abstracted, and the summary line.

#include <gtest/gtest.h>

#include "gpuexpand/view/plan_text.hpp"

namespace gpuexpand {
namespace {

NodePlan changed(const std::string& name, const std::string& address, const std::string& reason) {
  NodePlan n;
  n.node = name;
  n.address = address;
  n.status = NodeStatus::Changes;
  n.phases.push_back({"os-init", {{"hostname", "hostname", ChangeAction::Update, "hostname", reason}}, {}});
  return n;
}

NodePlan with_status(const std::string& name, NodeStatus status, const std::string& message = "") {
  NodePlan n;
  n.node = name;
  n.address = name;
  n.status = status;
  n.message = message;
  return n;
}

Plan sample() {
  Plan plan;
  plan.cluster = "lab";
  plan.spec_file = "lab.yaml";
  plan.nodes.push_back(changed("n1", "10.0.0.1", "is 'debian', wanted 'n1'"));
  plan.nodes.push_back(changed("n2", "10.0.0.2", "is 'debian', wanted 'n2'"));
  plan.nodes.push_back(changed("n10", "10.0.0.10", "is 'n1', wanted 'n10'"));
  plan.nodes.push_back(with_status("n3", NodeStatus::Unchanged));
  plan.nodes.push_back(with_status("n4", NodeStatus::Unchanged));
  plan.nodes.push_back(with_status("n5", NodeStatus::Unreachable, "connection refused"));
  return plan;
}

// A group that differs from a larger one in a few lines (one node's driver
// is another branch's) is said as the larger group's changes, except those
// lines, not printed whole again; a node whose lines differ in more is.
TEST(PlanText, AGroupThatDiffersInAFewLinesIsShownByThem) {
  Plan plan;
  plan.cluster = "lab";
  plan.spec_file = "lab.yaml";
  auto node = [](const std::string& name, const std::string& driver_reason, size_t extra) {
    NodePlan n;
    n.node = name;
    n.address = name;
    n.status = NodeStatus::Changes;
    std::vector<PlannedChange> os;
    for (const char* p : {"chrony", "rsync", "jq", "numactl", "pciutils", "ipmitool", "nvme-cli"}) {
      os.push_back({std::string("pkg-") + p, "package", ChangeAction::Create, std::string("package ") + p, "not installed"});
    }
    for (size_t i = 0; i < extra; ++i) {
      os.push_back({"x" + std::to_string(i), "file", ChangeAction::Create, "/etc/x" + std::to_string(i), "does not exist"});
    }
    n.phases.push_back({"os-init", os, {}});
    n.phases.push_back({"gpu-driver", {{"driver", "package", ChangeAction::Update, "package nvidia-driver", driver_reason}}, {}});
    return n;
  };
  plan.nodes.push_back(node("n1", "535.129.03 installed, 550.90.07 wanted", 0));
  plan.nodes.push_back(node("n2", "535.129.03 installed, 550.90.07 wanted", 0));
  plan.nodes.push_back(node("n3", "not installed, wanted 550.90.07", 0));
  plan.nodes.push_back(node("n4", "not installed, wanted 550.90.07", 5));
  const std::string text = render_plan_text(plan, {});
  EXPECT_NE(text.find("n3 (1 node): the changes of n[1-2], except\n"
                      "  gpu-driver\n"
                      "    instead of\n"
                      "      ~ package nvidia-driver: 535.129.03 installed, 550.90.07 wanted\n"
                      "    these\n"
                      "      ~ package nvidia-driver: not installed, wanted 550.90.07\n\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("n4\n  os-init\n"), std::string::npos) << "six lines differ of 13: printed whole\n" << text;
}

// Two nodes of different releases take different variants of a step: each
// change says which, and they are not folded together.
TEST(PlanText, AChangeNamesTheVariantItsStepTook) {
  Plan plan;
  plan.cluster = "lab";
  plan.spec_file = "lab.yaml";
  for (const auto& [name, variant] : {std::pair{"n1", "Debian 12 and earlier, Ubuntu"}, std::pair{"n2", "Debian 13 and later"}}) {
    NodePlan n;
    n.node = name;
    n.address = name;
    n.status = NodeStatus::Changes;
    PlannedChange c{"chrony", "file", ChangeAction::Create, "/etc/chrony/chrony.conf", "does not exist"};
    c.variant = variant;
    n.phases.push_back({"os-init", {c}, {}});
    plan.nodes.push_back(n);
  }
  EXPECT_EQ(render_plan_text(plan, {}),
            "Plan for cluster lab (lab.yaml)\n"
            "\n"
            "n1\n"
            "  os-init\n"
            "    + /etc/chrony/chrony.conf: does not exist  (variant: Debian 12 and earlier, Ubuntu)\n"
            "\n"
            "n2\n"
            "  os-init\n"
            "    + /etc/chrony/chrony.conf: does not exist  (variant: Debian 13 and later)\n"
            "\n"
            "2 nodes: 2 to change, 0 unchanged, 0 unreachable (2 changes)\n");
}

TEST(PlanText, OutlineKeepsTheGroupsAndTheSummary) {
  EXPECT_EQ(plan_outline(render_plan_text(sample(), {})),
            "Plan for cluster lab (lab.yaml)\n"
            "\n"
            "n[1-2] (2 nodes, same plan; {node.name} and {node.address} stand for each node's own)\n"
            "\n"
            "n10\n"
            "\n"
            "n[3-4]: no changes\n"
            "\n"
            "n5: unreachable: connection refused\n"
            "\n"
            "6 nodes: 3 to change, 2 unchanged, 1 unreachable (3 changes)\n"
            "(4 lines of changes not shown)\n");
}

TEST(PlanText, FoldsNodesWhosePlansDifferOnlyInTheirOwnName) {
  EXPECT_EQ(render_plan_text(sample(), {}),
            "Plan for cluster lab (lab.yaml)\n"
            "\n"
            "n[1-2] (2 nodes, same plan; {node.name} and {node.address} stand for each node's own)\n"
            "  os-init\n"
            "    ~ hostname: is 'debian', wanted '{node.name}'\n"
            "\n"
            "n10\n"
            "  os-init\n"
            "    ~ hostname: is 'n1', wanted 'n10'\n"
            "\n"
            "n[3-4]: no changes\n"
            "\n"
            "n5: unreachable: connection refused\n"
            "\n"
            "6 nodes: 3 to change, 2 unchanged, 1 unreachable (3 changes)\n");
}

// Compute addresses are each node's own too: nodes that differ only in
// them fold, and the group shows the placeholder.
TEST(PlanText, FoldsOverEachNodesComputeAddresses) {
  Plan plan;
  plan.cluster = "lab";
  plan.spec_file = "lab.yaml";
  for (int i = 1; i <= 3; ++i) {
    NodePlan n = changed("n" + std::to_string(i), "10.0.0." + std::to_string(i), "is 'debian', wanted 'n" + std::to_string(i) + "'");
    const std::string cidr = "10.0.1." + std::to_string(i) + "/24";
    n.own_values = {{"{eth1.address}", cidr}};
    n.phases.push_back({"rdma", {{"interface-address[eth1]", "address", ChangeAction::Create, "address eth1 " + cidr,
                                  "not on eth1"}}, {}});
    plan.nodes.push_back(n);
  }
  EXPECT_EQ(render_plan_text(plan, {}),
            "Plan for cluster lab (lab.yaml)\n"
            "\n"
            "n[1-3] (3 nodes, same plan; {node.name}, {node.address} and {INTERFACE.address} stand for each node's own)\n"
            "  os-init\n"
            "    ~ hostname: is 'debian', wanted '{node.name}'\n"
            "  rdma\n"
            "    + address eth1 {eth1.address}: not on eth1\n"
            "\n"
            "3 nodes: 3 to change, 0 unchanged, 0 unreachable (6 changes)\n");
}

// Two racks whose change lines read the same but whose files differ (their
// Slurm features are in the drop-in): not one "same plan"; the second
// group names what it writes differently.
TEST(PlanText, FoldsOnlyNodesThatWriteTheSameContent) {
  Plan plan;
  plan.cluster = "c";
  plan.spec_file = "c.yaml";
  for (int i = 1; i <= 4; ++i) {
    NodePlan n;
    n.node = "n" + std::to_string(i);
    n.address = n.node;
    n.status = NodeStatus::Changes;
    const std::string unit = "/etc/systemd/system/slurmd.service.d/gpuexpand.conf";
    const std::string features = i <= 2 ? "h100,rack1" : "h100,rack2";
    n.phases.push_back({"scheduler",
                        {{"slurmd-dynamic", "file", ChangeAction::Create, unit, "does not exist"}},
                        {{"slurmd-dynamic", "slurmd-dynamic", "file", {{"path", unit}, {"content", "Feature=" + features}}}}});
    plan.nodes.push_back(n);
  }
  EXPECT_EQ(render_plan_text(plan, {}),
            "Plan for cluster c (c.yaml)\n"
            "\n"
            "n[1-2] (2 nodes, same plan; {node.name} and {node.address} stand for each node's own)\n"
            "  scheduler\n"
            "    + /etc/systemd/system/slurmd.service.d/gpuexpand.conf: does not exist\n"
            "\n"
            "n[3-4] (2 nodes): the changes of n[1-2], writing other content to "
            "/etc/systemd/system/slurmd.service.d/gpuexpand.conf\n"
            "\n"
            "4 nodes: 4 to change, 0 unchanged, 0 unreachable (4 changes)\n");
}

// --diff: a file change's unified diff under it, secret-looking values masked.
TEST(PlanText, DiffsUnderFileChangesWithSecretsMasked) {
  Plan plan;
  plan.cluster = "c";
  plan.spec_file = "c.yaml";
  NodePlan n;
  n.node = "n1";
  n.address = "n1";
  n.status = NodeStatus::Changes;
  PlannedChange change{"join", "file", ChangeAction::Update, "/etc/x.yaml", "content differs (+2 -1 lines)"};
  change.diff = "@@ -1 +1,2 @@\n-token: abc\n+token: \"s3cr3t\"\n+caCertHashes: sha256:1234\n";
  PlannedChange reboot{"reboot", "reboot", ChangeAction::Update, "reboot", "driver changes"};
  n.phases.push_back({"os-init", {change, reboot}, {}});
  plan.nodes.push_back(n);
  PlanTextOptions options;
  options.diff = true;
  EXPECT_EQ(render_plan_text(plan, options),
            "Plan for cluster c (c.yaml)\n"
            "\n"
            "n1\n"
            "  os-init\n"
            "    ~ /etc/x.yaml: content differs (+2 -1 lines)\n"
            "        @@ -1 +1,2 @@\n"
            "        -token: (masked)\n"
            "        +token: (masked)\n"
            "        +caCertHashes: sha256:1234\n"
            "    ~ reboot: driver changes\n"
            "\n"
            "1 node: 1 to change, 0 unchanged, 0 unreachable (2 changes; 1 node reboots)\n");
  EXPECT_EQ(render_plan_text(plan, {}).find("@@"), std::string::npos) << "only with --diff";
}

// The plan for a pull-request comment: each group collapsed, its changes a
// `diff` block (~ shown as !), what differs in content said in a line.
TEST(PlanText, MarkdownForAPullRequest) {
  Plan plan = sample();
  NodePlan other = changed("n6", "10.0.0.6", "is 'debian', wanted 'n6'");
  other.phases[0].steps.push_back({"hostname", "hostname", "hostname", {{"name", "n6"}, {"note", "other"}}});
  plan.nodes.push_back(other);
  EXPECT_EQ(render_plan_markdown(plan, {}),
            "### gpuexpand plan: cluster `lab`\n"
            "\n"
            "**7 nodes: 4 to change, 2 unchanged, 1 unreachable (4 changes)**\n"
            "\n"
            "<details><summary><code>n[1-2]</code>: 2 nodes, 1 change</summary>\n"
            "\n"
            "```diff\n"
            "# os-init\n"
            "! hostname: is 'debian', wanted '{node.name}'\n"
            "```\n"
            "\n"
            "</details>\n"
            "\n"
            "<details><summary><code>n10</code>: 1 node, 1 change</summary>\n"
            "\n"
            "```diff\n"
            "# os-init\n"
            "! hostname: is 'n1', wanted 'n10'\n"
            "```\n"
            "\n"
            "</details>\n"
            "\n"
            "- <code>n[3-4]</code>: no changes\n"
            "\n"
            "- <code>n5</code>: unreachable: connection refused\n"
            "\n"
            "- <code>n6</code> (1 node): the changes of n[1-2], writing other content to hostname\n");
}

TEST(PlanText, NoFoldShowsEveryNode) {
  PlanTextOptions options;
  options.fold = false;
  const std::string text = render_plan_text(sample(), options);
  EXPECT_NE(text.find("\nn1\n  os-init\n    ~ hostname: is 'debian', wanted 'n1'\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nn3: no changes\n"), std::string::npos) << text;
}

TEST(PlanText, StepsAndColours) {
  PlanTextOptions options;
  options.show_steps = true;
  options.color = true;
  const std::string text = render_plan_text(sample(), options);
  EXPECT_NE(text.find("    \033[33m~\033[0m hostname: is 'n1', wanted 'n10'  [hostname]\n"), std::string::npos) << text;
}

TEST(PlanText, SummaryCountsPlanningErrors) {
  Plan plan = sample();
  plan.nodes.push_back(with_status("n6", NodeStatus::Error, "x.yaml:1:1: boom"));
  EXPECT_EQ(plan_summary_line(plan), "7 nodes: 3 to change, 2 unchanged, 1 unreachable, 1 failed to plan (3 changes)");
  EXPECT_NE(render_plan_text(plan, {}).find("\nn6: cannot plan: x.yaml:1:1: boom\n"), std::string::npos);
}

}  // namespace
}  // namespace gpuexpand
