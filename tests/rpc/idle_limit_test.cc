// idle_limit: the one formula both sides use to take a silent peer for dead.
#include <gtest/gtest.h>

#include <chrono>

#include "base/idle_limit.h"

namespace {
using namespace std::chrono_literals;
using wheelrpc::rpc::detail::idle_limit;

TEST(IdleLimit, ByDefaultThreeAgreedIntervals) {
  EXPECT_EQ(idle_limit(0ms, 15000ms), 45000ms);
  EXPECT_EQ(idle_limit(0ms, 200ms), 600ms);
}

TEST(IdleLimit, AConfiguredLimitIsKeptButNeverBelowTwoIntervals) {
  EXPECT_EQ(idle_limit(5000ms, 1000ms), 5000ms);
  EXPECT_EQ(idle_limit(1000ms, 1000ms), 2000ms);  // a peer on time is never idle
  EXPECT_EQ(idle_limit(2000ms, 1000ms), 2000ms);
}

static_assert(idle_limit(std::chrono::milliseconds(0), std::chrono::milliseconds(10)) == std::chrono::milliseconds(30));

}  // namespace
