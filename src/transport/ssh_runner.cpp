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
#include "gpuexpand/transport/known_hosts.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {

std::string wrap_for_become(const std::string& command, bool become_sudo) {
  // -n: never prompt (a prompt would hang the run); `sh -c` so the whole
  // command line, pipes and all, runs as root.
  return become_sudo ? "sudo -n -- sh -c " + shell_quote(command) : command;
}

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kStderrTailLines = 5;

void init_libssh2_once() {
  static std::once_flag once;
  std::call_once(once, [] { libssh2_init(0); });
}

std::string last_error(LIBSSH2_SESSION* session) {
  char* text = nullptr;
  int length = 0;
  libssh2_session_last_error(session, &text, &length, 0);
  return text ? std::string(text, static_cast<size_t>(length)) : "unknown libssh2 error";
}

const char* key_type_name(int type) {
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

std::string last_lines(const std::string& text, size_t count) {
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

std::string short_command(const std::string& command) {
  std::string one_line = command.substr(0, command.find('\n'));
  if (one_line.size() > 60 || one_line.size() < command.size()) one_line = one_line.substr(0, 57) + "...";
  return one_line;
}

// Whether an identity file holds an RSA key: Debian's libssh2 1.10 signs
// only with ssh-rsa (SHA-1), which OpenSSH 8.8+ refuses by default.
bool looks_like_rsa_key(const std::string& path) {
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
bool front_due(const std::deque<Job>& queue, Clock::time_point now) {
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
  bool active = false;  // counts against --parallel
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

bool same_bastion(const Connection& a, const NodeEndpoint& e, const std::string& identity) {
  return a.endpoint.address == e.address && a.endpoint.port == e.port && a.endpoint.user == e.user &&
         a.identity_file == identity;
}

}  // namespace

struct SshRunner::Impl {
  SshRunnerOptions options;
  std::vector<Connection> nodes;      // never resized after construction: tunnels point into it
  std::vector<Bastion> bastions;
  KnownHosts known_hosts;
  std::optional<std::string> known_hosts_error;

  Impl(std::vector<NodeEndpoint> endpoints, SshRunnerOptions opts) : options(std::move(opts)) {
    init_libssh2_once();
    nodes.resize(endpoints.size());
    for (size_t i = 0; i < endpoints.size(); ++i) {
      Connection& c = nodes[i];
      c.endpoint = std::move(endpoints[i]);
      c.index = i;
      const SshNodeRoute* route = i < options.routes.size() ? &options.routes[i] : nullptr;
      c.identity_file = route && !route->identity_file.empty() ? route->identity_file : options.identity_file;
      c.passphrase = passphrase_for(c.identity_file);
      const std::optional<NodeEndpoint>& bastion = route && route->bastion ? route->bastion : options.bastion;
      if (bastion) {
        const std::string& identity =
            route && !route->bastion_identity_file.empty() ? route->bastion_identity_file : options.identity_file;
        c.via = static_cast<int>(bastion_for(*bastion, identity));
        bastions[static_cast<size_t>(c.via)].members.push_back(i);
      }
    }
    auto loaded = KnownHosts::load(options.known_hosts);
    if (loaded) {
      known_hosts = std::move(loaded.value());
    } else {
      known_hosts_error = loaded.error().message;
    }
  }

  ~Impl() {
    // Nodes first: their channels live in the bastions' sessions.
    for (auto& c : nodes) teardown(c, true);
    for (auto& b : bastions) {
      for (LIBSSH2_CHANNEL* channel : b.closing) libssh2_channel_free(channel);
      b.closing.clear();
      teardown(b.link, true);
    }
  }

  std::string passphrase_for(const std::string& identity) const {
    const auto found = options.passphrases.find(identity);
    return found != options.passphrases.end() ? found->second : options.passphrase;
  }

  size_t bastion_for(const NodeEndpoint& endpoint, const std::string& identity) {
    for (size_t k = 0; k < bastions.size(); ++k) {
      if (same_bastion(bastions[k].link, endpoint, identity)) return k;
    }
    Bastion& b = bastions.emplace_back();
    b.link.endpoint = endpoint;
    if (b.link.endpoint.name.empty()) b.link.endpoint.name = endpoint.address;
    b.link.index = bastions.size() - 1;
    b.link.is_bastion = true;
    b.link.identity_file = identity;
    b.link.passphrase = passphrase_for(identity);
    return bastions.size() - 1;
  }

  std::string who(const Connection& c) const {
    const std::string name = c.endpoint.name == c.endpoint.address ? c.endpoint.name
                                                                   : c.endpoint.name + " (" + c.endpoint.address + ")";
    return c.is_bastion ? "bastion " + name : name;
  }

  Bastion* bastion_of(const Connection& c) {
    return c.via >= 0 ? &bastions[static_cast<size_t>(c.via)] : nullptr;
  }

  // The socket handed to libssh2: behind a bastion, the bastion's (libssh2
  // only checks it is non-blocking; the I/O goes through the tunnel).
  int session_socket(const Connection& c) const {
    return c.via >= 0 ? bastions[static_cast<size_t>(c.via)].link.fd : c.fd;
  }

  // ---------------------------------------------------------------- lifecycle

  void teardown(Connection& c, bool polite) {
    // Behind a bastion: make the tunnel fail first, so that freeing the
    // session does not wait for an answer that nobody will carry.
    if (c.tunnel) c.tunnel->dead = true;
    const bool tunnelled = c.via >= 0;
    if (c.channel) {
      libssh2_channel_free(c.channel);
      c.channel = nullptr;
    }
    c.channel_stage = ChannelStage::Done;
    if (c.agent) {
      libssh2_agent_disconnect(c.agent);
      libssh2_agent_free(c.agent);
      c.agent = nullptr;
      c.agent_identity = nullptr;
    }
    if (c.session) {
      // A polite disconnect may block for a round trip; at the end of a run
      // that is fine, after an error it is not worth it.
      if (polite && c.stage == Stage::Ready && !tunnelled) {
        libssh2_session_set_blocking(c.session, 1);
        libssh2_session_set_timeout(c.session, 2000);
        libssh2_session_disconnect(c.session, "gpuexpand done");
      }
      // A dead socket makes libssh2 free at once instead of returning
      // EAGAIN while it waits for channels to close (and leaking).
      if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
      libssh2_session_free(c.session);
      c.session = nullptr;
    }
    if (c.tunnel) {
      if (c.tunnel->channel) {
        Bastion& b = bastions[static_cast<size_t>(c.via)];
        if (b.link.session) b.closing.push_back(c.tunnel->channel);
      }
      c.tunnel.reset();
    }
    if (c.via >= 0 && (c.stage == Stage::WaitingForBastion || c.stage == Stage::Tunnelling)) {
      Bastion& b = bastions[static_cast<size_t>(c.via)];
      std::erase(b.open_queue, c.index);
      if (b.opening == c.index) b.opening_abandoned = true;
    }
    if (c.is_bastion) bastions[c.index].closing.clear();  // freed with the session
    if (c.fd >= 0) {
      ::close(c.fd);
      c.fd = -1;
    }
    if (c.stage != Stage::Failed) c.stage = Stage::Idle;
  }

  // The connection cannot be used: fail every queued job with the reason.
  void fail_connection(Connection& c, FailureKind kind, const std::string& message) {
    c.failure = kind;
    c.failure_message = message;
    teardown(c, false);
    c.stage = Stage::Failed;
    fail_queue(c);
  }

  void fail_queue(Connection& c) {
    // Only the jobs queued now: a callback that submits again (a reboot
    // wait retrying) starts a fresh connection attempt instead.
    std::deque<Job> failing;
    failing.swap(c.queue);
    while (!failing.empty()) {
      Job job = std::move(failing.front());
      failing.pop_front();
      CommandOutcome outcome;
      outcome.failure = c.failure;
      outcome.message = c.failure_message;
      if (!job.connect_only) record(c, job.request, outcome);
      if (job.done) job.done(outcome);
    }
    c.active = false;
  }

  void record(const Connection& c, const CommandRequest& request, const CommandOutcome& outcome) {
    if (!options.audit) return;
    options.audit({c.endpoint.name, request.sensitive ? "<sensitive>" : request.command, outcome.exit_code,
                   outcome.failure, outcome.duration});
  }

  // ---------------------------------------------------------------- connect

  void start_connect(Connection& c) {
    if (known_hosts_error) {
      fail_connection(c, FailureKind::HostKeyUnknown, who(c) + ": " + *known_hosts_error);
      return;
    }
    if (c.via >= 0) {
      start_tunnel(c);
      return;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(c.endpoint.port);
    const int rc = ::getaddrinfo(c.endpoint.address.c_str(), port.c_str(), &hints, &found);
    if (rc != 0 || !found) {
      fail_connection(c, FailureKind::Unresolvable, who(c) + ": cannot resolve: " + gai_strerror(rc));
      return;
    }
    c.fd = ::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, found->ai_protocol);
    if (c.fd < 0) {
      ::freeaddrinfo(found);
      fail_connection(c, FailureKind::Protocol, who(c) + ": socket: " + std::strerror(errno));
      return;
    }
    const int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int connected = ::connect(c.fd, found->ai_addr, found->ai_addrlen);
    const int saved = errno;
    ::freeaddrinfo(found);
    c.connect_deadline = Clock::now() + options.connect_timeout;
    c.stage = Stage::Connecting;
    if (connected != 0 && saved != EINPROGRESS) {
      connect_failed(c, saved);
    }
  }

  void connect_failed(Connection& c, int error) {
    const std::string port = c.endpoint.port == 22 ? "" : " port " + std::to_string(c.endpoint.port);
    if (error == ECONNREFUSED) {
      fail_connection(c, FailureKind::Refused, who(c) + ": connection refused" + port);
    } else if (error == ETIMEDOUT) {
      fail_connection(c, FailureKind::ConnectTimeout, who(c) + ": connection timed out");
    } else {
      fail_connection(c, FailureKind::Refused, who(c) + ": cannot connect" + port + ": " + std::strerror(error));
    }
  }

  void step_connecting(Connection& c) {
    if (!(c.revents & (POLLOUT | POLLERR | POLLHUP))) return;
    int error = 0;
    socklen_t length = sizeof error;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      connect_failed(c, error);
      return;
    }
    c.session = libssh2_session_init();
    if (!c.session) {
      fail_connection(c, FailureKind::Protocol, who(c) + ": cannot create an SSH session");
      return;
    }
    libssh2_session_set_blocking(c.session, 0);
    prefer_known_key_types(c);
    c.stage = Stage::Handshake;
    step_handshake(c);
  }

  // Ask for the key type known_hosts has for this host first, so a host
  // with several keys presents the one we can verify.
  void prefer_known_key_types(Connection& c) {
    const auto types = known_hosts.key_types_for(c.endpoint.address, c.endpoint.port);
    if (!types.empty()) {
      std::string preference;
      for (const auto& t : types) preference += (preference.empty() ? "" : ",") + t;
      libssh2_session_method_pref(c.session, LIBSSH2_METHOD_HOSTKEY, preference.c_str());
    }
  }

  void step_handshake(Connection& c) {
    const int rc = libssh2_session_handshake(c.session, session_socket(c));
    if (rc == LIBSSH2_ERROR_EAGAIN) return;
    if (rc != 0) {
      fail_connection(c, FailureKind::Protocol, who(c) + ": SSH handshake failed: " + last_error(c.session));
      return;
    }
    if (!verify_host_key(c)) return;
    if (options.keepalive_interval_s > 0) {
      libssh2_keepalive_config(c.session, 1, static_cast<unsigned>(options.keepalive_interval_s));
    }
    c.stage = Stage::Authenticating;
    step_authenticating(c);
  }

  bool verify_host_key(Connection& c) {
    size_t length = 0;
    int type = 0;
    const char* key = libssh2_session_hostkey(c.session, &length, &type);
    if (!key) {
      fail_connection(c, FailureKind::Protocol, who(c) + ": the server sent no host key");
      return false;
    }
    const std::string blob(key, length);
    const std::string type_name = key_type_name(type);
    const HostKeyCheck check = known_hosts.check(c.endpoint.address, c.endpoint.port, type_name, blob);
    switch (check.verdict) {
      case HostKeyVerdict::Match:
        return true;
      case HostKeyVerdict::Revoked:
        fail_connection(c, FailureKind::HostKeyChanged,
                        who(c) + ": the host key " + ssh_fingerprint(blob) + " is marked @revoked in " +
                            options.known_hosts);
        return false;
      case HostKeyVerdict::Changed: {
        std::string known;
        for (const auto* entry : check.known) {
          if (entry->revoked) continue;
          known += (known.empty() ? "" : ", ") + entry->key_type + " " + ssh_fingerprint(entry->key_blob) +
                   " (" + options.known_hosts + ":" + std::to_string(entry->line) + ")";
        }
        fail_connection(c, FailureKind::HostKeyChanged,
                        who(c) + ": HOST KEY CHANGED: known_hosts has " + known + ", the host presented " +
                            type_name + " " + ssh_fingerprint(blob) +
                            "; refusing to connect (if the node was reinstalled, remove the old line)");
        return false;
      }
      case HostKeyVerdict::Unknown:
        break;
    }
    if (!options.accept_new_host_keys) {
      fail_connection(c, FailureKind::HostKeyUnknown,
                      who(c) + ": host key " + type_name + " " + ssh_fingerprint(blob) + " is not in " +
                          options.known_hosts + " (verify it, then add it, or pass --accept-new-host-keys)");
      return false;
    }
    const std::string line = known_hosts_line(c.endpoint.address, c.endpoint.port, type_name, blob);
    if (auto appended = append_known_host(options.known_hosts, line); !appended) {
      fail_connection(c, FailureKind::HostKeyUnknown, who(c) + ": " + appended.error().message);
      return false;
    }
    // Other nodes may share this key (a cloned image): read the file back.
    if (auto reloaded = KnownHosts::load(options.known_hosts)) known_hosts = std::move(reloaded.value());
    return true;
  }

  void step_authenticating(Connection& c) {
    const std::string& user = c.endpoint.user;
    const auto user_length = static_cast<unsigned>(user.size());
    int rc = 0;
    if (!c.identity_file.empty()) {
      rc = libssh2_userauth_publickey_fromfile_ex(c.session, user.c_str(), user_length, nullptr,
                                                  c.identity_file.c_str(),
                                                  c.passphrase.empty() ? nullptr : c.passphrase.c_str());
    } else {
      rc = authenticate_with_agent(c);
    }
    if (rc == LIBSSH2_ERROR_EAGAIN) return;
    if (rc != 0) {
      fail_connection(c, FailureKind::AuthFailed, auth_failure_message(c, rc));
      return;
    }
    c.stage = Stage::Ready;
  }

  int authenticate_with_agent(Connection& c) {
    if (!c.agent) {
      c.agent = libssh2_agent_init(c.session);
      if (!c.agent || libssh2_agent_connect(c.agent) != 0 || libssh2_agent_list_identities(c.agent) != 0) {
        return LIBSSH2_ERROR_AGENT_PROTOCOL;
      }
      if (libssh2_agent_get_identity(c.agent, &c.agent_identity, nullptr) != 0) return LIBSSH2_ERROR_AGENT_PROTOCOL;
    }
    for (;;) {
      const int rc = libssh2_agent_userauth(c.agent, c.endpoint.user.c_str(), c.agent_identity);
      if (rc == 0 || rc == LIBSSH2_ERROR_EAGAIN) return rc;
      libssh2_agent_publickey* previous = c.agent_identity;
      if (libssh2_agent_get_identity(c.agent, &c.agent_identity, previous) != 0) return rc;
    }
  }

  std::string auth_failure_message(Connection& c, int rc) {
    const std::string base = who(c) + ": authentication as " + c.endpoint.user + " failed: ";
    if (c.identity_file.empty()) {
      return base + (rc == LIBSSH2_ERROR_AGENT_PROTOCOL ? "no identity_file and no usable ssh-agent"
                                                        : "the agent's keys were refused");
    }
    if (rc == LIBSSH2_ERROR_FILE) {
      return base + "cannot use the key " + c.identity_file +
             " (missing, unreadable, or a wrong passphrase: " + last_error(c.session) + ")";
    }
    if (looks_like_rsa_key(c.identity_file)) {
      return base + "the server refused the RSA key " + c.identity_file +
             "; this libssh2 signs RSA only with SHA-1 (ssh-rsa), which modern sshd rejects: use an ed25519 or "
             "ECDSA key";
    }
    return base + "the key " + c.identity_file + " was refused (is it in ~" + c.endpoint.user +
           "/.ssh/authorized_keys?)";
  }

  // ---------------------------------------------------------------- commands

  void begin_job(Connection& c) {
    Job& job = c.queue.front();
    c.channel_stage = ChannelStage::Opening;
    c.wire_command = wrap_for_become(job.request.command, options.become_sudo);
    c.written = 0;
    c.out.clear();
    c.err.clear();
    c.started = Clock::now();
    const milliseconds timeout = job.request.timeout.count() > 0 ? job.request.timeout : options.command_timeout;
    c.deadline = c.started + timeout;
  }

  bool session_would_block(Connection& c) {
    return libssh2_session_last_errno(c.session) == LIBSSH2_ERROR_EAGAIN;
  }

  // The session broke while a job ran: fail that job as "connection lost"
  // (it may have half-run) and reconnect for the next one.
  void lose_connection(Connection& c, const std::string& what) {
    Job job = std::move(c.queue.front());
    c.queue.pop_front();
    CommandOutcome outcome;
    outcome.failure = FailureKind::ConnectionLost;
    outcome.message = who(c) + ": connection lost while running `" + short_command(job.request.command) +
                      "`: " + what;
    outcome.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - c.started);
    teardown(c, false);
    record(c, job.request, outcome);
    if (job.done) job.done(outcome);
  }

  void step_job(Connection& c) {
    Job& job = c.queue.front();
    for (;;) {
      switch (c.channel_stage) {
        case ChannelStage::Opening:
          c.channel = libssh2_channel_open_session(c.session);
          if (!c.channel) {
            if (session_would_block(c)) return;
            lose_connection(c, "cannot open a channel: " + last_error(c.session));
            return;
          }
          c.channel_stage = ChannelStage::Executing;
          break;
        case ChannelStage::Executing: {
          const int rc = libssh2_channel_exec(c.channel, c.wire_command.c_str());
          if (rc == LIBSSH2_ERROR_EAGAIN) return;
          if (rc != 0) {
            lose_connection(c, "exec refused: " + last_error(c.session));
            return;
          }
          c.channel_stage = ChannelStage::Writing;
          break;
        }
        case ChannelStage::Writing: {
          // Read while writing: a command that prints before it reads all
          // its input must not deadlock on a full window.
          if (!drain(c)) return;
          const std::string& data = job.request.stdin_data;
          while (c.written < data.size()) {
            const ssize_t n = libssh2_channel_write(c.channel, data.data() + c.written, data.size() - c.written);
            if (n == LIBSSH2_ERROR_EAGAIN) return;
            if (n < 0) {
              // The command may have exited without reading its input.
              if (libssh2_channel_eof(c.channel)) break;
              lose_connection(c, "writing stdin: " + last_error(c.session));
              return;
            }
            c.written += static_cast<size_t>(n);
          }
          c.channel_stage = ChannelStage::SendingEof;
          break;
        }
        case ChannelStage::SendingEof: {
          const int rc = libssh2_channel_send_eof(c.channel);
          if (rc == LIBSSH2_ERROR_EAGAIN) return;
          c.channel_stage = ChannelStage::Reading;
          break;
        }
        case ChannelStage::Reading:
          if (!drain(c)) return;
          if (!libssh2_channel_eof(c.channel)) return;
          c.channel_stage = ChannelStage::Closing;
          break;
        case ChannelStage::Closing: {
          int rc = libssh2_channel_close(c.channel);
          if (rc == 0) rc = libssh2_channel_wait_closed(c.channel);
          if (rc == LIBSSH2_ERROR_EAGAIN) return;
          finish_job(c);
          return;
        }
        case ChannelStage::Done:
          return;
      }
    }
  }

  // Reads what is available on stdout and stderr. False when the job ended
  // (connection lost) and must not be touched again.
  bool drain(Connection& c) {
    char buffer[32768];
    for (int stream : {0, SSH_EXTENDED_DATA_STDERR}) {
      for (;;) {
        const ssize_t n = libssh2_channel_read_ex(c.channel, stream, buffer, sizeof buffer);
        if (n > 0) {
          (stream == 0 ? c.out : c.err).append(buffer, static_cast<size_t>(n));
          continue;
        }
        if (n == 0 || n == LIBSSH2_ERROR_EAGAIN) break;
        lose_connection(c, "reading output: " + last_error(c.session));
        return false;
      }
    }
    return true;
  }

  void finish_job(Connection& c) {
    Job job = std::move(c.queue.front());
    c.queue.pop_front();
    CommandOutcome outcome;
    outcome.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - c.started);
    outcome.out = std::move(c.out);
    outcome.err = std::move(c.err);
    char* signal = nullptr;
    libssh2_channel_get_exit_signal(c.channel, &signal, nullptr, nullptr, nullptr, nullptr, nullptr);
    outcome.exit_code = signal ? 128 : libssh2_channel_get_exit_status(c.channel);
    libssh2_channel_free(c.channel);
    c.channel = nullptr;
    c.channel_stage = ChannelStage::Done;
    const std::string shown = job.request.sensitive ? "<sensitive command>" : short_command(job.request.command);
    if (signal) {
      outcome.failure = FailureKind::CommandFailed;
      outcome.message = who(c) + ": `" + shown + "` was killed by SIG" + signal;
      libssh2_free(c.session, signal);
    } else if (outcome.exit_code != 0) {
      const bool sudo_password = options.become_sudo && outcome.exit_code == 1 &&
                                 outcome.err.find("sudo: a password is required") != std::string::npos;
      outcome.failure = sudo_password ? FailureKind::SudoPassword : FailureKind::CommandFailed;
      outcome.message = sudo_password
                            ? who(c) + ": sudo needs a password for " + c.endpoint.user +
                                  " (become: sudo requires NOPASSWD sudo on the node)"
                            : who(c) + ": `" + shown + "` exited " + std::to_string(outcome.exit_code) +
                                  (outcome.err.empty() ? "" : ": " + last_lines(outcome.err, kStderrTailLines));
    }
    record(c, job.request, outcome);
    if (job.done) job.done(outcome);
  }

  void time_out_job(Connection& c) {
    Job job = std::move(c.queue.front());
    c.queue.pop_front();
    CommandOutcome outcome;
    outcome.failure = FailureKind::CommandTimeout;
    outcome.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - c.started);
    outcome.out = std::move(c.out);
    outcome.err = std::move(c.err);
    outcome.message = who(c) + ": `" + (job.request.sensitive ? "<sensitive command>" : short_command(job.request.command)) +
                      "` timed out after " + std::to_string(outcome.duration.count() / 1000) + " s";
    // The remote command may still run; the session is not trusted further.
    teardown(c, false);
    record(c, job.request, outcome);
    if (job.done) job.done(outcome);
  }

  // ---------------------------------------------------------------- bastions

  std::string bastion_timeout_text() const {
    return std::to_string(options.connect_timeout.count() / 1000) + " s";
  }

  // A node behind a bastion: queue it for a channel once the bastion's
  // session is up (service_bastion connects it and opens the channels).
  void start_tunnel(Connection& c) {
    Bastion& b = *bastion_of(c);
    if (b.link.stage == Stage::Failed) {
      fail_connection(c, b.link.failure, who(c) + ": via " + b.link.failure_message);
      return;
    }
    c.stage = Stage::WaitingForBastion;
    b.open_queue.push_back(c.index);
  }

  // The bastion could not be reached or logged into: every node waiting
  // for it fails with its reason; later work fails the same way.
  void bastion_failed(Bastion& b) {
    b.open_queue.clear();
    for (size_t m : b.members) {
      Connection& c = nodes[m];
      if (c.stage == Stage::WaitingForBastion || (c.stage == Stage::Idle && !c.queue.empty())) {
        c.stage = Stage::Idle;
        fail_connection(c, b.link.failure, who(c) + ": via " + b.link.failure_message);
      }
    }
  }

  // The bastion's session broke: every channel through it is gone. A node
  // running a command loses it (it may have half-run); the others start
  // over, through a new session to the bastion when they have work.
  void lose_bastion(Bastion& b, const std::string& what) {
    const std::string reason = "the connection to " + who(b.link) + " was lost: " + what;
    for (size_t m : b.members) {
      Connection& c = nodes[m];
      if (c.tunnel) c.tunnel->channel = nullptr;  // freed with the bastion's session
    }
    b.opening.reset();
    b.open_queue.clear();
    b.closing.clear();
    for (size_t m : b.members) {
      Connection& c = nodes[m];
      if (c.stage == Stage::Ready && !c.queue.empty() && c.channel_stage != ChannelStage::Done) {
        lose_connection(c, reason);
      } else if (c.stage != Stage::Failed && c.stage != Stage::Idle) {
        teardown(c, false);
      }
    }
    teardown(b.link, false);
  }

  // Frees the channels of nodes that were torn down; libssh2 waits for the
  // bastion to confirm the close, so this takes a few rounds.
  bool drive_closing(Bastion& b) {
    const size_t before = b.closing.size();
    std::erase_if(b.closing, [](LIBSSH2_CHANNEL* channel) { return libssh2_channel_free(channel) != LIBSSH2_ERROR_EAGAIN; });
    return b.closing.size() != before;
  }

  // Opens the channel to the next node in line (libssh2 keeps one open in
  // flight per session). True when something changed.
  bool drive_open(Bastion& b) {
    Connection& link = b.link;
    if (!b.opening) {
      while (!b.open_queue.empty() && !b.opening) {
        const size_t m = b.open_queue.front();
        b.open_queue.pop_front();
        Connection& c = nodes[m];
        if (c.stage != Stage::WaitingForBastion) continue;
        b.opening = m;
        b.opening_abandoned = false;
        b.open_host = c.endpoint.address;
        b.open_port = c.endpoint.port;
        c.stage = Stage::Tunnelling;
        c.connect_deadline = Clock::now() + options.connect_timeout;
      }
      if (!b.opening) return false;
    }
    // The originator address is informational; OpenSSH logs it.
    LIBSSH2_CHANNEL* channel =
        libssh2_channel_direct_tcpip_ex(link.session, b.open_host.c_str(), b.open_port, "127.0.0.1", 0);
    const size_t m = *b.opening;
    if (!channel) {
      const int error = libssh2_session_last_errno(link.session);
      if (error == LIBSSH2_ERROR_EAGAIN) return false;
      const bool abandoned = b.opening_abandoned;
      b.opening.reset();
      if (error == LIBSSH2_ERROR_CHANNEL_FAILURE || error == LIBSSH2_ERROR_TIMEOUT) {
        Connection& c = nodes[m];
        if (!abandoned && c.stage == Stage::Tunnelling) {
          const std::string port = c.endpoint.port == 22 ? "" : " port " + std::to_string(c.endpoint.port);
          fail_connection(c, error == LIBSSH2_ERROR_TIMEOUT ? FailureKind::ConnectTimeout : FailureKind::Refused,
                          who(c) + ": the " + who(link) + " could not open a connection to " + c.endpoint.address +
                              port + " (" + last_error(link.session) +
                              ": the node refused or is unreachable from the bastion, or the bastion forbids TCP "
                              "forwarding)");
        }
        return true;
      }
      lose_bastion(b, "opening a channel: " + last_error(link.session));
      return true;
    }
    b.opening.reset();
    Connection& c = nodes[m];
    if (b.opening_abandoned || c.stage != Stage::Tunnelling) {
      b.closing.push_back(channel);
      return true;
    }
    c.tunnel = std::make_unique<detail::Tunnel>();
    c.tunnel->channel = channel;
    c.tunnel->transport_fd = link.fd;
    c.session = detail::open_tunnelled_session(c.tunnel.get());
    if (!c.session) {
      fail_connection(c, FailureKind::Protocol, who(c) + ": cannot create an SSH session");
      return true;
    }
    prefer_known_key_types(c);
    c.stage = Stage::Handshake;
    step_handshake(c);
    return true;
  }

  // Drives a bastion: connects it when nodes wait for it, then moves bytes
  // between its channels and the nodes' sessions until nothing moves.
  void service_bastion(Bastion& b) {
    Connection& link = b.link;
    switch (link.stage) {
      case Stage::Idle:
        if (!b.open_queue.empty()) start_connect(link);
        break;
      case Stage::Connecting: step_connecting(link); break;
      case Stage::Handshake: step_handshake(link); break;
      case Stage::Authenticating: step_authenticating(link); break;
      default: break;
    }
    link.revents = 0;
    if (link.stage == Stage::Failed) {
      bastion_failed(b);
      return;
    }
    if (link.stage != Stage::Ready) return;

    for (int round = 0; round < 10'000; ++round) {
      bool progress = drive_closing(b);
      progress = drive_open(b) || progress;
      if (link.stage != Stage::Ready) return;
      b.want_write = false;
      bool drained = false;
      for (size_t m : b.members) {
        Connection& c = nodes[m];
        if (!c.tunnel || !c.tunnel->channel) continue;
        const detail::PumpResult pumped = detail::pump_tunnel(*c.tunnel, drained);
        drained = drained || pumped.read_socket;
        if (pumped.status == detail::PumpStatus::SessionBroken) {
          lose_bastion(b, last_error(link.session));
          return;
        }
        if (pumped.status == detail::PumpStatus::TunnelBroken) {
          c.tunnel->eof = true;  // the node's session fails on its next read
          progress = true;
        }
        progress = progress || pumped.progress;
        b.want_write = b.want_write || pumped.want_write;
      }
      // Let the nodes' sessions use what arrived and queue what they send.
      for (size_t m : b.members) {
        Connection& c = nodes[m];
        if (!c.tunnel || !c.session) continue;
        const size_t before = c.tunnel->transferred;
        const Stage stage = c.stage;
        step(c);
        if (!c.tunnel || c.tunnel->transferred != before || c.stage != stage) progress = true;
      }
      if (!progress) {
        // Data libssh2 already read for a channel does not wake poll().
        for (size_t m : b.members) {
          const Connection& c = nodes[m];
          if (c.tunnel && detail::tunnel_has_unread(*c.tunnel)) progress = true;
        }
      }
      if (!progress) break;
    }
    if (link.session && (libssh2_session_block_directions(link.session) & LIBSSH2_SESSION_BLOCK_OUTBOUND)) {
      b.want_write = true;
    }
  }

  bool bastion_has_work(const Bastion& b) const {
    if (!b.open_queue.empty() || b.opening || !b.closing.empty()) return true;
    return std::any_of(b.members.begin(), b.members.end(), [&](size_t m) { return nodes[m].tunnel != nullptr; });
  }

  void check_bastion_deadline(Bastion& b, Clock::time_point now) {
    Connection& link = b.link;
    const bool connecting =
        link.stage == Stage::Connecting || link.stage == Stage::Handshake || link.stage == Stage::Authenticating;
    if (connecting && now > link.connect_deadline) {
      const char* where = link.stage == Stage::Connecting ? "no TCP connection" : "no SSH handshake and login";
      fail_connection(link, FailureKind::ConnectTimeout,
                      who(link) + ": connection timed out (" + where + " within " + bastion_timeout_text() + ")");
      bastion_failed(b);
    }
  }

  // ---------------------------------------------------------------- the loop

  void step(Connection& c) {
    switch (c.stage) {
      case Stage::Connecting: step_connecting(c); break;
      case Stage::Handshake: step_handshake(c); break;
      case Stage::Authenticating: step_authenticating(c); break;
      case Stage::Ready:
        // connect(): the session is up, which is all that was asked.
        while (!c.queue.empty() && c.channel_stage == ChannelStage::Done && c.queue.front().connect_only) {
          Job job = std::move(c.queue.front());
          c.queue.pop_front();
          CommandOutcome connected;
          connected.exit_code = 0;
          if (job.done) job.done(connected);
        }
        if (!c.queue.empty()) {
          if (c.channel_stage == ChannelStage::Done) {
            // An inactive node (its bastion steps every tunnelled member)
            // waits for a --parallel slot before it starts a command.
            if (!c.active || !front_due(c.queue, Clock::now())) break;
            begin_job(c);
          }
          step_job(c);
        }
        break;
      case Stage::Idle:
        // First use, or the session was dropped after a timeout or a lost
        // connection: (re)connect for the queued work.
        if (front_due(c.queue, Clock::now())) start_connect(c);
        break;
      case Stage::WaitingForBastion:
      case Stage::Tunnelling:
        break;  // the bastion moves these on (service_bastion)
      case Stage::Failed:
        break;
    }
  }

  void check_deadlines(Connection& c, Clock::time_point now) {
    const bool connecting = c.stage == Stage::Connecting || c.stage == Stage::Tunnelling ||
                            c.stage == Stage::Handshake || c.stage == Stage::Authenticating;
    if (connecting && now > c.connect_deadline) {
      std::string where = c.stage == Stage::Connecting ? "no TCP connection" : "no SSH handshake and login";
      if (c.stage == Stage::Tunnelling) where = "the " + who(bastion_of(c)->link) + " did not connect to it";
      fail_connection(c, FailureKind::ConnectTimeout,
                      who(c) + ": connection timed out (" + where + " within " +
                          std::to_string(options.connect_timeout.count() / 1000) + " s)");
    } else if (c.stage == Stage::Ready && !c.queue.empty() && c.channel_stage != ChannelStage::Done && now > c.deadline) {
      time_out_job(c);
    }
  }

  static short poll_events(const Connection& c) {
    if (c.stage == Stage::Connecting) return POLLOUT;
    short events = 0;
    if (c.session) {
      const int directions = libssh2_session_block_directions(c.session);
      if (directions & LIBSSH2_SESSION_BLOCK_INBOUND) events |= POLLIN;
      if (directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) events |= POLLOUT;
    }
    return events == 0 ? POLLIN : events;
  }

  void run() {
    for (;;) {
      // Start or continue nodes up to the parallelism limit.
      size_t active = 0;
      for (auto& c : nodes) {
        if (c.active && c.queue.empty()) c.active = false;
        if (c.active) ++active;
      }
      for (auto& c : nodes) {
        if (active >= options.parallel) break;
        if (c.active || c.queue.empty()) continue;
        c.active = true;
        ++active;
        if (c.stage == Stage::Failed) fail_queue(c);
      }
      bool pending = false;
      for (auto& c : nodes) pending = pending || !c.queue.empty();
      if (!pending) return;

      // Advance everything that can move without waiting.
      for (auto& c : nodes) {
        if (c.active) step(c);
        c.revents = 0;
      }
      for (auto& b : bastions) service_bastion(b);

      std::vector<pollfd> fds;
      std::vector<size_t> owners;  // node index, or nodes.size() + bastion index
      Clock::time_point next_deadline = Clock::now() + milliseconds(1000);
      bool tunnels_open = false;
      for (size_t i = 0; i < nodes.size(); ++i) {
        Connection& c = nodes[i];
        if (!c.active || c.queue.empty()) continue;
        if (c.stage == Stage::Tunnelling) next_deadline = std::min(next_deadline, c.connect_deadline);
        if (c.via >= 0 && c.session) {
          next_deadline = std::min(next_deadline, c.stage != Stage::Ready ? c.connect_deadline : c.deadline);
        }
        if (c.fd < 0) continue;
        fds.push_back({c.fd, poll_events(c), 0});
        owners.push_back(i);
        const bool connecting = c.stage != Stage::Ready;
        next_deadline = std::min(next_deadline, connecting ? c.connect_deadline : c.deadline);
      }
      for (size_t k = 0; k < bastions.size(); ++k) {
        Bastion& b = bastions[k];
        if (b.link.fd < 0 || !bastion_has_work(b)) continue;
        short events = poll_events(b.link);
        if (b.link.stage == Stage::Ready) {
          events = POLLIN;  // the nodes' sessions wait for data through it
          if (b.want_write) events |= POLLOUT;
          tunnels_open = true;
        } else {
          next_deadline = std::min(next_deadline, b.link.connect_deadline);
        }
        fds.push_back({b.link.fd, events, 0});
        owners.push_back(nodes.size() + k);
      }
      for (auto& c : nodes) {
        if (c.active && !c.queue.empty() && c.channel_stage == ChannelStage::Done) {
          next_deadline = std::min(next_deadline, c.queue.front().not_before);
        }
      }
      const auto wait = std::chrono::duration_cast<milliseconds>(next_deadline - Clock::now());
      // Through a bastion, wake up now and then anyway: libssh2 can hold
      // data for one channel that it read while serving another.
      const int timeout = static_cast<int>(std::clamp<long>(wait.count(), 0, tunnels_open ? 200 : 1000));
      if (fds.empty()) {
        // The steps above may have finished the last job: then there is
        // nothing to wait for, and sleeping here would add up to a second
        // to every run (the loop's top returns once no queue holds work).
        // The same for work a callback just gave a node that is not active
        // yet (the controller after a node's probe): the loop's top starts it.
        bool waiting = false, startable = false;
        size_t running = 0;
        for (const auto& c : nodes) {
          waiting = waiting || !c.queue.empty();
          startable = startable || (!c.active && !c.queue.empty());
          running += (c.active && !c.queue.empty()) ? 1u : 0u;
        }
        if (!waiting || (startable && running < options.parallel)) continue;
        // Only delayed work: sleep until the first is due.
        ::poll(nullptr, 0, timeout);
      } else {
        const int ready = ::poll(fds.data(), fds.size(), timeout);
        if (ready < 0 && errno != EINTR) return;
        for (size_t k = 0; k < fds.size(); ++k) {
          Connection& owner = owners[k] < nodes.size() ? nodes[owners[k]] : bastions[owners[k] - nodes.size()].link;
          owner.revents = fds[k].revents;
        }
      }
      const auto now = Clock::now();
      for (auto& c : nodes) {
        if (c.revents) step(c);
        if (c.active) check_deadlines(c, now);
        if (c.session && c.stage == Stage::Ready && options.keepalive_interval_s > 0) {
          int next = 0;
          libssh2_keepalive_send(c.session, &next);
        }
      }
      for (auto& b : bastions) {
        service_bastion(b);
        check_bastion_deadline(b, now);
        if (b.link.session && b.link.stage == Stage::Ready && options.keepalive_interval_s > 0) {
          int next = 0;
          libssh2_keepalive_send(b.link.session, &next);
        }
      }
    }
  }
};

SshRunner::SshRunner(std::vector<NodeEndpoint> nodes, SshRunnerOptions options)
    : impl_(std::make_unique<Impl>(std::move(nodes), std::move(options))) {}

SshRunner::~SshRunner() = default;

void SshRunner::submit(size_t node, CommandRequest request, Callback done) {
  Connection& c = impl_->nodes.at(node);
  // A failure is not for ever: work submitted after it tries again (a node
  // coming back from a reboot refuses connections for a while).
  if (c.stage == Stage::Failed && c.queue.empty()) {
    c.stage = Stage::Idle;
    c.failure = FailureKind::None;
    c.failure_message.clear();
  }
  const auto not_before = Clock::now() + request.delay;
  c.queue.push_back({std::move(request), std::move(done), not_before});
}

void SshRunner::connect(size_t node) {
  submit(node, CommandRequest{}, nullptr);
  impl_->nodes.at(node).queue.back().connect_only = true;
}

void SshRunner::run() { impl_->run(); }

}  // namespace gpuexpand
