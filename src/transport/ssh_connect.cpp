#include "ssh_runner_impl.hpp"

#include <cstring>

namespace gpuexpand {

void SshRunner::Impl::start_connect(Connection& c) {
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
  c.socket_serial = ++sockets_opened;
  const int one = 1;
  ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (options.keepalive_interval_s > 0) {
    // A link cut mid-command sends no RST: without this the session would
    // sit until the command's deadline (15 minutes by default). With a
    // keepalive every interval, data stays unacknowledged for this long
    // only when the path is gone, and the kernel then fails the socket.
    const unsigned user_timeout_ms = 3u * 1000u * static_cast<unsigned>(options.keepalive_interval_s);
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  }
  const int connected = ::connect(c.fd, found->ai_addr, found->ai_addrlen);
  const int saved = errno;
  ::freeaddrinfo(found);
  c.connect_deadline = Clock::now() + options.connect_timeout;
  c.stage = Stage::Connecting;
  window.started();
  c.in_window = true;
  if (connected != 0 && saved != EINPROGRESS) {
    connect_failed(c, saved);
  }
}

void SshRunner::Impl::leave_window(Connection& c, bool logged_in, bool slow) {
  if (!c.in_window) return;
  c.in_window = false;
  window.finished(logged_in, slow);
}

bool SshRunner::Impl::retry_handshake(Connection& c) {
  if (c.via >= 0 || c.attempts + 1 >= options.handshake_attempts) return false;
  ++c.attempts;
  ++handshake_retries;
  window.overloaded();
  teardown(c, false);  // back to Idle, its place in the window freed
  jitter_state ^= jitter_state << 13;
  jitter_state ^= jitter_state >> 17;
  jitter_state ^= jitter_state << 5;
  const double jitter = static_cast<double>(jitter_state % 1000) / 1000.0;
  c.retry_at = Clock::now() + milliseconds(handshake_retry_delay_ms(c.attempts, jitter));
  return true;
}

void SshRunner::Impl::connect_failed(Connection& c, int error) {
  // Nothing listening (sshd restarting) or the connection dropped at once
  // (a full MaxStartups): worth another try after a pause.
  if ((error == ECONNREFUSED || error == ECONNRESET) && retry_handshake(c)) return;
  const std::string port = c.endpoint.port == 22 ? "" : " port " + std::to_string(c.endpoint.port);
  if (error == ECONNREFUSED) {
    fail_connection(c, FailureKind::Refused, who(c) + ": connection refused" + port);
  } else if (error == ETIMEDOUT) {
    fail_connection(c, FailureKind::ConnectTimeout, who(c) + ": connection timed out");
  } else {
    fail_connection(c, FailureKind::Refused, who(c) + ": cannot connect" + port + ": " + std::strerror(error));
  }
}

void SshRunner::Impl::step_connecting(Connection& c) {
  if (!(c.revents & (POLLOUT | POLLERR | POLLHUP))) return;
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) {
    connect_failed(c, error);
    return;
  }
  c.reader = std::make_unique<detail::SocketReader>();
  c.reader->fd = c.fd;
  c.reader->system_reads = &loop_counts.socket_reads;
  c.session = detail::open_direct_session(c.reader.get());
  if (!c.session) {
    fail_connection(c, FailureKind::Protocol, who(c) + ": cannot create an SSH session");
    return;
  }
  prefer_known_key_types(c);
  c.stage = Stage::Handshake;
  step_handshake(c);
}

// Ask for the key type known_hosts has for this host first, so a host
// with several keys presents the one we can verify.
void SshRunner::Impl::prefer_known_key_types(Connection& c) {
  const auto types = known_hosts.key_types_for(c.endpoint.address, c.endpoint.port);
  if (!types.empty()) {
    std::string preference;
    for (const auto& t : types) preference += (preference.empty() ? "" : ",") + t;
    libssh2_session_method_pref(c.session, LIBSSH2_METHOD_HOSTKEY, preference.c_str());
  }
}

