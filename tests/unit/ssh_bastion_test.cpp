// SshRunner through a bastion, against the real local sshd: it is both the
// bastion and the targets (it forwards TCP to itself). One session to the
// bastion carries every target; bastion failures fail every target and
// name the bastion; a target the bastion cannot reach fails alone; target
// host keys are still checked. Also: encrypted ed25519/ECDSA identities
// and ssh-agent, directly and through the bastion.

#include <gtest/gtest.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "gpuexpand/transport/known_hosts.hpp"
#include "gpuexpand/transport/passphrase.hpp"
#include "gpuexpand/transport/private_agent.hpp"
#include "gpuexpand/transport/ssh_runner.hpp"
#include "gpuexpand/util/base64.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "local_sshd.hpp"

namespace gpuexpand {
namespace {

using testing::LocalSshd;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Local ports of this process's established TCP connections to
// 127.0.0.1:port (from /proc: the sockets among our descriptors).
std::vector<int> own_connections_to(int port) {
  std::set<std::string> inodes;
  if (DIR* fds = ::opendir("/proc/self/fd")) {
    while (dirent* entry = ::readdir(fds)) {
      char target[256] = {};
      const std::string link = std::string("/proc/self/fd/") + entry->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      const std::string text(target, n > 0 ? static_cast<size_t>(n) : 0);
      if (text.rfind("socket:[", 0) == 0) inodes.insert(text.substr(8, text.size() - 9));
    }
    ::closedir(fds);
  }
  char remote[32];
  std::snprintf(remote, sizeof remote, "0100007F:%04X", static_cast<unsigned>(port));
  std::vector<int> ports;
  std::istringstream table(read_file("/proc/net/tcp"));
  std::string line;
  std::getline(table, line);  // header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, rem, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> rem >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (rem == remote && state == "01" && inodes.count(inode)) {
      ports.push_back(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
    }
  }
  return ports;
}

// Processes holding the sshd side of the connection from our local port
// (the bastion's session processes), found through /proc.
std::vector<pid_t> server_side_pids(int sshd_port, int client_port) {
  char local[32], remote[32];
  std::snprintf(local, sizeof local, "0100007F:%04X", static_cast<unsigned>(sshd_port));
  std::snprintf(remote, sizeof remote, "0100007F:%04X", static_cast<unsigned>(client_port));
  std::string socket;
  std::istringstream table(read_file("/proc/net/tcp"));
  std::string line;
  std::getline(table, line);
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, loc, rem, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> loc >> rem >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (loc == local && rem == remote) socket = "socket:[" + inode + "]";
  }
  std::vector<pid_t> pids;
  if (socket.empty()) return pids;
  DIR* proc = ::opendir("/proc");
  while (dirent* entry = proc ? ::readdir(proc) : nullptr) {
    const std::string pid = entry->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    bool holds = false;
    while (dirent* fd = fds ? ::readdir(fds) : nullptr) {
      char target[256] = {};
      const std::string link = fd_dir + "/" + fd->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      holds = holds || (n > 0 && socket == target);
    }
    if (fds) ::closedir(fds);
    if (holds && std::stol(pid) != ::getpid()) pids.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  if (proc) ::closedir(proc);
  return pids;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

class SshBastionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sshd_ = new LocalSshd();
    // VERBOSE: sshd logs every login ("Accepted publickey … port N").
    skip_reason_ = new std::string(sshd_->start("LogLevel VERBOSE\n"));
  }
  static void TearDownTestSuite() {
    delete sshd_;
    delete skip_reason_;
  }
  void SetUp() override {
    if (!skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    known_hosts_ = sshd_->write_known_hosts("known_hosts");
  }

  int port() const { return sshd_->port(); }

  NodeEndpoint target(const std::string& name, const std::string& address = "127.0.0.1", int port = 0) const {
    return {name, address, port ? port : sshd_->port(), "root"};
  }
  NodeEndpoint bastion(int port = 0) const { return {"127.0.0.1", "127.0.0.1", port ? port : sshd_->port(), "root"}; }

  SshRunnerOptions options() const {
    SshRunnerOptions o;
    o.identity_file = sshd_->client_key();
    o.known_hosts = known_hosts_;
    o.connect_timeout = std::chrono::milliseconds(5000);
    o.command_timeout = std::chrono::milliseconds(20000);
    o.bastion = bastion();
    return o;
  }

  // Runs `command` once on every endpoint; outcomes by node.
  std::vector<CommandOutcome> run_all(const std::vector<NodeEndpoint>& endpoints, SshRunnerOptions o,
                                      const std::string& command, const std::string& stdin_data = "") {
    SshRunner runner(endpoints, std::move(o));
    std::vector<CommandOutcome> results(endpoints.size());
    for (size_t i = 0; i < endpoints.size(); ++i) {
      runner.submit(i, {command, stdin_data, {}, false}, [&results, i](const CommandOutcome& r) { results[i] = r; });
    }
    runner.run();
    return results;
  }

  // A second host key, and a known_hosts giving it for [localhost]:port
  // while [127.0.0.1]:port (the bastion) keeps the real one.
  std::string known_hosts_with_wrong_localhost_key() const {
    const std::string key = sshd_->dir() + "/other_host_key";
    if (::access(key.c_str(), F_OK) != 0) testing::shell("ssh-keygen -q -N '' -t ed25519 -f " + key);
    std::ifstream pub(key + ".pub");
    std::string type, blob;
    pub >> type >> blob;
    const std::string path = sshd_->dir() + "/wrong_localhost_known_hosts";
    std::ofstream(path) << "[127.0.0.1]:" << port() << " " << sshd_->host_public_key() << "\n[localhost]:" << port()
                        << " " << type << " " << blob << "\n";
    return path;
  }

  static LocalSshd* sshd_;
  static std::string* skip_reason_;
  std::string known_hosts_;
};

LocalSshd* SshBastionTest::sshd_ = nullptr;
std::string* SshBastionTest::skip_reason_ = nullptr;

TEST_F(SshBastionTest, OneBastionSessionCarriesEveryTarget) {
  std::vector<NodeEndpoint> endpoints;
  for (int i = 0; i < 10; ++i) endpoints.push_back(target("t" + std::to_string(i)));
  const size_t log_before = read_file(sshd_->log_path()).size();

  SshRunner runner(endpoints, options());
  std::vector<CommandOutcome> results(endpoints.size());
  std::vector<std::vector<int>> seen(endpoints.size());  // our TCP connections to sshd, while each command ends
  for (size_t i = 0; i < endpoints.size(); ++i) {
    // The sleep keeps every target connected at once.
    runner.submit(i, {"sleep 0.3; echo $SSH_CONNECTION", "", {}, false}, [&, i](const CommandOutcome& r) {
      results[i] = r;
      seen[i] = own_connections_to(port());
    });
  }
  runner.run();

  std::set<std::string> client_ports;
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].message;
    std::istringstream fields(results[i].out);
    std::string client_ip, client_port, server_ip, server_port;
    fields >> client_ip >> client_port >> server_ip >> server_port;
    EXPECT_EQ(client_ip, "127.0.0.1");
    EXPECT_EQ(server_port, std::to_string(port()));
    client_ports.insert(client_port);
    // One TCP connection from this process, however many targets.
    ASSERT_EQ(seen[i].size(), 1u) << "node " << i;
    EXPECT_EQ(seen[i].front(), seen.front().front()) << "the same bastion connection throughout";
    EXPECT_NE(client_port, std::to_string(seen[i].front())) << "the target's session comes from the bastion's sshd";
  }
  EXPECT_EQ(client_ports.size(), endpoints.size()) << "each target has its own forwarded connection";

  // sshd saw one login from the runner's socket (the bastion) and one per
  // target from forwarded connections.
  const std::string log = read_file(sshd_->log_path()).substr(log_before);
  const std::string from_runner = "Accepted publickey for root from 127.0.0.1 port " + std::to_string(seen[0][0]) + " ";
  EXPECT_EQ(count_of(log, from_runner), 1u) << log;
  EXPECT_EQ(count_of(log, "Accepted publickey for root"), endpoints.size() + 1) << log;
}

