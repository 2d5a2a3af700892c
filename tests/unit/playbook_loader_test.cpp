// Playbook loading: the shipped playbooks load in phase order; broken ones
// are refused with located, exact messages.

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace gpuexpand {
namespace {

std::string load_errors(const std::string& yaml) {
  std::vector<Diagnostic> diagnostics;
  auto phase = load_playbook_text(yaml, "pb.yaml", testing::schema("playbook"), diagnostics);
  std::string out;
  for (const auto& d : diagnostics) out += d.to_string() + "\n";
  if (phase && !out.empty()) out += "(and a phase was returned)\n";
  return out;
}

const std::string kHeader = "phase: os-init\norder: 1\nsteps:\n";

TEST(PlaybookLoader, ShippedPlaybooksLoadInPhaseOrder) {
  const PlaybookSet& set = testing::playbooks();
  std::vector<std::string> names;
  for (const auto& phase : set.phases) names.push_back(phase.name);
  EXPECT_EQ(names, phase_order());
  EXPECT_EQ(set.digest.size(), 64u);
  // The name resolves before it becomes the hostname, both before anything
  // else (each sudo looks the hostname up), then the sources before any package.
  EXPECT_EQ(set.phases[0].steps[0].id, "hosts-entry");
  EXPECT_EQ(set.phases[0].steps[1].id, "hostname");
  EXPECT_EQ(set.phases[0].steps[2].id, "package-sources");
}

TEST(PlaybookLoader, EmbeddedCopiesMatchTheSourceTree) {
  std::vector<Diagnostic> diagnostics;
  auto embedded = load_playbooks("", testing::schema("playbook"), diagnostics);
  ASSERT_TRUE(embedded);
  EXPECT_EQ(embedded->digest, testing::playbooks().digest) << "rebuild: the binary embeds stale playbooks";
}

TEST(PlaybookLoader, ValidStep) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostname, name: '{{ node.name }}'}\n"), "");
}

TEST(PlaybookLoader, UnknownType) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostnme, name: x}\n"),
            "pb.yaml:4:19: steps[0].type: 'hostnme' is not one of hostname, timezone, file, copy, line, repository, package, "
            "service, sysctl, kernel_module, mount, address, directory, command, reboot, acceptance (did you mean 'hostname'?)\n");
}

TEST(PlaybookLoader, ParameterOfAnotherType) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostname, name: x, path: /etc/hostname}\n"),
            "pb.yaml:4:38: step 'h': 'path' is not a parameter of type 'hostname'\n");
}

TEST(PlaybookLoader, AVariantIsChosenByItsCondition) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostname, name: x, variant: Debian 13, when: \"facts.os.version_id >= '13'\"}\n"), "");
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostname, name: x, variant: Debian 13}\n"),
            "pb.yaml:4:47: step 'h': a variant is chosen by its 'when:' condition, and it has none\n");
}

TEST(PlaybookLoader, MissingRequiredParameter) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: f, type: file, path: /x}\n"),
            "pb.yaml:4:5: step 'f' of type 'file' needs 'content'\n");
}

TEST(PlaybookLoader, CommandNeedsCheckAndRollback) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: c, type: command, run: 'true'}\n"),
            "pb.yaml:4:5: step 'c' of type 'command' needs 'check'\n"
            "pb.yaml:4:5: step 'c' of type 'command' needs 'rollback'\n");
}

TEST(PlaybookLoader, BadConditionIsLocated) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostname, name: x, when: 'a && b'}\n"),
            "pb.yaml:4:44: unexpected '&&' at offset 2 in condition 'a && b' (use 'and')\n");
}

TEST(PlaybookLoader, UnknownVariableRoot) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostname, name: '{{ nod.name }}'}\n"),
            "pb.yaml:4:35: unknown variable 'nod.name' (did you mean 'node'?)\n");
}

TEST(PlaybookLoader, PlaceholderInsideShellQuotesIsRefused) {
  const std::string errors =
      load_errors(kHeader + "  - {id: c, type: command, run: \"echo '{{ node.name }}'\", check: 'true', rollback: 'true'}\n");
  EXPECT_NE(errors.find("pb.yaml:4:33: "), std::string::npos) << errors;
}

// Shell shared between steps: pieces under `shell:` with YAML anchors, a
// script as a list of pieces and its own lines, joined line by line into
// one text before templates are checked (the shell tracker sees it whole).
TEST(PlaybookLoader, ScriptsFromSharedPieces) {
  const std::string yaml =
      "phase: os-init\norder: 1\n"
      "shell:\n  wait_up: &wait_up |\n    up() { sleep 1; }\n  lock: &lock flock 9\n"
      "steps:\n"
      "  - id: c\n    type: command\n    check: test -e /x\n"
      "    run:\n      - N={{ node.name }}\n      - *wait_up\n      - *lock\n      - |\n        up && touch /x\n"
      "    rollback: [*lock, rm -f /x]\n";
  std::vector<Diagnostic> diagnostics;
  auto phase = load_playbook_text(yaml, "pb.yaml", testing::schema("playbook"), diagnostics);
  ASSERT_TRUE(phase) << (diagnostics.empty() ? "" : diagnostics.front().to_string());
  EXPECT_EQ(phase->steps[0].params["run"], "N={{ node.name }}\nup() { sleep 1; }\nflock 9\nup && touch /x\n");
  EXPECT_EQ(phase->steps[0].params["rollback"], "flock 9\nrm -f /x\n");

  // A piece that opens a quote the next piece's placeholder sits in: refused, as in one text.
  EXPECT_NE(load_errors("phase: os-init\norder: 1\nsteps:\n  - id: c\n    type: command\n    check: 'true'\n"
                        "    run: ['echo \"x', '{{ node.name }}\"']\n    rollback: 'true'\n")
                .find("inside double quotes"),
            std::string::npos);
  // Only scripts may be lists of pieces.
  EXPECT_NE(load_errors(kHeader + "  - {id: h, type: hostname, name: [a, b]}\n"), "");
}

TEST(PlaybookLoader, DuplicateStepIds) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: h, type: hostname, name: x}\n  - {id: h, type: timezone, zone: UTC}\n"),
            "pb.yaml:5:10: step id 'h' is used twice in this phase\n");
}

TEST(PlaybookLoader, RestartOnMustNameAnEarlierStep) {
  EXPECT_EQ(load_errors(kHeader + "  - {id: conf, type: file, path: /x, content: y}\n"
                                  "  - {id: s, type: service, name: x, restart_on: [cnf, later]}\n"
                                  "  - {id: later, type: hostname, name: x}\n"),
            "pb.yaml:5:50: 'cnf' is not a step before this one (did you mean 'conf'?)\n"
            "pb.yaml:5:55: 'later' is not a step before this one\n");
}

TEST(PlaybookLoader, PhaseOrderIsFixed) {
  EXPECT_EQ(load_errors("phase: rdma\norder: 2\nsteps: []\n"),
            "pb.yaml:2:8: phase 'rdma' must have order 3 (the fixed phase order)\n");
}

}  // namespace
}  // namespace gpuexpand
