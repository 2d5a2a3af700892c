#include "gpuexpand/transport/ready_set.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace gpuexpand {

namespace {

std::uint32_t to_epoll(short events) {
  std::uint32_t e = 0;
  if (events & POLLIN) e |= EPOLLIN;
  if (events & POLLOUT) e |= EPOLLOUT;
  return e;
}

short to_poll(std::uint32_t events) {
  short r = 0;
  if (events & EPOLLIN) r |= POLLIN;
  if (events & EPOLLOUT) r |= POLLOUT;
  if (events & EPOLLERR) r |= POLLERR;
  if (events & EPOLLHUP) r |= POLLHUP;
  return r;
}

}  // namespace

ReadySet::ReadySet() : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {}

ReadySet::~ReadySet() {
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void ReadySet::want(int fd, short events, std::size_t owner, std::uint64_t serial) {
  wanted_.push_back({fd, events, owner, serial});
}

bool ReadySet::wait_epoll(int timeout_ms, std::vector<std::pair<std::size_t, short>>& ready) {
  events_.resize(std::max<std::size_t>(registered_.size(), 1));
  const int n = ::epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), timeout_ms);
  for (int k = 0; k < n; ++k) {
    const epoll_event& e = events_[static_cast<std::size_t>(k)];
    ready.emplace_back(static_cast<std::size_t>(e.data.u64), to_poll(e.events));
  }
  return n >= 0 || errno == EINTR;
}

bool ReadySet::apply(const Wanted& w, std::uint64_t turn) {
  if (static_cast<std::size_t>(w.fd) >= by_fd_.size()) by_fd_.resize(static_cast<std::size_t>(w.fd) + 1);
  Watch& watch = by_fd_[static_cast<std::size_t>(w.fd)];
  watch.turn = turn;
  if (watch.registered && watch.events == w.events && watch.owner == w.owner && watch.serial == w.serial) return true;
  epoll_event ev{};
  ev.events = to_epoll(w.events);
  ev.data.u64 = w.owner;
  // A number seen before may be a new socket the kernel's set does not
  // hold (the old one was closed): MOD then says ENOENT, and ADD follows.
  int rc = watch.registered ? ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, w.fd, &ev) : -1;
  if (!watch.registered || (rc != 0 && errno == ENOENT)) {
    rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, w.fd, &ev);
    if (rc != 0 && errno == EEXIST) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, w.fd, &ev);
    if (rc == 0 && !watch.registered) registered_.push_back(w.fd);
  }
  if (rc != 0) return false;
  watch.registered = true;
  watch.events = w.events;
  watch.owner = w.owner;
  watch.serial = w.serial;
  return true;
}

bool ReadySet::wait(int timeout_ms, std::vector<std::pair<std::size_t, short>>& ready) {
  ready.clear();
  bool ok = true;
  bool in_kernel = epoll_fd_ >= 0;
  for (const Wanted& w : wanted_) in_kernel = in_kernel && apply(w, turn_);
  if (!in_kernel) {
    // No epoll, or the kernel refused a socket: this turn is a poll().
    std::vector<pollfd> fds;
    fds.reserve(wanted_.size());
    for (const Wanted& w : wanted_) fds.push_back({w.fd, w.events, 0});
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    ok = n >= 0 || errno == EINTR;
    for (std::size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (fds[k].revents) ready.emplace_back(wanted_[k].owner, fds[k].revents);
    }
  } else {
    // Not wanted this turn: out of the kernel's set, or a socket ready for
    // nobody would end every wait at once. (Closed ones are gone already;
    // DEL then fails, which is fine.)
    std::size_t kept = 0;
    for (int fd : registered_) {
      Watch& watch = by_fd_[static_cast<std::size_t>(fd)];
      if (watch.turn == turn_) {
        registered_[kept++] = fd;
      } else {
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        watch = Watch{};
      }
    }
    registered_.resize(kept);
    ok = wait_epoll(timeout_ms, ready);
  }
  wanted_.clear();
  ++turn_;
  return ok;
}

}  // namespace gpuexpand
