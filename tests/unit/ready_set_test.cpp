// ReadySet (include/gpuexpand/transport/ready_set.hpp): the sockets the
// SSH runner waits on, kept in the kernel between turns. What must hold:
// only this turn's sockets wake a wait, with their owner, and a new
// socket that reuses a closed one's number is seen.

#include "gpuexpand/transport/ready_set.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gpuexpand {
namespace {

using Ready = std::vector<std::pair<std::size_t, short>>;

struct Pair {
  int ours = -1, theirs = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ours = fds[0];
    theirs = fds[1];
  }
  ~Pair() { close(); }
  void close() {
    if (ours >= 0) ::close(ours);
    if (theirs >= 0) ::close(theirs);
    ours = theirs = -1;
  }
  void send() const { ASSERT_EQ(::write(theirs, "x", 1), 1); }
};

TEST(ReadySet, OnlyThisTurnsSocketsWakeAWaitWithTheirOwner) {
  ReadySet set;
  Pair a, b;
  Ready ready;
  set.want(a.ours, POLLIN, 7, 1);
  set.want(b.ours, POLLIN, 9, 2);
  ASSERT_TRUE(set.wait(0, ready));
  EXPECT_TRUE(ready.empty());

  b.send();
  set.want(a.ours, POLLIN, 7, 1);
  set.want(b.ours, POLLIN, 9, 2);
  ASSERT_TRUE(set.wait(1000, ready));
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].first, 9u);
  EXPECT_TRUE(ready[0].second & POLLIN);

  // b still has its byte unread, but this turn does not want it.
  set.want(a.ours, POLLIN, 7, 1);
  ASSERT_TRUE(set.wait(0, ready));
  EXPECT_TRUE(ready.empty());

  // Wanted for writing instead: a socket pair has room, so at once.
  set.want(a.ours, POLLOUT, 7, 1);
  ASSERT_TRUE(set.wait(1000, ready));
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], (std::pair<std::size_t, short>{7u, POLLOUT}));
}

TEST(ReadySet, ANewSocketWithAClosedOnesNumberIsWatched) {
  ReadySet set;
  Ready ready;
  auto first = std::make_unique<Pair>();
  const int number = first->ours;
  set.want(first->ours, POLLIN, 3, 1);
  ASSERT_TRUE(set.wait(0, ready));
  first->close();  // the kernel drops it from its set; ReadySet still remembers it

  Pair second;  // the lowest free numbers again
  ASSERT_EQ(second.ours == number || second.theirs == number, true);
  const int fd = second.ours == number ? second.ours : second.theirs;
  const int peer = fd == second.ours ? second.theirs : second.ours;
  ASSERT_EQ(::write(peer, "x", 1), 1);
  set.want(fd, POLLIN, 3, 2);  // same owner and events, another socket
  ASSERT_TRUE(set.wait(1000, ready));
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].first, 3u);
}

TEST(ReadySet, HangUpIsReported) {
  ReadySet set;
  Ready ready;
  Pair p;
  ::close(p.theirs);
  p.theirs = -1;
  set.want(p.ours, POLLIN, 1, 1);
  ASSERT_TRUE(set.wait(1000, ready));
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_TRUE(ready[0].second & (POLLIN | POLLHUP));
}

}  // namespace
}  // namespace gpuexpand
