#pragma once
// A real OpenSSH sshd on 127.0.0.1 for transport tests: its own host keys,
// client keys and config in a temporary directory, started for a test
// suite and stopped after it. Tests skip (saying why) when sshd is not
// installed or the tests do not run as root.

#include <string>

namespace gpuexpand::testing {

class LocalSshd {
 public:
  // Empty when started; otherwise why it could not start (for GTEST_SKIP).
  // `extra_config`: sshd_config lines put before the defaults (sshd takes
  // the first value it reads, so they win), e.g. "LogLevel VERBOSE\n".
  std::string start(const std::string& extra_config = "");
  void stop();
  ~LocalSshd() { stop(); }

  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string log_path() const { return dir_ + "/sshd.log"; }
  std::string client_key() const { return dir_ + "/client_ed25519"; }
  std::string host_public_key() const;  // "ssh-ed25519 AAAA..."
  // A known_hosts file holding this server's key for [127.0.0.1]:port.
  std::string write_known_hosts(const std::string& name) const;

 private:
  std::string dir_;
  int port_ = 0;
  int pid_ = -1;
};

// Runs a shell command, returns its exit status (for ssh-keygen & co).
int shell(const std::string& command);
// A TCP port nothing listens on right now.
int free_port();

// A loopback listener that accepts connections (the kernel's backlog
// does) and never speaks: an SSH server that hangs before its banner.
class SilentServer {
 public:
  SilentServer();
  ~SilentServer();
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace gpuexpand::testing
