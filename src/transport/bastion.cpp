#include "bastion.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "socket_reader.hpp"

namespace gpuexpand::detail {

namespace {

// Bytes libssh2 holds for the channel (read from the socket while serving
// another call). Not libssh2_poll_channel_read: it fails outright when any
// short packet (a keepalive reply) sits in the session's queue.
unsigned long queued_for(LIBSSH2_CHANNEL* channel) {
  unsigned long available = 0;
  libssh2_channel_window_read_ex(channel, &available, nullptr);
  return available;
}

// Back-pressure: the target's session waits (EAGAIN) while this much is
// queued for the bastion, and the bastion channel is not read while this
// much waits for the target's session (its window then stops the sender).
constexpr size_t kMaxOutbound = 1 << 20;
constexpr size_t kMaxInbound = 4 << 20;

Tunnel* tunnel_of(void** abstract) { return static_cast<Tunnel*>(*abstract); }

// What libssh2's own callbacks do, for descriptors other than the tunnel's
// (system_recv: socket_reader.hpp).
ssize_t system_send(libssh2_socket_t socket, const void* buffer, size_t length, int flags) {
  const ssize_t n = ::send(socket, buffer, length, flags);
  return n < 0 ? -errno : n;
}

// libssh2 1.10 callbacks: a negative errno on failure, -EAGAIN when it
// would block (the session then reports LIBSSH2_ERROR_EAGAIN).
ssize_t tunnel_recv(libssh2_socket_t socket, void* buffer, size_t length, int flags, void** abstract) {
  Tunnel* tunnel = tunnel_of(abstract);
  if (socket != tunnel->transport_fd) return system_recv(socket, buffer, length, flags);
  if (tunnel->dead) return -ECONNRESET;
  const size_t available = tunnel->in.size() - tunnel->in_pos;
  if (available == 0) return tunnel->eof ? -ECONNRESET : -EAGAIN;
  const size_t n = std::min(available, length);
  std::memcpy(buffer, tunnel->in.data() + tunnel->in_pos, n);
  tunnel->in_pos += n;
  if (tunnel->in_pos == tunnel->in.size()) {
    tunnel->in.clear();
    tunnel->in_pos = 0;
  }
  tunnel->transferred += n;
  return static_cast<ssize_t>(n);
}

ssize_t tunnel_send(libssh2_socket_t socket, const void* buffer, size_t length, int flags, void** abstract) {
  Tunnel* tunnel = tunnel_of(abstract);
  if (socket != tunnel->transport_fd) return system_send(socket, buffer, length, flags);
  if (tunnel->dead || tunnel->eof) return -EPIPE;
  const size_t queued = tunnel->out.size() - tunnel->out_pos;
  if (queued >= kMaxOutbound) return -EAGAIN;
  const size_t n = std::min(length, kMaxOutbound - queued);
  tunnel->out.append(static_cast<const char*>(buffer), n);
  tunnel->transferred += n;
  return static_cast<ssize_t>(n);
}

}  // namespace

LIBSSH2_SESSION* open_tunnelled_session(Tunnel* tunnel) {
  LIBSSH2_SESSION* session = libssh2_session_init_ex(nullptr, nullptr, nullptr, tunnel);
  if (!session) return nullptr;
  libssh2_session_callback_set(session, LIBSSH2_CALLBACK_RECV, reinterpret_cast<void*>(&tunnel_recv));
  libssh2_session_callback_set(session, LIBSSH2_CALLBACK_SEND, reinterpret_cast<void*>(&tunnel_send));
  libssh2_session_set_blocking(session, 0);
  return session;
}

bool is_channel_error(int code) {
  switch (code) {
    case LIBSSH2_ERROR_CHANNEL_OUTOFORDER:
    case LIBSSH2_ERROR_CHANNEL_FAILURE:
    case LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED:
    case LIBSSH2_ERROR_CHANNEL_UNKNOWN:
    case LIBSSH2_ERROR_CHANNEL_WINDOW_EXCEEDED:
    case LIBSSH2_ERROR_CHANNEL_PACKET_EXCEEDED:
    case LIBSSH2_ERROR_CHANNEL_CLOSED:
    case LIBSSH2_ERROR_CHANNEL_EOF_SENT:
      return true;
    default:
      return false;
  }
}

bool tunnel_has_unread(const Tunnel& tunnel) {
  return tunnel.channel && !tunnel.dead && !tunnel.eof && tunnel.in.size() - tunnel.in_pos < kMaxInbound &&
         queued_for(tunnel.channel) > 0;
}

PumpResult pump_tunnel(Tunnel& tunnel, bool socket_drained) {
  PumpResult result;
  if (!tunnel.channel || tunnel.dead) return result;
  auto failed = [&](ssize_t code) {
    result.error = static_cast<int>(code);
    result.status = is_channel_error(result.error) ? PumpStatus::TunnelBroken : PumpStatus::SessionBroken;
    return result;
  };

  // To the target. libssh2 may take part of the front and report EAGAIN;
  // the next call gets the same front again, as it requires.
  while (tunnel.out_pos < tunnel.out.size() && !tunnel.eof) {
    const ssize_t n = libssh2_channel_write(tunnel.channel, tunnel.out.data() + tunnel.out_pos,
                                            tunnel.out.size() - tunnel.out_pos);
    result.read_socket = true;  // libssh2 reads the socket dry before it writes
    if (n > 0) {
      tunnel.out_pos += static_cast<size_t>(n);
      result.progress = true;
      continue;
    }
    if (n == LIBSSH2_ERROR_EAGAIN || n == 0) {
      // An open window means the socket is full; a closed one waits for
      // the target's window adjustment, which comes in (POLLIN).
      if (libssh2_channel_window_write(tunnel.channel) > 0) result.want_write = true;
      break;
    }
    return failed(n);
  }
  if (tunnel.out_pos == tunnel.out.size()) {
    tunnel.out.clear();
    tunnel.out_pos = 0;
  } else if (tunnel.out_pos > (1 << 16) && tunnel.out_pos * 2 > tunnel.out.size()) {
    tunnel.out.erase(0, tunnel.out_pos);
    tunnel.out_pos = 0;
  }

  // From the target.
  if (socket_drained && !tunnel.eof && queued_for(tunnel.channel) == 0) {
    if (libssh2_channel_eof(tunnel.channel)) {
      tunnel.eof = true;
      result.progress = true;
    }
    return result;
  }
  char buffer[32768];
  while (!tunnel.eof && tunnel.in.size() - tunnel.in_pos < kMaxInbound) {
    const ssize_t n = libssh2_channel_read(tunnel.channel, buffer, sizeof buffer);
    result.read_socket = true;
    if (n > 0) {
      if (tunnel.in_pos > 0 && tunnel.in_pos * 2 > tunnel.in.size()) {
        tunnel.in.erase(0, tunnel.in_pos);
        tunnel.in_pos = 0;
      }
      tunnel.in.append(buffer, static_cast<size_t>(n));
      result.progress = true;
      continue;
    }
    if (n == LIBSSH2_ERROR_EAGAIN) break;
    if (n == 0) {
      if (libssh2_channel_eof(tunnel.channel)) {
        tunnel.eof = true;
        result.progress = true;
      }
      break;
    }
    return failed(n);
  }
  return result;
}

}  // namespace gpuexpand::detail
