// `facts` and live `plan` end to end: the built binary, a spec pointing at
// a real sshd on 127.0.0.1, strict host keys.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../unit/local_sshd.hpp"
#include "cli_support.hpp"

namespace gpuexpand::testing {
namespace {

class CliSsh : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sshd_ = new LocalSshd();
    skip_ = new std::string(sshd_->start());
  }
  static void TearDownTestSuite() {
    delete sshd_;
    delete skip_;
  }
  void SetUp() override {
    if (!skip_->empty()) GTEST_SKIP() << *skip_;
  }

  // Three nodes on the local sshd and, optionally, one on an address
  // where nothing listens (127.0.0.2: loopback, refused).
  std::string write_spec(bool with_unreachable, const std::string& known_hosts) {
    const std::string dir = make_temp_dir();
    std::string yaml = "apiVersion: gpuexpand/v1\ncluster: {name: local}\nssh:\n  user: root\n  port: " +
                       std::to_string(sshd_->port()) + "\n  identity_file: " + sshd_->client_key() +
                       "\n  known_hosts: " + known_hosts +
                       "\n  connect_timeout: 5\ndefaults:\n  os: {timezone: UTC, packages: [bash]}\n"
                       "nodes:\n  - {name: n1, address: 127.0.0.1}\n";
    // The same sshd under three names: each node gets its own session.
    yaml += "  - {name: n2, address: localhost}\n";
    if (with_unreachable) yaml += "  - {name: down, address: 127.0.0.2}\n";
    write_file(dir + "/spec.yaml", yaml);
    return dir + "/spec.yaml";
  }

  std::string known_hosts_for_both() {
    const std::string path = sshd_->write_known_hosts("cli_known_hosts");
    std::ofstream(path, std::ios::app) << "[localhost]:" << sshd_->port() << " " << sshd_->host_public_key() << "\n";
    return path;
  }

  static LocalSshd* sshd_;
  static std::string* skip_;
};

LocalSshd* CliSsh::sshd_ = nullptr;
std::string* CliSsh::skip_ = nullptr;

TEST_F(CliSsh, FactsFromLiveNodes) {
  const std::string spec = write_spec(false, known_hosts_for_both());
  const std::string saved = make_temp_dir() + "/facts.json";
  const std::string state = make_temp_dir() + "/state.db";
  auto r = run_gpuexpand({"facts", spec, "-o", "json", "--save", saved, "--state", state});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The probes are in the audit trail of a lock-free "facts" run.
  auto audit = run_gpuexpand({"status", "--run", "1", "--state", state});
  EXPECT_NE(audit.out.find("Run 1: facts "), std::string::npos) << audit.out;
  EXPECT_NE(audit.out.find("Remote commands (2):\n"), std::string::npos) << audit.out;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["nodes"].size(), 2u);
  for (const char* node : {"n1", "n2"}) {
    const auto& f = doc["nodes"][node];
    EXPECT_EQ(f["node"], node);
    EXPECT_EQ(f["os"]["family"], "debian");
    EXPECT_TRUE(f["packages"]["bash"].is_string()) << f["packages"].dump();
  }
  EXPECT_EQ(nlohmann::json::parse(read_file(saved)), doc);
}

TEST_F(CliSsh, UnreachableNodeIsNamedAndTheOthersAnswer) {
  const std::string spec = write_spec(true, known_hosts_for_both());
  auto r = run_gpuexpand({"facts", spec});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\nn1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unreachable: down (127.0.0.2): connection refused port " + std::to_string(sshd_->port())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("3 nodes: 2 answered, 1 unreachable"), std::string::npos) << r.out;
}