TEST_F(SshBastionTest, LargeInputAndOutputThroughTheTunnel) {
  const std::string big(3 * 1024 * 1024 + 17, 'x');
  auto counted = run_all({target("t0"), target("t1")}, options(), "wc -c", big);
  for (const auto& r : counted) {
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.out, std::to_string(big.size()) + "\n");
  }
  auto printed = run_all({target("t0"), target("t1")}, options(), "head -c 4000000 /dev/zero | tr '\\0' a; echo e >&2");
  for (const auto& r : printed) {
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.out.size(), 4000000u);
    EXPECT_EQ(r.err, "e\n");
  }
}

TEST_F(SshBastionTest, HostileValuesKeepTheirMeaningThroughTheBastion) {
  const std::vector<std::string> values = {"it's", "a; touch /tmp/gpx-bastion-pwned", "$(id)", "line\nbreak", "-n"};
  SshRunner runner({target("t0")}, options());
  std::vector<std::string> outputs;
  for (const auto& v : values) {
    runner.submit(0, {shell_join({"printf", "%s", v}), "", {}, false},
                  [&](const CommandOutcome& r) { outputs.push_back(r.ok() ? r.out : r.message); });
  }
  runner.run();
  EXPECT_EQ(outputs, values);
  EXPECT_NE(::access("/tmp/gpx-bastion-pwned", F_OK), 0);
}

