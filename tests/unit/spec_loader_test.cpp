// Spec loading: every error kind with its exact text and location, merge
// precedence, derived defaults, and the examples shipped with the project.

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "gpuexpand/util/digest.hpp"

#include "test_support.hpp"

namespace gpuexpand {
namespace {

using testing::diagnostics_text;
using testing::load_spec;
using testing::minimal_spec;

TEST(SpecLoader, MinimalSpecExpandsNodesWithDefaults) {
  auto result = load_spec(minimal_spec());
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const ClusterSpec& spec = *result.spec;
  EXPECT_EQ(spec.cluster_name, "test");
  ASSERT_EQ(spec.nodes.size(), 2u);
  EXPECT_EQ(spec.nodes[0].name, "n1");
  EXPECT_EQ(spec.nodes[0].address, "10.0.0.1");
  EXPECT_EQ(spec.nodes[1].name, "n2");
  EXPECT_EQ(spec.nodes[1].address, "10.0.0.2");
  EXPECT_EQ(spec.ssh.user, "root");
  EXPECT_EQ(spec.ssh.port, 22);
  EXPECT_EQ(spec.ssh.become, "none");
  EXPECT_FALSE(spec.rollout.batch.has_value());
}

TEST(SpecLoader, AddressDefaultsToTheName) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - name: gpu-1.example.com\n");
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  EXPECT_EQ(result.spec->nodes[0].address, "gpu-1.example.com");
}

TEST(SpecLoader, YamlSyntaxErrorIsLocated) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster:\n  name: [unclosed\n");
  EXPECT_FALSE(result.spec);
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(result.diagnostics[0].where.file, "spec.yaml");
  EXPECT_GT(result.diagnostics[0].where.line, 0);
  EXPECT_EQ(result.diagnostics[0].message.rfind("YAML syntax error: ", 0), 0u) << result.diagnostics[0].message;
}

// A key that is no typo but sits under the wrong parent: the message
// names where it belongs (one level in, or one level out).
TEST(SpecLoader, AKeyUnderTheWrongParentNamesWhereItBelongs) {
  auto result = load_spec(minimal_spec("defaults:\n  os:\n    timezone: UTC\n  ntp_servers: [ntp1]\n"));
  EXPECT_EQ(testing::diagnostics_text(result),
            "spec.yaml:10:3: unknown key 'ntp_servers' in defaults (it belongs in defaults.os: check its indentation)\n");
  result = load_spec(minimal_spec("defaults:\n  os:\n    timezone: UTC\n    gpu:\n      driver_version: '550'\n"));
  EXPECT_EQ(testing::diagnostics_text(result),
            "spec.yaml:10:5: unknown key 'gpu' in defaults.os (it belongs in defaults: check its indentation)\n");
  // In a list of mappings too: a mount's key at the storage level.
  result = load_spec(minimal_spec("defaults:\n  mountpoint: /mnt/x\n"));
  EXPECT_EQ(testing::diagnostics_text(result),
            "spec.yaml:8:3: unknown key 'mountpoint' in defaults (it belongs in defaults.storage: check its indentation)\n");
  // A key whose name is near another here but which is exactly one of a
  // section one level in: its home, not the near miss ('mtu' is not 'gpu').
  result = load_spec(minimal_spec("defaults:\n  mtu: 9000\n"));
  EXPECT_EQ(testing::diagnostics_text(result),
            "spec.yaml:8:3: unknown key 'mtu' in defaults (it belongs in defaults.network: check its indentation)\n");
  // A typo still gets the typo's suggestion, not a guess.
  result = load_spec(minimal_spec("defaults:\n  os:\n    timezon: UTC\n"));
  EXPECT_EQ(testing::diagnostics_text(result),
            "spec.yaml:9:5: unknown key 'timezon' in defaults.os (did you mean 'timezone'?)\n");
}

// yaml-cpp 0.7's LoadAll loops for ever, allocating, on a document it
// cannot start (found by tests/fuzz): a located error instead, and a
// second document is still reported where it starts.
TEST(SpecLoader, ADocumentYamlCannotStartIsALocatedErrorNotAHang) {
  auto result = load_spec("# a spec\n      ,cluster: 1\n");
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(testing::diagnostics_text(result), "spec.yaml:2:7: YAML syntax error: nothing here starts a value\n");
  result = load_spec(",");
  EXPECT_EQ(testing::diagnostics_text(result), "spec.yaml:1:1: YAML syntax error: nothing here starts a value\n");
  result = load_spec(minimal_spec() + "---\ncluster: {name: two}\n");
  EXPECT_NE(testing::diagnostics_text(result).find("spec.yaml:8:1: expected one YAML document, found 2"), std::string::npos)
      << testing::diagnostics_text(result);
}

// A byte that is not UTF-8 in a value or a key: a located error, never an
// exception later (plan digests the document as JSON, which must be UTF-8).
TEST(SpecLoader, BytesThatAreNotUtf8AreLocatedErrors) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster:\n  name: test\n  description: Bench\xfemark\n"
                          "  x\xffy: 1\nnodes:\n  - {name: n1}\n");
  EXPECT_FALSE(result.spec);
  const std::string text = diagnostics_text(result);
  EXPECT_NE(text.find("spec.yaml:4:16: not UTF-8: byte 0xFE at offset 5 of 'Bench\xEF\xBF\xBDmark' (spec files are UTF-8 "
                      "text)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("spec.yaml:5:3: not UTF-8: byte 0xFF at offset 1 of 'x\xEF\xBF\xBDy'"), std::string::npos) << text;
}

TEST(SpecLoader, EmptyFile) {
  auto result = load_spec("");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml: the file is empty\n");
}

TEST(SpecLoader, TopLevelMustBeAMapping) {
  auto result = load_spec("- a\n- b\n");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:1:1: a spec must be a mapping with apiVersion, cluster and nodes\n");
}

TEST(SpecLoader, UnknownKeyWithSuggestion) {
  auto result = load_spec(minimal_spec("defaults:\n  gpu:\n    driver_verison: \"550.90.07\"\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:9:5: unknown key 'driver_verison' in defaults.gpu (did you mean 'driver_version'?)\n");
}

TEST(SpecLoader, UnknownTopLevelKeyWithoutCloseMatch) {
  auto result = load_spec(minimal_spec("zzzzzz: 1\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:7:1: unknown key 'zzzzzz'\n");
}

TEST(SpecLoader, AllUnknownKeysOfAnObjectAreReported) {
  auto result = load_spec(minimal_spec("ssh:\n  usr: root\n  prot: 22\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:8:3: unknown key 'usr' in ssh (did you mean 'user'?)\n"
            "spec.yaml:9:3: unknown key 'prot' in ssh (did you mean 'port'?)\n");
}

TEST(SpecLoader, TypeErrorSuggestsQuotingAVersion) {
  auto result = load_spec(minimal_spec("defaults:\n  gpu:\n    driver_version: 535.129\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:9:21: defaults.gpu.driver_version: expected a string, got number 535.129 "
            "(put it in quotes: \"535.129\")\n");
}

TEST(SpecLoader, TypeErrorOnQuotedNumber) {
  auto result = load_spec(minimal_spec("ssh:\n  port: \"22\"\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:8:9: ssh.port: expected an integer, got string '22'\n");
}

TEST(SpecLoader, EnumErrorWithSuggestion) {
  auto result = load_spec(minimal_spec("ssh:\n  become: sudoo\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:8:11: ssh.become: 'sudoo' is not one of none, sudo (did you mean 'sudo'?)\n");
}

TEST(SpecLoader, RangeErrors) {
  auto result = load_spec(minimal_spec("ssh:\n  port: 70000\n  parallel: 0\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:8:9: ssh.port: 70000 is above the maximum 65535\n"
            "spec.yaml:9:13: ssh.parallel: 0 is below the minimum 1\n");
}

TEST(SpecLoader, PatternErrorUsesTheSchemasWords) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster:\n  name: Bad Name\nnodes:\n  - name: n1\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:3:9: cluster.name: 'Bad Name' must be lowercase letters, digits and '-', at most 63\n");
}

TEST(SpecLoader, WrongApiVersion) {
  auto result = load_spec("apiVersion: gpuexpand/v2\ncluster: {name: t}\nnodes:\n  - name: n1\n");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:1:13: apiVersion: 'gpuexpand/v2' must be gpuexpand/v1\n");
}

TEST(SpecLoader, MissingRequiredKeys) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {}\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:1:1: missing required key 'nodes'\n"
            "spec.yaml:2:1: cluster: missing required key 'name'\n");
}

TEST(SpecLoader, DuplicateYamlKey) {
  auto result = load_spec(minimal_spec("ssh:\n  port: 22\n  port: 2222\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:9:3: duplicate key 'port' (first defined on line 8)\n");
}

TEST(SpecLoader, InvalidSysctlKeyIsNamed) {
  auto result = load_spec(minimal_spec("defaults:\n  os:\n    sysctl:\n      \"bad key\": 1\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:10:7: invalid key 'bad key' in defaults.os.sysctl\n");
}

TEST(SpecLoader, InlineSecretIsRefusedWithTheReferenceToUse) {
  auto result = load_spec(minimal_spec(
      "defaults:\n  scheduler:\n    kind: kubernetes\n    kubernetes:\n      api_endpoint: https://k:6443\n"
      "      token_file: /etc/t\n      token: abcdef\n      ca_cert_hash: sha256:" + std::string(64, 'a') + "\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:13:7: inline secret 'token' in defaults.scheduler.kubernetes is not allowed: "
            "put it in a file and give its path as 'token_file'\n");
}

TEST(SpecLoader, InlineSecretWithoutAReferenceKey) {
  auto result = load_spec(minimal_spec("ssh:\n  password: hunter2\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:8:3: inline secret 'password' in ssh is not allowed: secrets are accepted only by "
            "reference (a *_file path or *_env variable name)\n");
}

TEST(SpecLoader, InlinePrivateKeyValueIsRefused) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster:\n  name: t\n  description: |\n    -----BEGIN OPENSSH PRIVATE KEY-----\n"
      "    abc\nnodes:\n  - name: n1\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:4:16: cluster.description: this looks like an inline private key; keep keys in files and "
            "reference them by path\n");
}

TEST(SpecLoader, HostAndAddressCountMismatchNamesBoth) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: gpu-[001-004]\n    addresses: 10.0.0.[1-3]\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:5:16: nodes[0]: hosts 'gpu-[001-004]' has 4 names but addresses '10.0.0.[1-3]' has 3\n");
}

TEST(SpecLoader, MalformedHostList) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: n[5-3]\n");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:4:12: nodes[0].hosts: descending range '5-3' in host list 'n[5-3]'\n");
}

TEST(SpecLoader, DuplicateNodeNamesAcrossEntriesAreFolded) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: n[01-10]\n  - hosts: n[08-12]\n");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:5:12: duplicate node names n[08-10] (already in nodes[0] on line 4)\n");
}

TEST(SpecLoader, DuplicateAddress) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - name: a\n    address: 10.0.0.1\n"
      "  - name: b\n    address: 10.0.0.1\n");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:7:14: duplicate address 10.0.0.1 (already in nodes[0] on line 4)\n");
}

