#pragma once
// One remote command and what became of it. Failures are kept apart by
// kind because what to do next depends on it: a command that failed ran
// (the node is there, roll back), a lost connection may have run half of it,
// a host key that changed must stop everything for that node.

#include <chrono>
#include <string>

namespace gpuexpand {

struct CommandRequest {
  std::string command;      // a shell command line, already quoted by the engine
  std::string stdin_data;   // sent to the command's stdin, then EOF
  std::chrono::milliseconds timeout{0};  // 0: the transport's default
  bool sensitive = false;   // the command line is not logged or recorded
  // Wait this long before starting (waiting for a node to come back from
  // a reboot); the node is (re)connected when the wait is over.
  std::chrono::milliseconds delay{0};
  // With `become: sudo`, only commands that need root go through sudo. A
  // command that reads what any user may read (the boot id) or that any
  // user may run (ping) says so here, and runs as the login; the audit
  // shows it without sudo.
  bool as_root = true;
};

// Named builders, so a request never depends on the order of its fields.
// A command line (already quoted by the engine), optionally with a timeout.
inline CommandRequest shell_command(std::string command, std::chrono::milliseconds timeout = {}) {
  CommandRequest request;
  request.command = std::move(command);
  request.timeout = timeout;
  return request;
}
// A command line whose stdin carries data (a file's content, a record).
inline CommandRequest command_with_stdin(std::string command, std::string stdin_data) {
  CommandRequest request = shell_command(std::move(command));
  request.stdin_data = std::move(stdin_data);
  return request;
}
// A script for the node's POSIX shell, sent on stdin to `sh -s`: how the
// probe, checkpoints, restores and acceptance checks travel (one channel,
// no command line to quote).
inline CommandRequest shell_script(std::string script, std::chrono::milliseconds timeout = {}) {
  CommandRequest request = command_with_stdin("sh -s", std::move(script));
  request.timeout = timeout;
  return request;
}

enum class FailureKind {
  None,            // ran and exited 0
  CommandFailed,   // ran and exited non-zero (exit_code set)
  CommandTimeout,  // ran too long; the channel was closed
  ConnectionLost,  // the session broke while the command ran: it may have half-run
  Unresolvable,    // the name does not resolve
  Refused,         // connection refused / host unreachable
  ConnectTimeout,  // no TCP connection or SSH handshake in time
  HostKeyUnknown,  // not in known_hosts (and --accept-new-host-keys not given)
  HostKeyChanged,  // in known_hosts with another key: refuse, show both fingerprints
  AuthFailed,      // the server refused every key offered
  SudoPassword,    // become: sudo, but sudo wants a password
  Protocol,        // anything else libssh2 reports
};

// "command failed", "host key changed", … for messages and JSON.
const char* failure_name(FailureKind kind);

// True when the node itself could not be reached (no command ran).
bool is_unreachable(FailureKind kind);

struct CommandOutcome {
  FailureKind failure = FailureKind::None;
  int exit_code = -1;       // set when the command ran to completion
  std::string out;
  std::string err;
  std::string message;      // one line for the operator, naming the node
  std::chrono::milliseconds duration{0};

  bool ok() const { return failure == FailureKind::None; }
};

}  // namespace gpuexpand
