#pragma once
// SshRunner's insides, shared by the files that implement it:
// ssh_runner.cpp (construction, teardown, the public calls),
// ssh_connect.cpp (TCP, handshake, host key, login), ssh_channel_job.cpp
// (one command on one channel), ssh_bastion_link.cpp (sessions through a
// bastion) and ssh_poll_loop.cpp (every session in one poll() loop).

#include "gpuexpand/transport/ssh_runner.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libssh2.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>

#include "bastion.hpp"
#include "gpuexpand/transport/ready_set.hpp"
#include "socket_reader.hpp"
#include "gpuexpand/transport/handshake_window.hpp"
#include "gpuexpand/transport/known_hosts.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {
namespace ssh_detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kStderrTailLines = 5;

inline void init_libssh2_once() {
  static std::once_flag once;
  std::call_once(once, [] { libssh2_init(0); });
}

inline std::string last_error(LIBSSH2_SESSION* session) {
  char* text = nullptr;
  int length = 0;
  libssh2_session_last_error(session, &text, &length, 0);
  return text ? std::string(text, static_cast<size_t>(length)) : "unknown libssh2 error";
}

inline const char* key_type_name(int type) {
  switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return "ssh-rsa";
    case LIBSSH2_HOSTKEY_TYPE_DSS: return "ssh-dss";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return "ecdsa-sha2-nistp256";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return "ecdsa-sha2-nistp384";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return "ecdsa-sha2-nistp521";
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ssh-ed25519";
    default: return "unknown";
  }
}

inline std::string last_lines(const std::string& text, size_t count) {
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r')) --end;
  size_t start = end;
  for (size_t seen = 0; start > 0; --start) {
    if (text[start - 1] == '\n' && ++seen == count) break;
  }
  std::string tail = text.substr(start, end - start);
  std::replace(tail.begin(), tail.end(), '\n', ' ');
  return tail;
}

inline std::string short_command(const std::string& command) {
  std::string one_line = command.substr(0, command.find('\n'));
  if (one_line.size() > 60 || one_line.size() < command.size()) one_line = one_line.substr(0, 57) + "...";
  return one_line;
}

// Whether an identity file holds an RSA key: Debian's libssh2 1.10 signs
// only with ssh-rsa (SHA-1), which OpenSSH 8.8+ refuses by default.
inline bool looks_like_rsa_key(const std::string& path) {
  std::ifstream pub(path + ".pub");
  std::string type;
  if (pub >> type) return type == "ssh-rsa";
  std::ifstream key(path);
  std::string first;
  std::getline(key, first);
  return first.find("RSA PRIVATE KEY") != std::string::npos;
}

enum class Stage {
  Idle,
  Connecting,         // TCP connect to the node (or the bastion)
  WaitingForBastion,  // behind a bastion: waiting for its session or for its turn to open a channel
  Tunnelling,         // behind a bastion: the bastion is opening the channel to the node
  Handshake,
  Authenticating,
  Ready,
  Failed,
};
enum class ChannelStage { Opening, Executing, Writing, SendingEof, Reading, Closing, Done };

struct Job {
  CommandRequest request;
  CommandRunner::Callback done;
  Clock::time_point not_before{};  // request.delay after submission
  bool connect_only = false;       // SshRunner::connect: done once the session is up; runs nothing
};

// The front job may start (its delay is over).
inline bool front_due(const std::deque<Job>& queue, Clock::time_point now) {
  return !queue.empty() && queue.front().not_before <= now;
}

struct Connection {
  NodeEndpoint endpoint;
  size_t index = 0;           // in nodes (or bastions)
  bool is_bastion = false;
  int via = -1;               // the bastion (index) the node is reached through, -1: direct
  std::string identity_file;  // empty: the agent
  std::string passphrase;
  Stage stage = Stage::Idle;
  int fd = -1;                // direct connections and bastions; -1 behind a bastion
  std::unique_ptr<detail::Tunnel> tunnel;  // behind a bastion: the channel carrying the session
  std::unique_ptr<detail::SocketReader> reader;  // direct: what the session reads from fd
  LIBSSH2_SESSION* session = nullptr;
  LIBSSH2_AGENT* agent = nullptr;
  libssh2_agent_publickey* agent_identity = nullptr;
  Clock::time_point connect_deadline{};
  short revents = 0;

  // Sticky failure of the connection: every job queued on it fails so.
  FailureKind failure = FailureKind::None;
  std::string failure_message;

  std::deque<Job> queue;
  // The job being run (queue.front()) and its channel.
  LIBSSH2_CHANNEL* channel = nullptr;
  ChannelStage channel_stage = ChannelStage::Done;  // Done: no job in progress
  std::string wire_command;
  size_t written = 0;
  std::string out, err;
  Clock::time_point started{}, deadline{};
  milliseconds limit{};  // the running job's time limit, held on the node
  bool active = false;  // counts against --parallel
  bool release_when_idle = false;  // release(): close the session once the queue is empty

  // Direct connections: holds a place in the handshake window (from the
  // TCP connect until logged in or torn down).
  bool in_window = false;
  std::uint64_t socket_serial = 0;  // tells this fd's socket from an earlier one with the number
  Clock::time_point keepalive_due{};  // libssh2_keepalive_send not before this
  int attempts = 0;               // refused or reset handshakes in a row
  Clock::time_point retry_at{};   // not before this (backoff after a reset)
};

