#pragma once
// The real CommandRunner: libssh2 in non-blocking mode, every node's
// session driven from one poll() loop on one thread, so 1,000 nodes need
// neither 1,000 threads nor 1,000 processes. One session per node is kept
// for the whole run and reused for every command; each command gets its
// own channel. Host keys are checked strictly against known_hosts.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

struct SshRunnerOptions {
  std::string identity_file;  // empty: use ssh-agent
  std::string passphrase;     // the identity's passphrase (from the spec's passphrase_env); never logged
  std::string known_hosts;    // absolute path
  bool accept_new_host_keys = false;  // trust on first use; a changed key is still refused
  bool become_sudo = false;           // run commands through `sudo -n`
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds command_timeout{900'000};
  int keepalive_interval_s = 15;      // 0: off
  size_t parallel = 256;              // nodes worked on at once
  std::function<void(const AuditRecord&)> audit;  // every command run, when set
};

class SshRunner final : public CommandRunner {
 public:
  SshRunner(std::vector<NodeEndpoint> nodes, SshRunnerOptions options);
  ~SshRunner() override;
  SshRunner(const SshRunner&) = delete;
  SshRunner& operator=(const SshRunner&) = delete;

  void submit(size_t node, CommandRequest request, Callback done) override;
  void run() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The command line actually sent for a request: wrapped in `sudo -n` when
// becoming root. Exposed for tests of the exact quoting.
std::string wrap_for_become(const std::string& command, bool become_sudo);

}  // namespace gpuexpand