TEST(SpecLoader, DuplicateWithinOneHostList) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: n[1-2],n2\n");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:4:12: duplicate node name n2 within this entry\n");
}

TEST(SpecLoader, HostsAndNameTogether) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: n[1-2]\n    name: x\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:5:5: nodes[0]: give either 'hosts' (a host list) or 'name' (one node), not both\n");
}

TEST(SpecLoader, AddressWithHosts) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: n[1-2]\n    address: x\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:5:5: nodes[0]: 'address' is for one node; with 'hosts' use 'addresses'\n");
}

TEST(SpecLoader, EntryWithoutNodes) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - rack: r1\n");
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:4:5: nodes[0]: missing 'hosts' (a host list) or 'name' (one node)\n");
}

TEST(SpecLoader, UnknownGroupWithSuggestion) {
  auto result = load_spec(minimal_spec("    groups: [h20]\ngroups:\n  h200: {}\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:7:14: unknown group 'h20' (did you mean 'h200'?)\n");
}

TEST(SpecLoader, UnknownGroupWithoutGroupsSection) {
  auto result = load_spec(minimal_spec("    groups: [h200]\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:7:14: unknown group 'h200': the spec has no 'groups' section\n");
}

TEST(SpecLoader, RackNeedsDeclarationOnlyWhenRacksExist) {
  EXPECT_TRUE(load_spec(minimal_spec("    rack: r01\n")).spec);
  auto result = load_spec(minimal_spec("    rack: r1\nracks:\n  r01: {}\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:7:11: unknown rack 'r1' (did you mean 'r01'?)\n");
}

TEST(SpecLoader, MountpointCollisionPointsAtTheSecondMount) {
  auto result = load_spec(minimal_spec(
      "defaults:\n  storage:\n"
      "    - {name: a, type: nfs, source: 's:/a', mountpoint: /data}\n"
      "    - {name: b, type: nfs, source: 's:/b', mountpoint: /data/}\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:10:56: mountpoint '/data/' is already used by storage 'a'\n");
}

TEST(SpecLoader, DuplicateStorageName) {
  auto result = load_spec(minimal_spec(
      "defaults:\n  storage:\n"
      "    - {name: a, type: nfs, source: 's:/a', mountpoint: /a}\n"
      "    - {name: a, type: nfs, source: 's:/b', mountpoint: /b}\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:10:14: storage name 'a' is already used by storage[0]\n");
}

TEST(SpecLoader, SchedulerKindWithoutItsSection) {
  auto result = load_spec(minimal_spec("defaults:\n  scheduler:\n    kind: slurm\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:9:11: scheduler.kind is 'slurm' but no scheduler.slurm section applies to these nodes\n");
}

TEST(SpecLoader, AllErrorsOfAFileAtOnce) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\nssh:\n  becme: sudo\n"
      "nodes:\n  - hosts: n[1-\n  - name: x\n    groups: [nope]\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:4:3: unknown key 'becme' in ssh (did you mean 'become'?)\n"
            "spec.yaml:6:12: nodes[0].hosts: unterminated '[' in host list 'n[1-'\n"
            "spec.yaml:8:14: unknown group 'nope': the spec has no 'groups' section\n");
}

// defaults -> rack -> groups (in the entry's order) -> the entry itself.
TEST(SpecLoader, MergePrecedence) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\n"
      "defaults:\n  os: {timezone: UTC, packages: [a, b], sysctl: {vm.swappiness: 60, net.core.rmem_max: 1}}\n"
      "  gpu: {expected_count: 1, expected_model: base}\n"
      "racks:\n  r1:\n    os: {timezone: Europe/Berlin, sysctl: {vm.swappiness: 10}}\n    gpu: {expected_count: 2}\n"
      "groups:\n  first:\n    gpu: {expected_count: 4, expected_model: first}\n"
      "  second:\n    gpu: {expected_count: 8}\n    os: {packages: [c]}\n"
      "nodes:\n  - hosts: n[1-2]\n    rack: r1\n    groups: [first, second]\n    gpu: {expected_model: own}\n"
      "  - name: plain\n");
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto& s = *result.spec->nodes[0].settings;
  EXPECT_EQ(s["os"]["timezone"], "Europe/Berlin");                        // rack over defaults
  EXPECT_EQ(s["os"]["sysctl"]["vm.swappiness"], 10);                      // maps merge key by key
  EXPECT_EQ(s["os"]["sysctl"]["net.core.rmem_max"], 1);                   // untouched keys survive
  EXPECT_EQ(s["os"]["packages"], nlohmann::json::array({"c"}));           // lists replace
  EXPECT_EQ(s["gpu"]["expected_count"], 8);                               // later group wins
  EXPECT_EQ(s["gpu"]["expected_model"], "own");                           // the entry wins
  const auto& plain = *result.spec->nodes[2].settings;
  EXPECT_EQ(plain["os"]["timezone"], "UTC");
  EXPECT_EQ(plain["gpu"]["expected_model"], "base");
  EXPECT_EQ(result.spec->nodes[0].settings, result.spec->nodes[1].settings) << "one entry shares one settings object";
}

TEST(SpecLoader, NullRemovesAnInheritedKey) {
  auto result = load_spec(minimal_spec("    gpu: {cuda_version: null}\ndefaults:\n  gpu: {cuda_version: \"12.4\", "
                                       "driver_version: \"550.90.07\"}\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto& gpu = (*result.spec->nodes[0].settings)["gpu"];
  EXPECT_FALSE(gpu.contains("cuda_version"));
  EXPECT_EQ(gpu["driver_version"], "550.90.07");
}

TEST(SpecLoader, ErrorFromAGroupPointsIntoTheGroup) {
  auto result = load_spec(minimal_spec(
      "    groups: [g]\ngroups:\n  g:\n    storage:\n      - {name: a, type: bind, source: /x, mountpoint: /m}\n"
      "      - {name: b, type: bind, source: /y, mountpoint: /m}\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:12:55: mountpoint '/m' is already used by storage 'a'\n");
}

TEST(SpecLoader, InterfacesInheritTheNetworkMtu) {
  auto result = load_spec(minimal_spec(
      "defaults:\n  network:\n    mtu: 9000\n    compute_interfaces: [{name: eth1}, {name: eth2, mtu: 4092}]\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto& interfaces = (*result.spec->nodes[0].settings)["network"]["compute_interfaces"];
  EXPECT_EQ(interfaces[0]["mtu"], 9000);
  EXPECT_EQ(interfaces[1]["mtu"], 4092);
}

TEST(SpecLoader, MountOptionsBecomeAList) {
  auto result = load_spec(minimal_spec(
      "defaults:\n  storage:\n    - {name: a, type: nfs, source: 's:/a', mountpoint: /a, options: 'ro,noatime'}\n"
      "    - {name: b, type: nfs, source: 's:/b', mountpoint: /b}\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto& storage = (*result.spec->nodes[0].settings)["storage"];
  EXPECT_EQ(storage[0]["options"], nlohmann::json::array({"ro", "noatime"}));
  EXPECT_EQ(storage[1]["options"], nlohmann::json::array({"defaults"}));
}

TEST(SpecLoader, YamlAnchorsAndMergeKeys) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\ngroups:\n  a:\n    os: &os {timezone: UTC, packages: [x]}\n"
      "  b:\n    os:\n      <<: *os\n      timezone: Europe/Paris\nnodes:\n  - name: n1\n    groups: [b]\n");
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto& os = (*result.spec->nodes[0].settings)["os"];
  EXPECT_EQ(os["timezone"], "Europe/Paris");
  EXPECT_EQ(os["packages"], nlohmann::json::array({"x"}));
}

TEST(SpecLoader, RolloutPercentages) {
  auto result = load_spec(minimal_spec("rollout:\n  batch: 10%\n  max_fail: 2\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  EXPECT_EQ(result.spec->rollout.batch->resolve(5), 1u) << "10% of 5 rounds up";
  EXPECT_EQ(result.spec->rollout.batch->resolve(128), 13u);
  EXPECT_EQ(result.spec->rollout.max_fail->resolve(128), 2u);
  auto bad = load_spec(minimal_spec("rollout:\n  batch: ten\n"));
  EXPECT_EQ(diagnostics_text(bad), "spec.yaml:8:10: rollout.batch: 'ten' must be a count or a percentage from 1% to 100% like \"10%\"\n");
  auto over = load_spec(minimal_spec("rollout:\n  max_fail: 150%\n"));
  EXPECT_EQ(diagnostics_text(over),
            "spec.yaml:8:13: rollout.max_fail: '150%' must be a count or a percentage from 0% to 100% like \"10%\"\n");
  auto zero = load_spec(minimal_spec("rollout:\n  batch: 0\n"));
  EXPECT_EQ(diagnostics_text(zero), "spec.yaml:8:10: rollout.batch: 0 would never start a node; use at least 1\n");
}

TEST(SpecLoader, ExamplesValidate) {
  for (const char* file : {"examples/lab-rack.yaml", "examples/h200-expansion.yaml", "examples/k8s-rack.yaml",
                           "examples/h100-roce.yaml"}) {
    auto result = load_spec_file(testing::source_path(file), testing::schema("cluster"));
    EXPECT_TRUE(result.spec) << file << "\n" << diagnostics_text(result);
  }
  auto h200 = load_spec_file(testing::source_path("examples/h200-expansion.yaml"), testing::schema("cluster"));
  ASSERT_TRUE(h200.spec);
  EXPECT_EQ(h200.spec->nodes.size(), 128u);
}

TEST(SpecLoader, RequiredKeysAreCheckedAfterMerging) {
  // A rack that only changes the weight does not repeat the controller.
  auto ok = load_spec(minimal_spec(
      "    rack: r1\nracks:\n  r1:\n    scheduler: {slurm: {weight: 20}}\n"
      "defaults:\n  scheduler: {kind: slurm, slurm: {controller: ctl}}\n"));
  ASSERT_TRUE(ok.spec) << diagnostics_text(ok);
  EXPECT_EQ((*ok.spec->nodes[0].settings)["scheduler"]["slurm"]["controller"], "ctl");
  EXPECT_EQ((*ok.spec->nodes[0].settings)["scheduler"]["slurm"]["weight"], 20);
  auto missing = load_spec(minimal_spec("defaults:\n  scheduler: {kind: slurm, slurm: {weight: 20}}\n"));
  EXPECT_EQ(diagnostics_text(missing),
            "spec.yaml:8:28: scheduler.slurm: missing required key 'controller' (after merging defaults, rack, "
            "groups and the node entry)\n");
}

TEST(SpecLoader, QuoteHintShowsTheTextAsWritten) {
  auto result = load_spec(minimal_spec("defaults:\n  gpu:\n    cuda_version: 12.10\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:9:19: defaults.gpu.cuda_version: expected a string, got number 12.10 (put it in quotes: "
            "\"12.10\")\n");
}

TEST(SpecLoader, EmptyValueSaysNothingWasGiven) {
  auto result = load_spec(minimal_spec("ssh:\n"));
  EXPECT_EQ(diagnostics_text(result), "spec.yaml:7:1: ssh: expected a mapping, got nothing\n");
}

// Values that once ended in "internal error" (issue 17): a string where a
// boolean belongs, in a node's scheduler.slurm section, is a located type
// error, also beside the rules that compare configless with false.
TEST(SpecLoader, AStringWhereABooleanBelongsIsLocated) {
  auto result = load_spec(minimal_spec(
      "    scheduler:\n      kind: slurm\n      slurm:\n        controller: ctl\n        configless: true ~\n"));
  EXPECT_FALSE(result.spec);
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:11:21: nodes[0].scheduler.slurm.configless: expected a boolean, got string 'true ~'\n");
  result = load_spec(minimal_spec(
      "    scheduler:\n      kind: slurm\n      slurm:\n        controller: ctl\n        mode: static\n"
      "        cpus: 64\n        real_memory_mb: 1000\n        gres: ['gpu:h100:8', 'nic:2']\n"
      "        configless: true ~\n"));
  EXPECT_FALSE(result.spec);
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:15:21: nodes[0].scheduler.slurm.configless: expected a boolean, got string 'true ~'\n");
}

// An empty `mode:` (null): in defaults, where nothing is inherited, a
// located error that says nothing was given; in a node entry, null removes
// what the entry inherits (see NullRemovesAnInheritedKey), so the mode is
// the default again. Never an internal error.
TEST(SpecLoader, AnEmptySlurmModeIsLocatedOrRemovesTheInheritedOne) {
  auto in_defaults = load_spec(minimal_spec(
      "defaults:\n  scheduler:\n    kind: slurm\n    slurm:\n      controller: ctl\n      mode:\n"));
  EXPECT_FALSE(in_defaults.spec);
  EXPECT_EQ(diagnostics_text(in_defaults),
            "spec.yaml:12:7: defaults.scheduler.slurm.mode: expected one of dynamic, static, got nothing\n");
  auto in_node = load_spec(minimal_spec(
      "    scheduler:\n      kind: slurm\n      slurm:\n        controller: ctl\n        mode:\n"
      "defaults:\n  scheduler:\n    slurm: {controller: ctl, mode: static, cpus: 8, real_memory_mb: 1000}\n"));
  ASSERT_TRUE(in_node.spec) << diagnostics_text(in_node);
  const auto& slurm = (*in_node.spec->nodes[0].settings)["scheduler"]["slurm"];
  EXPECT_FALSE(slurm.contains("mode")) << slurm.dump();
  EXPECT_EQ(slurm["cpus"], 8);
  auto nothing_inherited = load_spec(minimal_spec(
      "    scheduler:\n      kind: slurm\n      slurm:\n        controller: ctl\n        mode:\n"));
  ASSERT_TRUE(nothing_inherited.spec) << diagnostics_text(nothing_inherited);
  EXPECT_FALSE((*nothing_inherited.spec->nodes[0].settings)["scheduler"]["slurm"].contains("mode"));
}

TEST(SpecLoader, ExpandedNamesMustBeHostNames) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: gpu_node[1-2]\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:4:12: nodes[0].hosts: 'gpu_node1' is not a valid host name (letters, digits, '.', '-'; "
            "IPv6 also ':')\n");
}

TEST(SpecLoader, DuplicateAddressesArePlural) {
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: a[1-2]\n    addresses: 10.0.0.[1-2]\n"
      "  - hosts: b[1-2]\n    addresses: 10.0.0.[1-2]\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:7:16: duplicate addresses 10.0.0.[1-2] (already in nodes[0] on line 4)\n");
}

TEST(SpecLoader, DirectoriesStayInsideTheMount) {
  auto result = load_spec(minimal_spec(
      "defaults:\n  storage:\n    - {name: a, type: bind, source: /x, mountpoint: /a, directories: [ok/x, ../etc]}\n"));
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:9:77: defaults.storage[0].directories[1]: '../etc' must be a relative path inside the mount "
            "(no '..')\n");
}

TEST(SpecLoader, RackAndGroupsAreCheckedEvenWhenTheHostListIsBroken) {
  auto result = load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nnodes:\n  - hosts: n[1-\n    groups: [x]\n");
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:4:12: nodes[0].hosts: unterminated '[' in host list 'n[1-'\n"
            "spec.yaml:5:14: unknown group 'x': the spec has no 'groups' section\n");
}

// The munge key stays on the operator's machine: the settings carry its
// digest for the plan, never its bytes; an unreadable key leaves no digest.
TEST(SpecLoader, SecretFilesAreRecordedByDigest) {
  const std::string key = "/tmp/gpx-spec-munge-" + std::to_string(::getpid()) + ".key";
  std::ofstream(key, std::ios::binary) << "munge-secret";
  auto result = load_spec(minimal_spec("defaults:\n  scheduler:\n    kind: slurm\n    slurm: {controller: ctl, "
                                       "munge_key_file: " + key + "}\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto& slurm = (*result.spec->nodes[0].settings)["scheduler"]["slurm"];
  EXPECT_EQ(slurm["munge_key_sha256"], sha256_hex("munge-secret"));
  EXPECT_EQ(slurm.dump().find("munge-secret"), std::string::npos);
  // The key is part of the spec's identity: a saved plan made with another
  // key is refused by `apply plan.json`.
  const std::string before = spec_digest(*result.spec);
  std::ofstream(key, std::ios::binary) << "another-key";
  auto changed = load_spec(minimal_spec("defaults:\n  scheduler:\n    kind: slurm\n    slurm: {controller: ctl, "
                                        "munge_key_file: " + key + "}\n"));
  ASSERT_TRUE(changed.spec);
  EXPECT_NE(spec_digest(*changed.spec), before);
  ::unlink(key.c_str());
  auto unreadable = load_spec(minimal_spec("defaults:\n  scheduler:\n    kind: slurm\n    slurm: {controller: ctl, "
                                           "munge_key_file: " + key + "}\n"));
  ASSERT_TRUE(unreadable.spec) << diagnostics_text(unreadable);
  EXPECT_FALSE((*unreadable.spec->nodes[0].settings)["scheduler"]["slurm"].contains("munge_key_sha256"));
}

// The NCCL topology XML: copied from the operator's machine (by digest,
// like every local file), and NCCL_TOPO_FILE points at it in nccl.conf.
TEST(SpecLoader, NcclTopologySourceAndEnv) {
  const std::string topo = "/tmp/gpx-topo-" + std::to_string(::getpid()) + ".xml";
  std::ofstream(topo) << "<system/>";
  auto result = load_spec(minimal_spec("defaults:\n  network:\n    nccl: {topology_file: /etc/nccl/topo.xml, "
                                       "topology_source: " + topo + ", env: {NCCL_IB_HCA: mlx5}}\n"));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto& nccl = (*result.spec->nodes[0].settings)["network"]["nccl"];
  EXPECT_EQ(nccl["env"], (nlohmann::json{{"NCCL_IB_HCA", "mlx5"}, {"NCCL_TOPO_FILE", "/etc/nccl/topo.xml"}}));
  EXPECT_EQ(nccl["topology_source_sha256"], sha256_hex("<system/>"));
  ::unlink(topo.c_str());
  auto lonely = load_spec(minimal_spec("defaults:\n  network:\n    nccl: {topology_source: /x.xml}\n"));
  EXPECT_EQ(diagnostics_text(lonely),
            "spec.yaml:9:29: network.nccl.topology_source needs network.nccl.topology_file: where to put it on the "
            "node\n");
}

TEST(SpecLoader, MissingFile) {
  auto result = load_spec_file("/nonexistent/spec.yaml", testing::schema("cluster"));
  EXPECT_EQ(diagnostics_text(result), "/nonexistent/spec.yaml: cannot read the spec: No such file or directory\n");
}

}  // namespace
}  // namespace gpuexpand

namespace gpuexpand {
namespace {

// A relative path in a spec names a file beside the spec, wherever
// gpuexpand runs from; '~/' and absolute paths are left as written.
TEST(SpecLoader, RelativePathsAreBesideTheSpec) {
  auto result = testing::load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\n"
                                   "ssh: {identity_file: keys/id_ed25519, known_hosts: ~/.ssh/known_hosts}\n"
                                   "defaults:\n"
                                   "  scheduler:\n    kind: slurm\n"
                                   "    slurm: {controller: ctl, munge_key_file: secrets/munge.key}\n"
                                   "  network: {nccl: {topology_source: /etc/topo.xml, topology_file: /etc/nccl/topo.xml}}\n"
                                   "nodes:\n  - name: n1\n",
                                   "/srv/specs/rack7/spec.yaml");
  ASSERT_TRUE(result.spec) << testing::diagnostics_text(result);
  EXPECT_EQ(result.spec->ssh.identity_file, "/srv/specs/rack7/keys/id_ed25519");
  EXPECT_EQ(result.spec->ssh.known_hosts, "~/.ssh/known_hosts");
  const auto& settings = *result.spec->nodes[0].settings;
  EXPECT_EQ(settings["scheduler"]["slurm"]["munge_key_file"], "/srv/specs/rack7/secrets/munge.key");
  EXPECT_EQ(settings["network"]["nccl"]["topology_source"], "/etc/topo.xml");
  // A spec named without a directory: relative to where gpuexpand runs, as before.
  auto here = testing::load_spec("apiVersion: gpuexpand/v1\ncluster: {name: t}\nssh: {identity_file: id}\nnodes:\n  - name: n1\n");
  ASSERT_TRUE(here.spec);
  EXPECT_EQ(here.spec->ssh.identity_file, "id");
}

}  // namespace
}  // namespace gpuexpand