TEST_F(SshBastionTest, ManyTargetsAndCommandsFromOneThread) {
  std::vector<NodeEndpoint> endpoints;
  for (int i = 0; i < 40; ++i) endpoints.push_back(target("n" + std::to_string(i)));
  auto o = options();
  o.parallel = 16;
  SshRunner runner(endpoints, o);
  std::vector<std::string> outputs(endpoints.size());
  for (size_t i = 0; i < endpoints.size(); ++i) {
    runner.submit(i, {"echo " + std::to_string(i), "", {}, false}, [&, i](const CommandOutcome& first) {
      outputs[i] = first.ok() ? first.out : first.message;
      runner.submit(i, {"echo again", "", {}, false},
                    [&, i](const CommandOutcome& second) { outputs[i] += second.ok() ? second.out : second.message; });
    });
  }
  runner.run();
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_EQ(outputs[i], std::to_string(i) + "\nagain\n");
}

TEST_F(SshBastionTest, CommandTimeoutThenTheTargetIsUsableAgain) {
  SshRunner runner({target("t0"), target("t1")}, options());
  std::vector<CommandOutcome> results;
  runner.submit(0, {"sleep 30", "", std::chrono::milliseconds(300), false},
                [&](const CommandOutcome& o) { results.push_back(o); });
  runner.submit(0, {"echo after", "", {}, false}, [&](const CommandOutcome& o) { results.push_back(o); });
  CommandOutcome other;
  runner.submit(1, {"sleep 1; echo other", "", {}, false}, [&](const CommandOutcome& o) { other = o; });
  runner.run();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].failure, FailureKind::CommandTimeout);
  EXPECT_TRUE(results[1].ok()) << results[1].message;
  EXPECT_EQ(results[1].out, "after\n");
  EXPECT_TRUE(other.ok()) << other.message;
  EXPECT_EQ(other.out, "other\n") << "a target's timeout leaves the bastion and the other targets alone";
  // Cut short, not waited for. The node's limit starts when its shell has
  // started, which can take seconds on a loaded machine (root's .bashrc):
  // so no tight bound, only that `sleep 30` did not run to its end.
  EXPECT_LT(results[0].duration, std::chrono::seconds(30)) << "`sleep 30` must not have run to its end";
}

