// The handshake window (include/gpuexpand/transport/handshake_window.hpp):
// new connections start a few at a time, more as logins succeed, fewer
// when a host refuses or resets one; and the retry backoff.

#include "gpuexpand/transport/handshake_window.hpp"

#include <gtest/gtest.h>

namespace gpuexpand {
namespace {

size_t start_all_allowed(HandshakeWindow& w) {
  size_t n = 0;
  while (w.may_start()) {
    w.started();
    ++n;
  }
  return n;
}

TEST(HandshakeWindow, StartsSmallAndDoublesPerRoundOfLogins) {
  HandshakeWindow w(256);
  EXPECT_EQ(start_all_allowed(w), 32u);
  for (int i = 0; i < 32; ++i) w.finished(true);  // one round trip later
  EXPECT_EQ(w.limit(), 64u);
  EXPECT_EQ(start_all_allowed(w), 64u);
  for (int i = 0; i < 64; ++i) w.finished(true);
  EXPECT_EQ(w.limit(), 128u);
}

TEST(HandshakeWindow, NeverGrowsPastTheCap) {
  HandshakeWindow w(40);
  for (int i = 0; i < 100; ++i) {
    w.started();
    w.finished(true);
  }
  EXPECT_EQ(w.limit(), 40u);
  EXPECT_EQ(HandshakeWindow(8).limit(), 8u);  // a cap below the start
}

TEST(HandshakeWindow, AFailedLoginFreesItsPlaceWithoutGrowing) {
  HandshakeWindow w(256);
  start_all_allowed(w);
  EXPECT_FALSE(w.may_start());
  w.finished(false);
  EXPECT_TRUE(w.may_start());
  EXPECT_EQ(w.limit(), 32u);
  EXPECT_EQ(w.in_flight(), 31u);
}

TEST(HandshakeWindow, SlowLoginsShrinkItByOne) {
  HandshakeWindow w(256);
  for (int i = 0; i < 3; ++i) {
    w.started();
    w.finished(true, /*slow=*/true);
  }
  EXPECT_EQ(w.limit(), 29u);
  for (int i = 0; i < 100; ++i) {
    w.started();
    w.finished(true, true);
  }
  EXPECT_EQ(w.limit(), HandshakeWindow::kFloor);
}

TEST(HandshakeWindow, OverloadHalvesDownToAFloor) {
  HandshakeWindow w(256);
  w.overloaded();
  EXPECT_EQ(w.limit(), 16u);
  for (int i = 0; i < 10; ++i) w.overloaded();
  EXPECT_EQ(w.limit(), HandshakeWindow::kFloor);
  HandshakeWindow one(1);
  one.overloaded();
  EXPECT_EQ(one.limit(), 1u);  // never below what the cap allows
}

TEST(HandshakeRetryDelay, DoublesWithBoundedJitter) {
  EXPECT_EQ(handshake_retry_delay_ms(1, 0.0), 250);
  EXPECT_EQ(handshake_retry_delay_ms(2, 0.0), 500);
  EXPECT_EQ(handshake_retry_delay_ms(3, 0.0), 1000);
  EXPECT_EQ(handshake_retry_delay_ms(2, 0.999), 624);
  EXPECT_EQ(handshake_retry_delay_ms(50, 0.0), 250 << 6);  // capped
}

}  // namespace
}  // namespace gpuexpand
