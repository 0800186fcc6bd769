// The retry budget, driven by explicit time points (no clock, no sleeps).
#include <gtest/gtest.h>

#include <chrono>

#include <wheelrpc/rpc/options.h>

#include "retry_budget.h"

namespace {

using wheelrpc::rpc::detail::RetryBudget;
using namespace std::chrono_literals;
using Clock = RetryBudget::Clock;

const Clock::time_point t0 = Clock::time_point(1000s);

TEST(RetryBudget, RetriesAreCappedAtTheRatioOfCallsWithoutAFloor) {
  RetryBudget b(0.2, 0, 10s);
  for (int i = 0; i < 100; ++i) b.on_call(t0);
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += b.try_retry(t0) ? 1 : 0;
  EXPECT_EQ(allowed, 20);
  EXPECT_EQ(b.retries(t0), 20u);
  // More calls earn more retries.
  for (int i = 0; i < 10; ++i) b.on_call(t0 + 100ms);
  EXPECT_TRUE(b.try_retry(t0 + 100ms));
  EXPECT_TRUE(b.try_retry(t0 + 100ms));
  EXPECT_FALSE(b.try_retry(t0 + 100ms));
}

TEST(RetryBudget, TheFloorAllowsRetriesWithFewCalls) {
  RetryBudget b(0.2, 1, 10s);  // 1 per second over 10 s: 10 retries on top
  b.on_call(t0);
  int allowed = 0;
  for (int i = 0; i < 50; ++i) allowed += b.try_retry(t0) ? 1 : 0;
  EXPECT_EQ(allowed, 10);  // 0.2 x 1 call rounds to nothing; the floor gives 10
}

TEST(RetryBudget, OldSecondsLeaveTheWindow) {
  RetryBudget b(0.5, 0, 2s);
  for (int i = 0; i < 10; ++i) b.on_call(t0);
  int allowed = 0;
  for (int i = 0; i < 10; ++i) allowed += b.try_retry(t0) ? 1 : 0;
  EXPECT_EQ(allowed, 5);
  // Still inside the 2 s window one second later: no new budget.
  EXPECT_FALSE(b.try_retry(t0 + 1s));
  EXPECT_EQ(b.calls(t0 + 1s), 10u);
  // Two seconds later both the calls and the retries are forgotten.
  EXPECT_EQ(b.calls(t0 + 2s), 0u);
  EXPECT_EQ(b.retries(t0 + 2s), 0u);
  EXPECT_FALSE(b.try_retry(t0 + 2s));  // and nothing earned yet
  b.on_call(t0 + 2s);
  b.on_call(t0 + 2s);
  EXPECT_TRUE(b.try_retry(t0 + 2s));
  EXPECT_FALSE(b.try_retry(t0 + 2s));
}

TEST(RetryBudget, ALongQuietGapForgetsEverything) {
  RetryBudget b(0.2, 0, 10s);
  for (int i = 0; i < 50; ++i) b.on_call(t0);
  EXPECT_TRUE(b.try_retry(t0));
  EXPECT_EQ(b.calls(t0 + 1h), 0u);
  EXPECT_EQ(b.retries(t0 + 1h), 0u);
}

TEST(RetryBudget, ZeroRatioAndZeroFloorAllowsNoRetry) {
  RetryBudget b(0.0, 0, 1s);
  for (int i = 0; i < 1000; ++i) b.on_call(t0);
  EXPECT_FALSE(b.try_retry(t0));
}

TEST(LoadBalanceNames, RoundTrip) {
  using wheelrpc::rpc::LoadBalance;
  for (auto lb : {LoadBalance::round_robin, LoadBalance::least_active, LoadBalance::power_of_two}) {
    EXPECT_EQ(wheelrpc::rpc::parse_load_balance(wheelrpc::rpc::to_string(lb)), lb);
  }
  EXPECT_EQ(wheelrpc::rpc::parse_load_balance("power_of_two"), LoadBalance::power_of_two);
  EXPECT_FALSE(wheelrpc::rpc::parse_load_balance("random").has_value());
  EXPECT_FALSE(wheelrpc::rpc::parse_load_balance("").has_value());
}

}  // namespace