TEST_F(SshBastionTest, UnknownBastionHostKeyFailsEveryTargetNamingTheBastion) {
  // Only the targets' name is known: the bastion (127.0.0.1) is not.
  auto o = options();
  o.known_hosts = sshd_->dir() + "/targets_only_known_hosts";
  std::ofstream(o.known_hosts) << "[localhost]:" << port() << " " << sshd_->host_public_key() << "\n";
  auto results = run_all({target("t0", "localhost"), target("t1", "localhost"), target("t2", "localhost")}, o, "true");
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].failure, FailureKind::HostKeyUnknown);
    const std::string prefix = "t" + std::to_string(i) + " (localhost): via bastion 127.0.0.1: host key ssh-ed25519 SHA256:";
    EXPECT_EQ(results[i].message.rfind(prefix, 0), 0u) << results[i].message;
    EXPECT_NE(results[i].message.find("is not in " + o.known_hosts), std::string::npos) << results[i].message;
  }
}

TEST_F(SshBastionTest, AcceptNewHostKeysRecordsBastionAndTargets) {
  auto o = options();
  o.known_hosts = sshd_->dir() + "/tofu_bastion/known_hosts";
  o.accept_new_host_keys = true;
  auto first = run_all({target("t0", "localhost")}, o, "true");
  EXPECT_TRUE(first[0].ok()) << first[0].message;
  const std::string text = read_file(o.known_hosts);
  const std::string key = sshd_->host_public_key();
  EXPECT_NE(text.find("[127.0.0.1]:" + std::to_string(port()) + " " + key), std::string::npos) << text;
  EXPECT_NE(text.find("[localhost]:" + std::to_string(port()) + " " + key), std::string::npos) << text;
}

TEST_F(SshBastionTest, UnreachableTargetBehindAGoodBastionFailsAlone) {
  const int closed = testing::free_port();
  auto results = run_all({target("good"), target("bad", "127.0.0.1", closed), target("good2")}, options(), "echo up");
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  EXPECT_TRUE(results[2].ok()) << results[2].message;
  EXPECT_EQ(results[1].failure, FailureKind::Refused);
  EXPECT_EQ(results[1].message.rfind("bad (127.0.0.1): the bastion 127.0.0.1 could not open a connection to 127.0.0.1 "
                                     "port " + std::to_string(closed) + " (",
                                     0),
            0u)
      << results[1].message;
  EXPECT_TRUE(is_unreachable(results[1].failure));
}

TEST_F(SshBastionTest, TargetHostKeyMismatchIsRefused) {
  auto o = options();
  o.known_hosts = known_hosts_with_wrong_localhost_key();
  o.accept_new_host_keys = true;  // never overrides a changed key
  auto results = run_all({target("t0", "localhost"), target("t1")}, o, "echo reached");
  EXPECT_EQ(results[0].failure, FailureKind::HostKeyChanged);
  EXPECT_EQ(results[0].message.rfind("t0 (localhost): HOST KEY CHANGED: known_hosts has ssh-ed25519 ", 0), 0u)
      << results[0].message;
  EXPECT_TRUE(results[0].out.empty());
  EXPECT_TRUE(results[1].ok()) << results[1].message;
}

// A key marked @revoked, for a target behind the bastion and for the
// bastion itself: refused, --accept-new-host-keys notwithstanding. (The
// bastion and the targets are one sshd here, told apart by the name.)
TEST_F(SshBastionTest, ARevokedKeyIsRefusedForATargetAndForTheBastion) {
  std::istringstream host_key(sshd_->host_public_key());
  std::string type, blob;
  host_key >> type >> blob;
  const std::string fingerprint = ssh_fingerprint(*base64_decode(blob));
  auto o = options();
  o.accept_new_host_keys = true;
  o.known_hosts = sshd_->dir() + "/revoked_target_known_hosts";
  std::ofstream(o.known_hosts) << read_file(known_hosts_) << "@revoked [localhost]:" << port() << " " << type << " "
                               << blob << "\n";
  auto results = run_all({target("t0", "localhost"), target("t1")}, o, "echo reached");
  EXPECT_EQ(results[0].failure, FailureKind::HostKeyChanged);
  EXPECT_EQ(results[0].message,
            "t0 (localhost): the host key " + fingerprint + " is marked @revoked in " + o.known_hosts);
  EXPECT_TRUE(results[0].out.empty());
  EXPECT_TRUE(results[1].ok()) << "the bastion's own name is not revoked: " << results[1].message;
  EXPECT_EQ(count_of(read_file(o.known_hosts), "[localhost]:"), 1u) << "nothing learned for the revoked name";

  o.known_hosts = sshd_->dir() + "/revoked_bastion_known_hosts";
  std::ofstream(o.known_hosts) << read_file(known_hosts_) << "[localhost]:" << port() << " " << type << " " << blob
                               << "\n@revoked [127.0.0.1]:" << port() << " " << type << " " << blob << "\n";
  results = run_all({target("t0", "localhost"), target("t1", "localhost")}, o, "echo reached");
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].failure, FailureKind::HostKeyChanged);
    EXPECT_EQ(results[i].message, "t" + std::to_string(i) + " (localhost): via bastion 127.0.0.1: the host key " +
                                      fingerprint + " is marked @revoked in " + o.known_hosts);
    EXPECT_TRUE(results[i].out.empty());
  }
}