// verify runs the checks on live nodes (this machine has no GPU: the gpu
// check fails with its reason), names the unreachable one, keeps the results.
TEST_F(CliSsh, VerifyReportsEachCheckAndKeepsTheResults) {
  std::string spec_text = read_file(write_spec(true, known_hosts_for_both()));
  spec_text.replace(spec_text.find("defaults:\n"), 10,
                    "defaults:\n  gpu: {expected_count: 8}\n  validation: {checks: [gpu]}\n");
  const std::string dir = make_temp_dir();
  write_file(dir + "/spec.yaml", spec_text);
  auto r = run_gpuexpand({"verify", dir + "/spec.yaml", "--state", dir + "/state.db"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("n1  FAIL  gpu ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("): no GPU found (nvidia-smi missing or failing)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("down  UNREACHABLE: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 nodes: 0 passed, 2 failed, 1 unreachable"), std::string::npos) << r.out;
  auto status = run_gpuexpand({"status", "--state", dir + "/state.db"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("    FAIL gpu: no GPU found (nvidia-smi missing or failing)"), std::string::npos)
      << status.out;
}

TEST_F(CliSsh, UnknownHostKeyIsRefusedUnlessAccepted) {
  const std::string dir = make_temp_dir();
  const std::string spec = write_spec(false, dir + "/known_hosts");
  auto refused = run_gpuexpand({"facts", spec, "--limit", "n1"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.out.find("is not in " + dir + "/known_hosts"), std::string::npos) << refused.out;
  auto accepted = run_gpuexpand({"facts", spec, "--limit", "n1", "--accept-new-host-keys"});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.out << accepted.err;
  EXPECT_NE(read_file(dir + "/known_hosts").find(sshd_->host_public_key()), std::string::npos);
}

TEST_F(CliSsh, FactsThroughABastion) {
  // The bastion is the same sshd; targets are reached over direct-tcpip
  // channels through its one session.
  const std::string dir = make_temp_dir();
  const std::string spec = dir + "/spec.yaml";
  write_file(spec, "apiVersion: gpuexpand/v1\ncluster: {name: local}\nssh:\n  port: " + std::to_string(sshd_->port()) +
                       "\n  identity_file: " + sshd_->client_key() + "\n  known_hosts: " + known_hosts_for_both() +
                       "\n  bastion: root@127.0.0.1:" + std::to_string(sshd_->port()) +
                       "\nnodes:\n  - {name: n1, address: 127.0.0.1}\n  - {name: n2, address: localhost}\n");
  auto r = run_gpuexpand({"facts", spec, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["nodes"]["n1"]["os"]["family"], "debian");
  EXPECT_EQ(doc["nodes"]["n2"]["os"]["family"], "debian");
}

TEST_F(CliSsh, LivePlan) {
  const std::string spec = write_spec(false, known_hosts_for_both());
  const std::string saved = make_temp_dir() + "/facts.json";
  auto r = run_gpuexpand({"plan", spec, "--save-facts", saved, "--detailed-exitcode"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("2 nodes: 2 to change, 0 unchanged, 0 unreachable"), std::string::npos) << r.out;
  // The saved facts reproduce the same plan offline.
  auto offline = run_gpuexpand({"plan", spec, "--facts", saved, "--detailed-exitcode"});
  EXPECT_EQ(offline.exit_code, 2);
  EXPECT_EQ(offline.out, r.out);
}

// A key's passphrase (from passphrase_env) and a Kubernetes join token
// (token_file) appear nowhere a run writes, at -vv with a debug log file:
// stdout, stderr, the log, the saved facts, the plan (text, --diff, JSON)
// and the state store's file (docs/security.md, "Secrets"); two nodes, so
// the key goes through the run's own ssh-agent (private_agent.hpp). The lab's
// scheduler test does the same for the munge key and the SSH private key.
TEST_F(CliSsh, AKeyPassphraseAndAJoinTokenAppearNowhere) {
  const std::string dir = make_temp_dir();
  const std::string passphrase = "gx-passphrase-5b1e9d04c7";
  const std::string token = "q7w8e9.r4t5y6u7i8o9p0a1";
  const std::string key = dir + "/encrypted_ed25519";
  ASSERT_EQ(shell("ssh-keygen -q -t ed25519 -N '" + passphrase + "' -f " + key), 0);
  ASSERT_EQ(shell("cat " + key + ".pub >> " + sshd_->dir() + "/authorized_keys"), 0);
  write_file(dir + "/join-token", token + "\n");
  ::setenv("GX_TEST_KEY_PASSPHRASE", passphrase.c_str(), 1);
  write_file(dir + "/spec.yaml",
             "apiVersion: gpuexpand/v1\ncluster: {name: local}\nssh:\n  user: root\n  port: " + std::to_string(sshd_->port()) +
                 "\n  identity_file: " + key + "\n  passphrase_env: GX_TEST_KEY_PASSPHRASE\n  known_hosts: " +
                 known_hosts_for_both() +
                 "\n  connect_timeout: 5\ndefaults:\n  os: {timezone: UTC, packages: [bash]}\n"
                 "  scheduler:\n    kind: kubernetes\n    kubernetes:\n      api_endpoint: https://k8s-api.example.com:6443\n"
                 "      token_file: " + dir + "/join-token\n"
                 "      ca_cert_hash: sha256:5038ca523182bf42d0da9b8a962d7ce03df0eb42479ba0346b7aa24b80c6f810\n"
                 "nodes:\n  - {name: n1, address: 127.0.0.1}\n  - {name: n2, address: localhost}\n");
  const std::string spec = dir + "/spec.yaml", state = dir + "/state.db";
  std::string written;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-vv", "--log-file", dir + "/debug.log", "facts", spec, "--save", dir + "/facts.json"},
        {"-vv", "--log-file", dir + "/debug.log", "plan", spec, "--diff", "--state", state, "--out", dir + "/plan.json"},
        {"-vv", "plan", spec, "--output", "json", "--state", state},
        {"-vv", "audit", spec, "--state", state, "--output", "json"}}) {
    const auto r = run_gpuexpand(args);
    std::string line;
    for (const auto& arg : args) line += arg + " ";
    EXPECT_EQ(r.exit_code, 0) << line << ": " << r.out << r.err;
    written += r.out + r.err;
  }
  for (const std::string file : {"debug.log", "facts.json", "plan.json", "state.db"}) {
    ASSERT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
    written += read_file(dir + "/" + file);
  }
  // Two logins: the key was decrypted once, by the run's own ssh-agent,
  // which got the passphrase without writing it anywhere either.
  EXPECT_NE(written.find("encrypted key(s) decrypted once, into an ssh-agent of this run's own"), std::string::npos);
  // The plan did reach the token's step, so its absence means something.
  EXPECT_NE(written.find("/etc/gpuexpand/kubeadm-join-token"), std::string::npos);
  EXPECT_EQ(written.find(passphrase), std::string::npos) << "the key's passphrase was written";
  EXPECT_EQ(written.find(token), std::string::npos) << "the join token was written";
  EXPECT_EQ(written.find("r4t5y6u7i8o9p0a1"), std::string::npos) << "the join token's secret half was written";
}

}  // namespace
}  // namespace gpuexpand::testing