// One session to a bastion, shared by every node behind it.
struct Bastion {
  Connection link;
  std::vector<size_t> members;     // nodes reached through it
  std::deque<size_t> open_queue;   // nodes waiting for a channel, in order
  std::optional<size_t> opening;   // the node whose channel is being opened (one at a time)
  bool opening_abandoned = false;  // that node gave up (connect timeout): drop the channel when it comes
  std::string open_host;
  int open_port = 0;
  std::vector<LIBSSH2_CHANNEL*> closing;  // channels of torn-down nodes, closed without blocking
  bool want_write = false;                // something waits for the socket to drain
};

inline bool same_bastion(const Connection& a, const NodeEndpoint& e, const std::string& identity) {
  return a.endpoint.address == e.address && a.endpoint.port == e.port && a.endpoint.user == e.user &&
         a.identity_file == identity;
}

}  // namespace ssh_detail

using namespace ssh_detail;  // NOLINT: the implementation files' own vocabulary

struct SshRunner::Impl {
  SshRunnerOptions options;
  std::vector<Connection> nodes;      // never resized after construction: tunnels point into it
  std::vector<Bastion> bastions;
  KnownHosts known_hosts;
  std::optional<std::string> known_hosts_error;
  HandshakeWindow window;
  size_t handshake_retries = 0;
  unsigned jitter_state = 0x9e3779b9u;  // xorshift: backoff jitter, no global RNG
  ReadySet ready_set;                   // the sockets run() waits on
  std::vector<std::pair<size_t, short>> ready;  // what its last wait returned
  std::uint64_t sockets_opened = 0;
  LoopCounts loop_counts;
  Clock::time_point turn_now{};  // run()'s clock, read once a turn rather than once a node

  Impl(std::vector<NodeEndpoint> endpoints, SshRunnerOptions opts);

  ~Impl();

  std::string passphrase_for(const std::string& identity) const;

  size_t bastion_for(const NodeEndpoint& endpoint, const std::string& identity);

  std::string who(const Connection& c) const;

  // Does this request go through `sudo -n`? With become: sudo, only the
  // ones that need root (CommandRequest::as_root): the wire command, the
  // sudo-password diagnosis and the audit row all ask here.
  bool via_sudo(const CommandRequest& request) const { return options.become_sudo && request.as_root; }

  Bastion* bastion_of(const Connection& c);

  // The socket handed to libssh2: behind a bastion, the bastion's (libssh2
  // only checks it is non-blocking; the I/O goes through the tunnel).
  int session_socket(const Connection& c) const;

  // ---------------------------------------------------------------- lifecycle

  void teardown(Connection& c, bool polite);

  // The connection cannot be used: fail every queued job with the reason.
  void fail_connection(Connection& c, FailureKind kind, const std::string& message);

  void fail_queue(Connection& c);

  void record(const Connection& c, const CommandRequest& request, const CommandOutcome& outcome);

  // ---------------------------------------------------------------- connect

  void start_connect(Connection& c);

  void connect_failed(Connection& c, int error);

  // Frees c's place in the handshake window (logged in, or given up;
  // slow: the login took over a quarter of the connect timeout).
  void leave_window(Connection& c, bool logged_in, bool slow = false);

  // A refused or reset handshake: try again after a backoff, when attempts
  // are left. False when the failure stands.
  bool retry_handshake(Connection& c);

  void step_connecting(Connection& c);

  // Ask for the key type known_hosts has for this host first, so a host
  // with several keys presents the one we can verify.
  void prefer_known_key_types(Connection& c);

  void step_handshake(Connection& c);

  bool verify_host_key(Connection& c);

  void step_authenticating(Connection& c);

  int authenticate_with_agent(Connection& c);

  std::string auth_failure_message(Connection& c, int rc);

  // ---------------------------------------------------------------- commands

  void begin_job(Connection& c);

  bool session_would_block(Connection& c);

  // The session broke while a job ran: fail that job as "connection lost"
  // (it may have half-run) and reconnect for the next one.
  void lose_connection(Connection& c, const std::string& what);

  void step_job(Connection& c);

  // Reads what is available on stdout and stderr. False when the job ended
  // (connection lost) and must not be touched again.
  bool drain(Connection& c);

  void finish_job(Connection& c);

  void time_out_job(Connection& c);

  // ---------------------------------------------------------------- bastions

  std::string bastion_timeout_text() const;

  // A node behind a bastion: queue it for a channel once the bastion's
  // session is up (service_bastion connects it and opens the channels).
  void start_tunnel(Connection& c);

  // The bastion could not be reached or logged into: every node waiting
  // for it fails with its reason; later work fails the same way.
  void bastion_failed(Bastion& b);

  // The bastion's session broke: every channel through it is gone. A node
  // running a command loses it (it may have half-run); the others start
  // over, through a new session to the bastion when they have work.
  void lose_bastion(Bastion& b, const std::string& what);

  // Frees the channels of nodes that were torn down; libssh2 waits for the
  // bastion to confirm the close, so this takes a few rounds.
  bool drive_closing(Bastion& b);

  // Opens the channel to the next node in line (libssh2 keeps one open in
  // flight per session). True when something changed.
  bool drive_open(Bastion& b);

  // Drives a bastion: connects it when nodes wait for it, then moves bytes
  // between its channels and the nodes' sessions until nothing moves.
  void service_bastion(Bastion& b);

  bool bastion_has_work(const Bastion& b) const;

  void check_bastion_deadline(Bastion& b, Clock::time_point now);

  // ---------------------------------------------------------------- the loop

  void step(Connection& c);

  void check_deadlines(Connection& c, Clock::time_point now);

  static short poll_events(const Connection& c);
  void keep_alive(Connection& c, Clock::time_point now);
  static bool waits_for_input(const Connection& c);

  void close_released(Connection& c);
  void run();
};

}  // namespace gpuexpand