TEST_F(SshBastionTest, BastionRefusingConnectionsFailsEveryTarget) {
  const int closed = testing::free_port();
  auto o = options();
  o.bastion = bastion(closed);
  auto results = run_all({target("t0"), target("t1")}, o, "true");
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].failure, FailureKind::Refused);
    EXPECT_EQ(results[i].message, "t" + std::to_string(i) + " (127.0.0.1): via bastion 127.0.0.1: connection refused port " +
                                      std::to_string(closed));
  }
}

TEST_F(SshBastionTest, BastionRefusingTheLoginFailsEveryTarget) {
  auto o = options();
  o.bastion->user = "nosuchuser";
  auto results = run_all({target("t0"), target("t1")}, o, "true");
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].failure, FailureKind::AuthFailed);
    EXPECT_EQ(results[i].message.rfind("t" + std::to_string(i) +
                                           " (127.0.0.1): via bastion 127.0.0.1: authentication as nosuchuser failed",
                                       0),
              0u)
        << results[i].message;
  }
}

TEST_F(SshBastionTest, BastionNeverSpeakingSshTimesOut) {
  const testing::SilentServer silent;
  ASSERT_NE(silent.port(), 0);
  auto o = options();
  o.bastion = bastion(silent.port());
  o.connect_timeout = std::chrono::milliseconds(500);
  auto results = run_all({target("t0"), target("t1")}, o, "true");
  for (const auto& r : results) {
    EXPECT_EQ(r.failure, FailureKind::ConnectTimeout);
    EXPECT_NE(r.message.find(": via bastion 127.0.0.1: connection timed out (no SSH handshake and login"),
              std::string::npos)
        << r.message;
  }
}

TEST_F(SshBastionTest, LosingTheBastionLosesRunningCommandsThenReconnects) {
  SshRunner runner({target("t0"), target("t1")}, options());
  std::vector<CommandOutcome> t0, t1;
  std::vector<pid_t> killed;
  runner.submit(0, {"sleep 3; echo late", "", {}, false}, [&](const CommandOutcome& r) { t0.push_back(r); });
  runner.submit(0, {"echo again", "", {}, false}, [&](const CommandOutcome& r) { t0.push_back(r); });
  runner.submit(1, {"sleep 0.5; echo first", "", {}, false}, [&](const CommandOutcome& r) {
    t1.push_back(r);
    // t0's command is running: cut the bastion's session by killing the
    // sshd process that serves it (found by our connection's port).
    const auto mine = own_connections_to(port());
    ASSERT_EQ(mine.size(), 1u);
    killed = server_side_pids(port(), mine.front());
    for (pid_t pid : killed) ::kill(pid, SIGKILL);
  });
  runner.run();
  ASSERT_FALSE(killed.empty()) << "found the bastion's sshd process";
  ASSERT_EQ(t0.size(), 2u);
  ASSERT_EQ(t1.size(), 1u);
  EXPECT_EQ(t0[0].failure, FailureKind::ConnectionLost);
  EXPECT_EQ(t0[0].message,
            "t0 (127.0.0.1): connection lost while running `sleep 3; echo late`: the connection to bastion 127.0.0.1 "
            "was lost: transport read")
      << t0[0].message;
  EXPECT_TRUE(t1[0].ok()) << t1[0].message;
  // The next command goes through a new bastion session.
  EXPECT_TRUE(t0[1].ok()) << t0[1].message;
  EXPECT_EQ(t0[1].out, "again\n");
}

