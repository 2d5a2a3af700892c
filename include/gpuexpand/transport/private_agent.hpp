#pragma once
// An ssh-agent of this run's own, holding its encrypted keys decrypted once.
//
// libssh2 decrypts an encrypted identity file again at every login (the
// key's bcrypt KDF: about 0.2 s of CPU each, docs/benchmarks.md), so 1,000
// nodes cost minutes of CPU before any work. ssh-add decrypts each key
// once into an agent that only this run can reach; every login then signs
// through the agent, as it would through the operator's own.
//
// Safety: the agent listens in a fresh 0700 directory and holds only these
// keys. The passphrase reaches ssh-add through a pipe read by an
// SSH_ASKPASS script (never a file, argv or the environment). The agent
// ends with the run: the destructor stops it, and if gpuexpand dies first,
// ssh-agent's COMMAND mode ends it within 10 s (its command reads a pipe
// only gpuexpand holds, and the agent exits once that command is gone).

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

class PrivateAgent {
 public:
  struct Key {
    std::string path;
    std::string passphrase;  // never logged
  };

  // Starts ssh-agent and adds every key. An error names what failed (no
  // ssh-agent installed, a wrong passphrase for KEY, …); nothing is left
  // running or on disk then.
  static Result<std::unique_ptr<PrivateAgent>> start(const std::vector<Key>& keys);

  ~PrivateAgent();
  PrivateAgent(const PrivateAgent&) = delete;
  PrivateAgent& operator=(const PrivateAgent&) = delete;

  const std::string& socket_path() const { return socket_; }
  pid_t agent_pid() const { return agent_pid_; }
  // Whether this agent holds the key at `key_path`.
  bool holds(const std::string& key_path) const { return blobs_.count(key_path) != 0; }
  // The key's public key blob (SSH wire format), read from the file's
  // unencrypted header: the agent identity to sign with. Empty for a PEM
  // key, whose public half is encrypted too (then every identity is tried).
  std::string public_blob(const std::string& key_path) const;

 private:
  PrivateAgent() = default;
  void stop();

  std::string directory_;
  std::string socket_;
  pid_t command_pid_ = -1;  // ssh-agent's COMMAND (our child); the agent is its sibling
  pid_t agent_pid_ = -1;
  int lifeline_fd_ = -1;    // the pipe the command reads: closed, it ends
  std::map<std::string, std::string> blobs_;
};

}  // namespace gpuexpand
