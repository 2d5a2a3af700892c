#pragma once
// How many new SSH connections may be in progress at once (TCP connect,
// key exchange and login), apart from how many sessions may run commands
// (--parallel). A thousand handshakes started in the same millisecond
// overflow the listen queues and MaxStartups of the sshd that answer them
// and make every host's CPU (or a bastion's) do all its key exchanges at
// once; the sessions, once up, cost almost nothing. So new connections
// start in a window that begins small and grows by one for each handshake
// that succeeds (doubling every round trip, as TCP's slow start), up to
// the cap; it shrinks by one for each login that was slow (over a quarter
// of the connect timeout: the hosts, or this machine, are saturated and
// more in flight would only push handshakes past the timeout; seen at
// 1,000 hosts on 2 cores) and halves when a host resets or refuses a
// handshake, the sign of an overloaded sshd.

#include <algorithm>
#include <cstddef>

namespace gpuexpand {

class HandshakeWindow {
 public:
  static constexpr size_t kInitial = 32;
  static constexpr size_t kFloor = 4;

  explicit HandshakeWindow(size_t cap = 256, size_t initial = kInitial)
      : cap_(std::max<size_t>(cap, 1)), limit_(std::clamp<size_t>(initial, 1, cap_)) {}

  bool may_start() const { return in_flight_ < limit_; }
  void started() { ++in_flight_; }
  // A handshake ended: logged in (grows the window, or shrinks it by one
  // when it was slow) or not (a failure that is not overload, e.g. a wrong
  // key, says nothing about load).
  void finished(bool logged_in, bool slow = false) {
    if (in_flight_ > 0) --in_flight_;
    if (!logged_in) return;
    limit_ = slow ? std::max(floor(), limit_ - 1) : std::min(cap_, limit_ + 1);
  }
  // A host refused or reset a handshake: back off.
  void overloaded() { limit_ = std::max(floor(), limit_ / 2); }

  size_t limit() const { return limit_; }
  size_t in_flight() const { return in_flight_; }

 private:
  size_t floor() const { return std::min(kFloor, cap_); }  // never above what the cap allows

  size_t cap_;
  size_t limit_;
  size_t in_flight_ = 0;
};

// Delay before retry `attempt` (1, 2, …) of a refused or reset handshake:
// 250 ms doubling, with up to a quarter more drawn from `jitter` in [0, 1)
// so that hosts refused together do not all come back together.
inline long long handshake_retry_delay_ms(int attempt, double jitter) {
  const long long base = 250LL << std::clamp(attempt - 1, 0, 6);
  return base + static_cast<long long>(static_cast<double>(base) * 0.25 * std::clamp(jitter, 0.0, 1.0));
}

}  // namespace gpuexpand