TEST_F(SshBastionTest, BastionForbiddingForwardingFailsEachTargetClearly) {
  LocalSshd strict;
  const std::string why = strict.start("AllowTcpForwarding no\n");
  if (!why.empty()) GTEST_SKIP() << why;
  auto o = options();
  o.identity_file = strict.client_key();
  o.known_hosts = strict.dir() + "/known_hosts";
  std::ofstream(o.known_hosts) << "[127.0.0.1]:" << strict.port() << " " << strict.host_public_key() << "\n";
  o.bastion = bastion(strict.port());
  auto results = run_all({target("t0"), target("t1")}, o, "true");
  for (const auto& r : results) {
    EXPECT_EQ(r.failure, FailureKind::Refused);
    EXPECT_NE(r.message.find("the bastion 127.0.0.1 could not open a connection to 127.0.0.1 port " +
                             std::to_string(port())),
              std::string::npos)
        << r.message;
  }
}

TEST_F(SshBastionTest, RoutesMixDirectAndBastionNodes) {
  auto o = options();
  o.bastion.reset();
  o.routes.resize(2);
  o.routes[1].bastion = bastion();
  std::vector<int> seen;
  SshRunner runner({target("direct"), target("behind")}, o);
  std::vector<CommandOutcome> results(2);
  for (size_t i = 0; i < 2; ++i) {
    runner.submit(i, {"sleep 0.3; echo ok", "", {}, false}, [&, i](const CommandOutcome& r) {
      results[i] = r;
      if (i == 1) seen = own_connections_to(port());
    });
  }
  runner.run();
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  EXPECT_TRUE(results[1].ok()) << results[1].message;
  EXPECT_GE(seen.size(), 1u);
}

// ---------------------------------------------------------------- keys and agent

class SshKeysTest : public SshBastionTest {
 protected:
  // A new key of `type` with `passphrase`, authorized on the sshd.
  std::string authorized_key(const std::string& name, const std::string& type, const std::string& passphrase) {
    const std::string key = sshd_->dir() + "/" + name;
    if (::access(key.c_str(), F_OK) != 0) {
      EXPECT_EQ(testing::shell("ssh-keygen -q -t " + type + " -N " + shell_quote(passphrase) + " -f " + key), 0);
      EXPECT_EQ(testing::shell("cat " + key + ".pub >> " + sshd_->dir() + "/authorized_keys"), 0);
    }
    return key;
  }
};

TEST_F(SshKeysTest, EncryptedEd25519AndEcdsaKeysDirectAndThroughTheBastion) {
  for (const std::string type : {"ed25519", "ecdsa"}) {
    const std::string key = authorized_key("enc_" + type, type, "correct horse");
    ASSERT_TRUE(key_file_is_encrypted(key).value()) << key;
    auto o = options();
    o.identity_file = key;
    o.passphrase = "correct horse";
    auto through = run_all({target("t0")}, o, "echo hi");
    EXPECT_TRUE(through[0].ok()) << type << ": " << through[0].message;
    o.bastion.reset();
    auto direct = run_all({target("t0")}, o, "echo hi");
    EXPECT_TRUE(direct[0].ok()) << type << ": " << direct[0].message;

    o.passphrase = "wrong";
    auto wrong = run_all({target("t0")}, o, "true");
    EXPECT_EQ(wrong[0].failure, FailureKind::AuthFailed);
    EXPECT_NE(wrong[0].message.find("cannot use the key " + key), std::string::npos) << wrong[0].message;
  }
}

