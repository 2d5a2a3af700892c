#pragma once
// The real CommandRunner: libssh2 in non-blocking mode, every node's
// session driven from one poll() loop on one thread, so 1,000 nodes need
// neither 1,000 threads nor 1,000 processes. One session per node is kept
// for the whole run and reused for every command; each command gets its
// own channel. Host keys are checked strictly against known_hosts.
//
// Bastion (ssh.bastion, ProxyJump): one authenticated session to the
// bastion, its host key checked against the same known_hosts under the
// bastion's address and port; each node behind it is a direct-tcpip
// channel of that session carrying the node's own SSH session, whose host
// key is checked under the node's address and port as for a direct node.
// Both sessions run from the same poll loop. A bastion that cannot be
// reached, has an unknown or changed host key or refuses the login fails
// every node behind it, the message naming the bastion. libssh2 keeps one
// channel-open request in flight per session, so the channels to the nodes
// open one after another (one round trip each through the bastion); a node
// whose address the bastion cannot connect to fails alone ("the bastion …
// could not open a connection to …"); one that black-holes the connection
// holds the other opens until libssh2 gives up on it (60 s), though the
// node itself fails at the connect timeout.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuexpand/transport/private_agent.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

// How one node is reached where it differs from the runner-wide settings
// (an ssh config: see resolve_ssh_route in ssh_config.hpp).
struct SshNodeRoute {
  std::string identity_file;            // empty: SshRunnerOptions::identity_file
  std::optional<NodeEndpoint> bastion;  // through this host; unset: SshRunnerOptions::bastion
  std::string bastion_identity_file;    // empty: SshRunnerOptions::identity_file
};

struct SshRunnerOptions {
  std::string identity_file;  // empty: use ssh-agent
  std::string passphrase;     // the identity's passphrase (from the spec's passphrase_env); never logged
  // Passphrases by key file, for keys other than identity_file or when
  // each key has its own; a key not listed uses `passphrase`. Never logged.
  std::map<std::string, std::string> passphrases;
  // Every node is reached through this host (name, address, port, user),
  // authenticated like the nodes (identity_file or the agent).
  std::optional<NodeEndpoint> bastion;
  // Per node (by index) when not empty; nodes past its end use the
  // defaults. Nodes with the same bastion (address, port, user, key) share
  // one session to it.
  std::vector<SshNodeRoute> routes;
  std::string known_hosts;    // absolute path
  bool accept_new_host_keys = false;  // trust on first use; a changed key is still refused
  bool become_sudo = false;           // run commands through `sudo -n`
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds command_timeout{900'000};
  int keepalive_interval_s = 15;      // 0: off
  // Nodes worked on at once; also the cap of the handshake window, in
  // which new connections start (handshake_window.hpp).
  size_t parallel = 256;
  // Tries per connection when the host refuses or resets the handshake,
  // with a backoff between them (250 ms, 500 ms, … plus jitter).
  int handshake_attempts = 3;
  std::function<void(const AuditRecord&)> audit;  // every command run, when set
  // Keys this agent holds log in through it (decrypted once), not from
  // their files; the runner keeps it running until it is gone.
  std::shared_ptr<const PrivateAgent> agent;
};

// What run() did, for tests and benchmarks: the turns of its loop (each
// one wait for the sockets, or none when something could move at once) and
// the recv() calls on direct sessions' sockets.
struct LoopCounts {
  std::uint64_t turns = 0;
  std::uint64_t socket_reads = 0;
};

class SshRunner final : public CommandRunner {
 public:
  SshRunner(std::vector<NodeEndpoint> nodes, SshRunnerOptions options);
  ~SshRunner() override;
  SshRunner(const SshRunner&) = delete;
  SshRunner& operator=(const SshRunner&) = delete;

  void submit(size_t node, CommandRequest request, Callback done) override;
  void connect(size_t node) override;
  void release(size_t node) override;
  // Sessions up now (nodes and bastions): what release() gives back.
  size_t open_sessions() const;
  void run() override;
  size_t handshake_retries() const override;
  LoopCounts loop_counts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The command line actually sent for a request: held to LIMIT on the node
// by `timeout`, wrapped in `sudo -n` when becoming root. Exposed for tests
// of the exact quoting.
inline constexpr int kNodeKillGraceSeconds = 5;
std::string wrap_for_node(const std::string& command, bool become_sudo, std::chrono::milliseconds limit);

}  // namespace gpuexpand
