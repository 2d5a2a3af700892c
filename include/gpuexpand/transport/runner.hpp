#pragma once
// The narrow interface every side effect on nodes goes through. Commands
// are submitted per node and completed by callbacks from run(), which
// drives all nodes at once: the facts gatherer submits one probe per node,
// the executor submits a node's next step from the previous step's
// callback. SshRunner is the real one; tests use a recording fake.

#include <functional>
#include <string>
#include <vector>

#include "gpuexpand/transport/command.hpp"

namespace gpuexpand {

struct NodeEndpoint {
  std::string name;     // the node's name in the spec (for messages)
  std::string address;  // host name or IP to connect to
  int port = 22;
  std::string user = "root";
};

class CommandRunner {
 public:
  using Callback = std::function<void(const CommandOutcome&)>;
  virtual ~CommandRunner() = default;

  // Queues `request` on node `node` (an index into the endpoints the runner
  // was made with). Commands of one node run one after another, in order.
  virtual void submit(size_t node, CommandRequest request, Callback done) = 0;

  // Starts connecting to `node` now, before it has work, so that its
  // handshake overlaps other work (the controller while the nodes are
  // probed); what is submitted later uses that session. Runs nothing, and
  // records nothing. A runner without sessions ignores it.
  virtual void connect(size_t node) { (void)node; }

  // The caller has no more work for `node` in this run: its session may be
  // closed once what is queued on it has run, so that a fleet's sessions
  // are not all held to the end (facts and plan at 1,000 nodes). Work
  // submitted later still runs, over a new session.
  virtual void release(size_t node) { (void)node; }

  // Runs until every queued command (including those callbacks queue) has
  // completed. Single-threaded: callbacks run on the caller's thread.
  virtual void run() = 0;

  // Handshakes a host refused or reset and that were tried again (an
  // overloaded sshd); 0 for a runner without connections.
  virtual size_t handshake_retries() const { return 0; }
};

// Every command run on a node, for the audit trail.
struct AuditRecord {
  std::string node;
  std::string user;   // the SSH login
  bool sudo = false;  // run through `sudo -n` (become: sudo)
  std::string command;  // "<sensitive>" when the request was marked so
  int exit_code = -1;
  FailureKind failure = FailureKind::None;
  std::chrono::milliseconds duration{0};
  // For the run's per-node log (exec/run_log.hpp): stdin only by size and
  // digest (it may carry a secret file's content), the output as the
  // command printed it (nothing for a sensitive request), and the one-line
  // message of a failure.
  size_t stdin_bytes = 0;
  std::string stdin_sha256;
  std::string out, err, message;
};

}  // namespace gpuexpand