TEST_F(SshKeysTest, PassphrasesByKeyAndPerNodeIdentities) {
  const std::string ed = authorized_key("enc_ed25519_b", "ed25519", "first phrase");
  const std::string ec = authorized_key("enc_ecdsa_b", "ecdsa", "second phrase");
  auto o = options();
  o.identity_file = sshd_->client_key();  // the bastion's key (unencrypted)
  o.passphrases = {{ed, "first phrase"}, {ec, "second phrase"}};
  o.routes.resize(2);
  o.routes[0].identity_file = ed;
  o.routes[1].identity_file = ec;
  auto results = run_all({target("t0"), target("t1")}, o, "echo hi");
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  EXPECT_TRUE(results[1].ok()) << results[1].message;
}

TEST_F(SshKeysTest, AgentDirectAndThroughTheBastion) {
  const std::string socket = sshd_->dir() + "/agent.sock";
  const std::string env = sshd_->dir() + "/agent.env";
  ASSERT_EQ(testing::shell("ssh-agent -s -a " + socket + " > " + env), 0);
  const std::string text = read_file(env);
  const size_t at = text.find("SSH_AGENT_PID=");
  ASSERT_NE(at, std::string::npos) << text;
  const pid_t agent = static_cast<pid_t>(std::stol(text.substr(at + 14)));
  const char* saved = std::getenv("SSH_AUTH_SOCK");
  const std::string saved_value = saved ? saved : "";
  ::setenv("SSH_AUTH_SOCK", socket.c_str(), 1);
  const std::string ec = authorized_key("agent_ecdsa", "ecdsa", "");
  const int added = testing::shell("SSH_AUTH_SOCK=" + socket + " ssh-add -q " + ec + " 2>/dev/null");

  auto o = options();
  o.identity_file.clear();
  auto through = run_all({target("t0"), target("t1")}, o, "echo hi");
  o.bastion.reset();
  auto direct = run_all({target("t0")}, o, "echo hi");

  ::kill(agent, SIGTERM);
  if (saved) {
    ::setenv("SSH_AUTH_SOCK", saved_value.c_str(), 1);
  } else {
    ::unsetenv("SSH_AUTH_SOCK");
  }
  ASSERT_EQ(added, 0);
  for (const auto& r : through) EXPECT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(direct[0].ok()) << direct[0].message;
}


// ---------------------------------------------------------------- the run's own agent

// Whether process `pid` is gone (not ours to wait for: ssh-agent's own fork).
bool gone_within(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    ::usleep(50'000);
  }
  return false;
}

std::string public_blob_of(const std::string& key) {
  std::istringstream line(read_file(key + ".pub"));
  std::string type, base64;
  line >> type >> base64;
  return base64_decode(base64).value_or("");
}

