#pragma once
// Internal to SshRunner: a target's SSH session carried by a direct-tcpip
// channel of the bastion's session. The target's libssh2 session does its
// I/O through send/recv callbacks that only touch two buffers; the runner's
// poll loop moves bytes between those buffers and the bastion channel
// (pump_tunnel), so neither session ever blocks and both are driven from
// the one loop. One bastion session carries every target behind it.

#include <libssh2.h>

#include <cstddef>
#include <string>

namespace gpuexpand::detail {

struct Tunnel {
  LIBSSH2_CHANNEL* channel = nullptr;  // on the bastion's session; null once handed back
  // The socket given to libssh2_session_handshake for the target's
  // session. libssh2 1.10 also calls the session's send/recv callbacks for
  // its ssh-agent socket: I/O on any other descriptor goes to the system.
  int transport_fd = -1;
  std::string in;                      // from the target, not yet read by its session
  size_t in_pos = 0;
  std::string out;                     // from the target's session, not yet in the channel
  size_t out_pos = 0;
  bool eof = false;   // the bastion closed the forwarded connection
  bool dead = false;  // the callbacks fail: the tunnel is being taken down
  size_t transferred = 0;  // bytes through the callbacks, to tell progress
};

// A non-blocking libssh2 session whose transport is `tunnel`. Null when
// libssh2 cannot allocate one.
LIBSSH2_SESSION* open_tunnelled_session(Tunnel* tunnel);

enum class PumpStatus {
  Ok,
  TunnelBroken,   // this channel failed; the bastion session is fine
  SessionBroken,  // the bastion session itself failed
};

struct PumpResult {
  PumpStatus status = PumpStatus::Ok;
  bool progress = false;    // bytes moved
  bool want_write = false;  // a write waits for the bastion socket to drain
  bool read_socket = false; // libssh2 read the bastion's socket (until EAGAIN)
  int error = 0;            // the libssh2 error when not Ok
};

// Writes what the target's session queued to the channel and reads what
// the channel holds into the buffer, without blocking. `socket_drained`:
// another channel of the same session was just read, which read the
// bastion's socket dry, so only data libssh2 already holds is taken (one
// recv() per round instead of one per channel).
PumpResult pump_tunnel(Tunnel& tunnel, bool socket_drained);

// Whether libssh2 holds data for the channel that pump_tunnel would take
// (read from the bastion's socket while serving another channel).
bool tunnel_has_unread(const Tunnel& tunnel);

// Whether a libssh2 error concerns one channel rather than the session.
bool is_channel_error(int code);

}  // namespace gpuexpand::detail
