#include "ssh_runner_impl.hpp"

namespace gpuexpand {

std::string SshRunner::Impl::bastion_timeout_text() const {
  return std::to_string(options.connect_timeout.count() / 1000) + " s";
}

// A node behind a bastion: queue it for a channel once the bastion's
// session is up (service_bastion connects it and opens the channels).
void SshRunner::Impl::start_tunnel(Connection& c) {
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
void SshRunner::Impl::bastion_failed(Bastion& b) {
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
void SshRunner::Impl::lose_bastion(Bastion& b, const std::string& what) {
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
bool SshRunner::Impl::drive_closing(Bastion& b) {
  const size_t before = b.closing.size();
  std::erase_if(b.closing, [](LIBSSH2_CHANNEL* channel) { return libssh2_channel_free(channel) != LIBSSH2_ERROR_EAGAIN; });
  return b.closing.size() != before;
}

// Opens the channel to the next node in line (libssh2 keeps one open in
// flight per session). True when something changed.
bool SshRunner::Impl::drive_open(Bastion& b) {
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
void SshRunner::Impl::service_bastion(Bastion& b) {
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

bool SshRunner::Impl::bastion_has_work(const Bastion& b) const {
  if (!b.open_queue.empty() || b.opening || !b.closing.empty()) return true;
  return std::any_of(b.members.begin(), b.members.end(), [&](size_t m) { return nodes[m].tunnel != nullptr; });
}

void SshRunner::Impl::check_bastion_deadline(Bastion& b, Clock::time_point now) {
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

}  // namespace gpuexpand
