// apply's preflight: every operator-side file the selected nodes need,
// checked before any node is touched, all problems named at once.

#include <gtest/gtest.h>

#include <fstream>

#include "gpuexpand/plan/preflight.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using testing::diagnostics_text;
using testing::load_spec;

std::vector<const NodeSpec*> all_nodes(const ClusterSpec& spec) {
  std::vector<const NodeSpec*> out;
  for (const auto& n : spec.nodes) out.push_back(&n);
  return out;
}

TEST(Preflight, NamesEveryMissingFileWithTheNodesThatNeedIt) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "preflight-token") << "token\n";
  auto result = load_spec(
      "apiVersion: gpuexpand/v1\ncluster: {name: t}\n"
      "ssh: {identity_file: " + dir + "no-such-identity}\n"
      "defaults:\n  scheduler:\n    kind: slurm\n    slurm: {controller: ctl, munge_key_file: " + dir + "no-such-munge.key}\n"
      "groups:\n  k8s:\n    scheduler:\n      kind: kubernetes\n"
      "      kubernetes: {api_endpoint: 'https://api:6443', token_file: " + dir + "preflight-token, ca_cert_hash: "
      "'sha256:0000000000000000000000000000000000000000000000000000000000000000'}\n"
      "nodes:\n  - hosts: n[1-3]\n  - {name: k1, groups: [k8s]}\n");
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const auto problems = preflight_problems(*result.spec, all_nodes(*result.spec));
  ASSERT_EQ(problems.size(), 2u) << preflight_message(problems);
  EXPECT_EQ(problems[0], "ssh.identity_file: cannot read " + dir + "no-such-identity: No such file or directory");
  // k1 merges the k8s group over the defaults: its settings still name the
  // munge key, but a Kubernetes node does not need it.
  EXPECT_EQ(problems[1], "scheduler.slurm.munge_key_file: cannot read " + dir +
                             "no-such-munge.key: No such file or directory (needed by n[1-3])");
  EXPECT_EQ(preflight_message(problems).rfind("preflight: 2 problems; no node was touched:\n  ssh.", 0), 0u);

  // Only the selected nodes count.
  std::ofstream(dir + "no-such-munge.key") << "key\n";
  std::ofstream(dir + "no-such-identity") << "id\n";
  EXPECT_TRUE(preflight_problems(*result.spec, all_nodes(*result.spec)).empty());
  std::remove((dir + "no-such-munge.key").c_str());
  std::remove((dir + "no-such-identity").c_str());
  std::remove((dir + "preflight-token").c_str());
}

}  // namespace
}  // namespace gpuexpand