TEST_F(SshKeysTest, TheRunsOwnAgentDecryptsOnceAndEveryLoginSignsThroughIt) {
  const std::string ed = authorized_key("own_agent_ed25519", "ed25519", "first phrase");
  const std::string ec = authorized_key("own_agent_ecdsa", "ecdsa", "second phrase");
  auto started = PrivateAgent::start({{ed, "first phrase"}, {ec, "second phrase"}});
  ASSERT_TRUE(started) << started.error().message;
  std::shared_ptr<const PrivateAgent> agent = std::move(started.value());
  EXPECT_TRUE(agent->holds(ed));
  EXPECT_FALSE(agent->holds(sshd_->client_key()));
  EXPECT_EQ(agent->public_blob(ed), public_blob_of(ed));
  EXPECT_EQ(agent->public_blob(ec), public_blob_of(ec));
  struct stat dir {};
  ASSERT_EQ(::stat(agent->socket_path().substr(0, agent->socket_path().rfind('/')).c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 0777, 0700u);
  EXPECT_EQ(testing::shell("SSH_AUTH_SOCK=" + agent->socket_path() + " ssh-add -l | grep -c SHA256 | grep -qx 2"), 0);

  // The key files gone: a login can only sign through the agent now.
  for (const auto& key : {ed, ec}) ASSERT_EQ(::rename(key.c_str(), (key + ".away").c_str()), 0);
  auto o = options();
  o.identity_file = ed;  // the bastion's key too
  o.agent = agent;
  o.routes.resize(2);
  o.routes[1].identity_file = ec;
  auto through = run_all({target("t0"), target("t1")}, o, "echo hi");
  o.bastion.reset();
  auto direct = run_all({target("t0"), target("t1")}, o, "echo hi");
  o.agent.reset();
  auto without = run_all({target("t0")}, o, "true");
  for (const auto& key : {ed, ec}) ::rename((key + ".away").c_str(), key.c_str());
  for (const auto& r : through) EXPECT_TRUE(r.ok()) << r.message;
  for (const auto& r : direct) EXPECT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(without[0].failure, FailureKind::AuthFailed) << "the file is gone: only the agent could sign";

  const pid_t pid = agent->agent_pid();
  const std::string socket = agent->socket_path();
  agent.reset();
  EXPECT_TRUE(gone_within(pid, std::chrono::seconds(5))) << "ssh-agent " << pid << " still runs";
  EXPECT_NE(::access(socket.substr(0, socket.rfind('/')).c_str(), F_OK), 0) << "its directory is left";
}

TEST_F(SshKeysTest, AWrongPassphraseForTheRunsOwnAgentNamesTheKeyAndLeavesNothing) {
  const std::string ed = authorized_key("own_agent_wrong", "ed25519", "the phrase");
  const std::string tmp = sshd_->dir() + "/tmp-wrong";
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  const char* saved = std::getenv("TMPDIR");
  const std::string saved_value = saved ? saved : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  auto started = PrivateAgent::start({{ed, "not the phrase"}});
  saved ? ::setenv("TMPDIR", saved_value.c_str(), 1) : ::unsetenv("TMPDIR");
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().message.rfind("ssh-add could not load " + ed + " (a wrong passphrase?)", 0), 0u)
      << started.error().message;
  EXPECT_EQ(::rmdir(tmp.c_str()), 0) << "something was left in " << tmp;
  // ([s]: not the shell running pgrep, whose own command line holds the words)
  EXPECT_EQ(testing::shell("for i in $(seq 40); do pgrep -f '[s]sh-agent -a " + tmp +
                           "' >/dev/null || exit 0; sleep 0.05; done; exit 1"),
            0)
      << "an ssh-agent was left running";
}

TEST_F(SshKeysTest, TheRunsOwnAgentEndsWhenGpuexpandIsKilled) {
  const std::string ed = authorized_key("own_agent_killed", "ed25519", "the phrase");
  int report[2];
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  const pid_t run = ::fork();
  ASSERT_GE(run, 0);
  if (run == 0) {  // stands for gpuexpand: starts the agent, then is SIGKILLed
    ::close(report[0]);
    auto started = PrivateAgent::start({{ed, "the phrase"}});
    const std::string line = started ? std::to_string((*started)->agent_pid()) + " " + (*started)->socket_path() : "0 -";
    (void)!::write(report[1], line.data(), line.size());
    ::close(report[1]);
    for (;;) ::pause();
  }
  ::close(report[1]);
  std::string line;
  char buffer[256];
  for (ssize_t n; (n = ::read(report[0], buffer, sizeof buffer)) > 0;) line.append(buffer, static_cast<size_t>(n));
  ::close(report[0]);
  ::kill(run, SIGKILL);
  ::waitpid(run, nullptr, 0);
  std::istringstream fields(line);
  pid_t agent = 0;
  std::string socket;
  fields >> agent >> socket;
  ASSERT_GT(agent, 0) << "the agent did not start";
  // ssh-agent looks for its COMMAND every 10 s; that command ends with gpuexpand.
  EXPECT_TRUE(gone_within(agent, std::chrono::seconds(15))) << "ssh-agent " << agent << " outlived the run";
  EXPECT_NE(::access(socket.c_str(), F_OK), 0) << socket << " is left";
  ::rmdir(socket.substr(0, socket.rfind('/')).c_str());
}

}  // namespace
}  // namespace gpuexpand
