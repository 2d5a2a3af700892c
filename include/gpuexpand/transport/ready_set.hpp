#pragma once
// The sockets SshRunner's loop waits on. Each turn the loop says which
// sockets it wants and for what (want); wait() then blocks until some are
// ready. The set lives in an epoll instance between turns, so the kernel's
// share of a wait is the sockets that are ready, not every socket of the
// run as with poll() (docs/benchmarks.md, "The loop no longer spins").
// Only changes reach the kernel: a socket's events when they differ from
// the last turn's, a socket no longer wanted. Without epoll, or when the
// kernel refuses a socket, a turn is a poll() of this turn's sockets.

#include <sys/epoll.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpuexpand {

class ReadySet {
 public:
  ReadySet();
  ~ReadySet();
  ReadySet(const ReadySet&) = delete;
  ReadySet& operator=(const ReadySet&) = delete;

  // This turn's interest in `fd` (poll's POLLIN/POLLOUT), for `owner`.
  // `serial` names the socket behind the number: a new socket that reuses
  // a closed one's number has another (closing a socket takes it out of
  // the kernel's set, not out of this one's memory).
  void want(int fd, short events, std::size_t owner, std::uint64_t serial);

  bool empty() const { return wanted_.empty(); }

  // Forgets the sockets not wanted this turn, waits up to `timeout_ms`,
  // and returns each ready socket's owner with poll's revents. Starts the
  // next turn. False when waiting failed (not an interruption).
  bool wait(int timeout_ms, std::vector<std::pair<std::size_t, short>>& ready);

 private:
  struct Wanted {
    int fd;
    short events;
    std::size_t owner;
    std::uint64_t serial;
  };
  struct Watch {
    bool registered = false;
    short events = 0;
    std::size_t owner = 0;
    std::uint64_t serial = 0;
    std::uint64_t turn = 0;  // the last turn that wanted it
  };
  bool apply(const Wanted& w, std::uint64_t turn);  // false: the kernel refused it
  bool wait_epoll(int timeout_ms, std::vector<std::pair<std::size_t, short>>& ready);

  int epoll_fd_ = -1;  // -1: epoll unavailable, every turn is a poll()
  std::uint64_t turn_ = 1;
  std::vector<Wanted> wanted_;   // this turn's
  std::vector<Watch> by_fd_;     // what the kernel's set holds, by descriptor
  std::vector<int> registered_;  // descriptors in the kernel's set
  std::vector<epoll_event> events_;  // epoll_wait's answer
};

}  // namespace gpuexpand
