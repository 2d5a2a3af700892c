#include "socket_reader.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpuexpand::detail {

namespace {

// A read this small is taken from the read-ahead buffer; a larger one
// (libssh2 fills its own packet buffer with tens of kilobytes at a time)
// goes straight into the caller's memory once the read-ahead is used up.
constexpr size_t kSmallRead = 256;

SocketReader* reader_of(void** abstract) { return static_cast<SocketReader*>(*abstract); }

// libssh2 1.10's callback contract: bytes read, 0 at end of stream, a
// negative errno on failure (-EAGAIN: would block). It also calls this
// for its ssh-agent socket, which is passed through untouched.
ssize_t reader_recv(libssh2_socket_t socket, void* buffer, size_t length, int flags, void** abstract) {
  SocketReader* reader = reader_of(abstract);
  if (socket != reader->fd) return system_recv(socket, buffer, length, flags);
  if (reader->begin < reader->end) {
    const size_t n = std::min(length, reader->end - reader->begin);
    std::memcpy(buffer, reader->buffer.data() + reader->begin, n);
    reader->begin += n;
    return static_cast<ssize_t>(n);
  }
  const bool polled = reader->session && libssh2_session_get_blocking(reader->session) == 0;
  if (reader->drained && polled) return -EAGAIN;
  if (reader->system_reads) ++*reader->system_reads;
  ssize_t n = 0;
  if (length >= kSmallRead) {
    n = system_recv(socket, buffer, length, flags);
  } else {
    n = system_recv(socket, reader->buffer.data(), reader->buffer.size(), flags);
    if (n > 0) {
      reader->begin = std::min(length, static_cast<size_t>(n));
      reader->end = static_cast<size_t>(n);
      std::memcpy(buffer, reader->buffer.data(), reader->begin);
      n = static_cast<ssize_t>(reader->begin);
    }
  }
  if (n == -EAGAIN) reader->drained = true;
  return n;
}

}  // namespace

ssize_t system_recv(int fd, void* buffer, size_t length, int flags) {
  const ssize_t n = ::recv(fd, buffer, length, flags);
  return n < 0 ? -errno : n;
}

LIBSSH2_SESSION* open_direct_session(SocketReader* reader) {
  LIBSSH2_SESSION* session = libssh2_session_init_ex(nullptr, nullptr, nullptr, reader);
  if (!session) return nullptr;
  reader->session = session;
  libssh2_session_callback_set(session, LIBSSH2_CALLBACK_RECV, reinterpret_cast<void*>(&reader_recv));
  libssh2_session_set_blocking(session, 0);
  return session;
}

}  // namespace gpuexpand::detail
