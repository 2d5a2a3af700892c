// Black-box tests of the built binary: exit codes, exact error output,
// machine-readable outputs, files it writes.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace gpuexpand::testing {
namespace {

const std::string kLabSpec = source_path("examples/lab-rack.yaml");
const std::string kH200Spec = source_path("examples/h200-expansion.yaml");
const std::string kLabFacts = source_path("tests/fixtures/facts/lab-bare.json");
const std::string kH200Facts = source_path("tests/fixtures/facts/h200-bare.json");

TEST(Cli, Version) {
  auto r = run_gpuexpand({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "gpuexpand 0.1.0\n");
}

TEST(Cli, HelpListsCommandsAndExitCodes) {
  auto r = run_gpuexpand({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"validate", "inventory", "plan", "apply", "rollback", "status", "verify", "Exit codes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

TEST(Cli, NoCommandIsAnError) {
  auto r = run_gpuexpand({});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("A subcommand is required"), std::string::npos) << r.err;
}

TEST(Cli, UnknownOptionIsAnError) {
  auto r = run_gpuexpand({"validate", kLabSpec, "--bogus"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST(Cli, UnbuiltCommandsFailLoudly) {
  for (const char* command : {"verify"}) {
    auto r = run_gpuexpand({command, kLabSpec});
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find("not implemented yet"), std::string::npos) << command << ": " << r.err;
    EXPECT_EQ(r.out, "") << command;
  }
}

TEST(Cli, StatusAndUnlockOnAFreshStore) {
  const std::string state = make_temp_dir() + "/sub/state.db";
  auto status = run_gpuexpand({"status", "--state", state});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out, "No runs recorded in " + state + "\n");
  auto refused = run_gpuexpand({"unlock", "--state", state});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.err, "gpuexpand: unlock needs --force: releasing a lock another apply still uses lets two runs "
                         "change the same nodes\n");
  auto unlocked = run_gpuexpand({"unlock", "--force", "--state", state});
  EXPECT_EQ(unlocked.exit_code, 0) << unlocked.err;
  EXPECT_EQ(unlocked.out, "No locks held\n");
  auto json = run_gpuexpand({"status", "--state", state, "-o", "json"});
  EXPECT_EQ(nlohmann::json::parse(json.out), nlohmann::json::parse(R"({"runs": [], "latest": []})"));
}

TEST(Cli, ValidateExamples) {
  auto r = run_gpuexpand({"validate", kLabSpec, kH200Spec});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kLabSpec + ": valid (6 nodes)\n" + kH200Spec + ": valid (128 nodes in 4 racks)\n");
}

TEST(Cli, ValidateBrokenSpecPrintsLocatedErrorsWithTheLine) {
  const std::string dir = make_temp_dir();
  const std::string spec = dir + "/broken.yaml";
  write_file(spec, "apiVersion: gpuexpand/v1\ncluster:\n  name: lab\nssh:\n  becme: sudo\nnodes:\n  - hosts: n[1-3]\n"
                   "    addresses: 10.0.0.[1-2]\n");
  auto r = run_gpuexpand({"validate", spec});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, spec + ":5:3: unknown key 'becme' in ssh (did you mean 'become'?)\n"
                          "    becme: sudo\n"
                          "    ^\n" +
                       spec + ":8:16: nodes[0]: hosts 'n[1-3]' has 3 names but addresses '10.0.0.[1-2]' has 2\n"
                              "      addresses: 10.0.0.[1-2]\n"
                              "                 ^\n" +
                       spec + ": 2 errors\n");
}

TEST(Cli, ValidateJsonOutput) {
  const std::string dir = make_temp_dir();
  const std::string spec = dir + "/broken.yaml";
  write_file(spec, "apiVersion: gpuexpand/v1\ncluster: {name: Lab}\nnodes: [{name: n1}]\n");
  auto r = run_gpuexpand({"validate", "--output", "json", spec});
  EXPECT_EQ(r.exit_code, 1);
  auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0]["valid"], false);
  EXPECT_EQ(report[0]["errors"][0]["line"], 2);
  EXPECT_EQ(report[0]["errors"][0]["column"], 17);
  EXPECT_EQ(report[0]["errors"][0]["message"],
            "cluster.name: 'Lab' must be lowercase letters, digits and '-', at most 63");
}

