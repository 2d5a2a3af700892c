#pragma once
// Internal to SshRunner: what libssh2 reads from a directly connected
// node's socket goes through here (the session's recv callback), to spend
// fewer system calls per host. Two costs it removes, both measured at
// fleet scale (docs/benchmarks.md):
//  - libssh2 1.10 reads the server's identification line a byte at a
//    time (about 40 recv() calls per login); small reads are served from
//    one read of up to a kilobyte here.
//  - the runner steps every session on each turn of its loop, so a
//    session with nothing to read paid a recv() that said EAGAIN on every
//    turn. Once the socket said EAGAIN, this answers EAGAIN itself until
//    poll() reports input on it again (input_ready); the runner always
//    polls for input when libssh2 is waiting to read, so nothing waits
//    longer than one turn of the loop. Only while the session is
//    non-blocking: a blocking libssh2 waits on the socket itself.

#include <libssh2.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace gpuexpand::detail {

struct SocketReader {
  int fd = -1;                        // the session's socket; any other goes to the system
  LIBSSH2_SESSION* session = nullptr;
  std::array<char, 1024> buffer{};    // read ahead for small reads
  size_t begin = 0, end = 0;          // the unread part of buffer
  bool drained = false;               // the socket said EAGAIN; poll() has not reported input since
  std::uint64_t* system_reads = nullptr;  // where recv() calls are counted (the runner's)
};

// A non-blocking libssh2 session that reads `reader->fd` through `reader`.
// Null when libssh2 cannot allocate one.
LIBSSH2_SESSION* open_direct_session(SocketReader* reader);

// recv() in libssh2's callback terms: a negative errno on failure (what
// its own recv does; the tunnel's callbacks use it for other sockets).
ssize_t system_recv(int fd, void* buffer, size_t length, int flags);

// poll() reported input (or an error or hang-up) on the reader's socket.
inline void input_ready(SocketReader& reader) { reader.drained = false; }

}  // namespace gpuexpand::detail