void SshRunner::Impl::step_handshake(Connection& c) {
  const int rc = libssh2_session_handshake(c.session, session_socket(c));
  if (rc == LIBSSH2_ERROR_EAGAIN) return;
  if (rc != 0) {
    // The server closed or reset the connection before the key exchange
    // finished: what an sshd over its MaxStartups does.
    const bool dropped = rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_RECV ||
                         rc == LIBSSH2_ERROR_SOCKET_SEND || rc == LIBSSH2_ERROR_BANNER_RECV;
    const std::string reason = last_error(c.session);
    if (dropped && retry_handshake(c)) return;
    fail_connection(c, FailureKind::Protocol, who(c) + ": SSH handshake failed: " + reason);
    return;
  }
  if (!verify_host_key(c)) return;
  if (options.keepalive_interval_s > 0) {
    libssh2_keepalive_config(c.session, 1, static_cast<unsigned>(options.keepalive_interval_s));
  }
  c.stage = Stage::Authenticating;
  step_authenticating(c);
}

bool SshRunner::Impl::verify_host_key(Connection& c) {
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

void SshRunner::Impl::step_authenticating(Connection& c) {
  const std::string& user = c.endpoint.user;
  const auto user_length = static_cast<unsigned>(user.size());
  int rc = 0;
  // A key this run's own agent holds signs there: decrypted once, not at
  // every login (private_agent.hpp).
  const bool through_private_agent = options.agent && options.agent->holds(c.identity_file);
  if (!c.identity_file.empty() && !through_private_agent) {
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
  // Slow: over a quarter of the connect timeout from the TCP connect.
  const auto started = c.connect_deadline - options.connect_timeout;
  leave_window(c, true, Clock::now() - started > options.connect_timeout / 4);
  c.attempts = 0;
  c.stage = Stage::Ready;
}

namespace {

// The next identity after `previous` (nullptr: the first) whose public key
// is `blob`, or any when `blob` is empty. 0, 1 when none is left, or <0.
int next_identity(LIBSSH2_AGENT* agent, libssh2_agent_publickey** identity, libssh2_agent_publickey* previous,
                  const std::string& blob) {
  for (;;) {
    const int rc = libssh2_agent_get_identity(agent, identity, previous);
    if (rc != 0 || blob.empty()) return rc;
    if ((*identity)->blob_len == blob.size() && std::memcmp((*identity)->blob, blob.data(), blob.size()) == 0) return 0;
    previous = *identity;
  }
}

}  // namespace

int SshRunner::Impl::authenticate_with_agent(Connection& c) {
  // The run's own agent for a key it holds: that key only. Otherwise the
  // operator's (SSH_AUTH_SOCK), every key it offers in turn.
  const bool private_agent = options.agent && options.agent->holds(c.identity_file);
  const std::string blob = private_agent ? options.agent->public_blob(c.identity_file) : std::string();
  if (!c.agent) {
    c.agent = libssh2_agent_init(c.session);
    if (c.agent && private_agent) libssh2_agent_set_identity_path(c.agent, options.agent->socket_path().c_str());
    if (!c.agent || libssh2_agent_connect(c.agent) != 0 || libssh2_agent_list_identities(c.agent) != 0) {
      return LIBSSH2_ERROR_AGENT_PROTOCOL;
    }
    if (next_identity(c.agent, &c.agent_identity, nullptr, blob) != 0) return LIBSSH2_ERROR_AGENT_PROTOCOL;
  }
  for (;;) {
    const int rc = libssh2_agent_userauth(c.agent, c.endpoint.user.c_str(), c.agent_identity);
    if (rc == 0 || rc == LIBSSH2_ERROR_EAGAIN) return rc;
    libssh2_agent_publickey* previous = c.agent_identity;
    if (next_identity(c.agent, &c.agent_identity, previous, blob) != 0) return rc;
  }
}

std::string SshRunner::Impl::auth_failure_message(Connection& c, int rc) {
  const std::string base = who(c) + ": authentication as " + c.endpoint.user + " failed: ";
  if (options.agent && options.agent->holds(c.identity_file) && rc == LIBSSH2_ERROR_AGENT_PROTOCOL) {
    return base + "the ssh-agent this run started for the key " + c.identity_file + " did not answer (" +
           options.agent->socket_path() + ")";
  }
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

}  // namespace gpuexpand