TEST(Cli, ValidateMissingFile) {
  auto r = run_gpuexpand({"validate", "/nonexistent.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent.yaml"), std::string::npos) << r.err;
}

TEST(Cli, InventoryTable) {
  auto r = run_gpuexpand({"inventory", kLabSpec, "--limit", "node-[02-03]"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "NAME     ADDRESS      RACK  GROUPS\n"
            "node-02  198.18.0.12  -     -\n"
            "node-03  198.18.0.13  -     -\n"
            "2 nodes\n");
}

TEST(Cli, InventoryHostlistFoldsTheSelection) {
  auto r = run_gpuexpand({"inventory", kH200Spec, "--limit", "rack=r01,rack=r02", "--limit", "!gpu-node-013", "--hostlist"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gpu-node-[001-012,014-064]\n");
}

TEST(Cli, InventoryJson) {
  auto r = run_gpuexpand({"inventory", kH200Spec, "--limit", "gpu-node-100", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["count"], 1);
  EXPECT_EQ(doc["nodes"][0]["name"], "gpu-node-100");
  EXPECT_EQ(doc["nodes"][0]["rack"], "r04");
}

TEST(Cli, InventoryUnknownLimit) {
  auto r = run_gpuexpand({"inventory", kH200Spec, "--limit", "rack=r5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuexpand: --limit: no node is in rack 'r5' (did you mean 'r01'?)\n");
}

TEST(Cli, PlanFoldsIdenticalNodesAndSummarises) {
  auto r = run_gpuexpand({"plan", kH200Spec, "--facts", kH200Facts});
  EXPECT_EQ(r.exit_code, 1) << "one node unreachable: the plan is incomplete";
  EXPECT_EQ(r.err, "gpuexpand: the plan is incomplete: 1 unreachable, 0 failed to plan\n");
  EXPECT_NE(r.out.find("gpu-node-[001-076,078-096] (95 nodes, same plan;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    ~ package nvidia-driver: 535.129.03-1 installed, 550.90.07 wanted\n"), std::string::npos);
  EXPECT_NE(r.out.find("gpu-node-077: unreachable: connection timed out after 10 s\n"), std::string::npos);
  EXPECT_NE(r.out.find("\n128 nodes: 127 to change, 0 unchanged, 1 unreachable\n"), std::string::npos) << r.out;
}

TEST(Cli, PlanDetailedExitcode) {
  auto changes = run_gpuexpand({"plan", kLabSpec, "--facts", kLabFacts, "--detailed-exitcode"});
  EXPECT_EQ(changes.exit_code, 2) << changes.err;
  auto plain = run_gpuexpand({"plan", kLabSpec, "--facts", kLabFacts});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
}

TEST(Cli, PlanSavesAValidPlanDocument) {
  const std::string dir = make_temp_dir();
  auto r = run_gpuexpand({"plan", kLabSpec, "--facts", kLabFacts, "--out", dir + "/plan.json", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto saved = nlohmann::json::parse(read_file(dir + "/plan.json"));
  EXPECT_EQ(saved["format_version"], 1);
  EXPECT_EQ(saved["summary"]["to_change"], 6);
  EXPECT_EQ(nlohmann::json::parse(r.out)["nodes"], saved["nodes"]);
}

TEST(Cli, PlanWithBrokenFacts) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/facts.json", "{\"schema_version\": 1,\n \"nodes\": {\"node-01\": {\"schema_version\": 1, "
                                  "\"node\": \"node-01\", \"hostname\": 7}}}\n");
  auto r = run_gpuexpand({"plan", kLabSpec, "--facts", dir + "/facts.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuexpand: invalid facts file\n" + dir + "/facts.json: nodes.node-01: hostname: expected a "
                   "string, got integer 7\n");
  write_file(dir + "/bad.json", "{\"schema_version\": 1,\n  \"nodes\": {,}}\n");
  auto syntax = run_gpuexpand({"plan", kLabSpec, "--facts", dir + "/bad.json"});
  EXPECT_EQ(syntax.exit_code, 1);
  EXPECT_NE(syntax.err.find(dir + "/bad.json:2:"), std::string::npos) << syntax.err;
}

}  // namespace
}  // namespace gpuexpand::testing
