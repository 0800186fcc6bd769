// The retry budget, driven by explicit time points (no clock, no sleeps).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <wheelrpc/rpc/options.h>

#include "client/retry_budget.h"

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

// Callers on several threads count calls and ask for retries at once, one
// second after another (inside one window, so nothing is recycled and the
// books are exact): after every grant the retries counted are within the
// ratio of the calls counted, no call or retry is lost, and what is left of
// the budget at the end is exactly what the ratio allows. The threads of a
// second finish before the next second starts: the budget is kept per second
// of the time each caller passes in, and a caller still in an earlier second
// is measured against that second's window (the budget is an estimate across
// callers whose clocks straddle a second).
TEST(RetryBudget, TheCapHoldsWhenManyThreadsCallAndRetryAtOnce) {
  RetryBudget b(0.2, 0, 10s);
  constexpr int kSeconds = 5;
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 400;  // per second
  std::atomic<std::uint64_t> granted{0};
  std::atomic<int> over_cap{0};
  for (int second = 0; second < kSeconds; ++second) {
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k) {
      threads.emplace_back([&, k, second] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < kCallsPerThread; ++i) {
          const auto now = t0 + std::chrono::seconds(second) + std::chrono::milliseconds((i + k) % 1000);
          b.on_call(now);
          // Greedy: every other call asks for a retry, some ask twice.
          const int asks = (i % 2 == 0 ? 1 : 0) + (i % 7 == 0 ? 1 : 0);
          for (int a = 0; a < asks; ++a) {
            if (!b.try_retry(now)) continue;
            granted.fetch_add(1);
            // Retries first, then calls: calls only grow in between.
            const auto r = b.retries(now);
            const auto c = b.calls(now);
            if (static_cast<double>(r) > 0.2 * static_cast<double>(c) + 1e-9) over_cap.fetch_add(1);
          }
        }
      });
    }
    go = true;
    for (auto& t : threads) t.join();
  }
  const auto end = t0 + std::chrono::seconds(kSeconds - 1) + 999ms;
  constexpr std::uint64_t kCalls = kSeconds * kThreads * kCallsPerThread;
  EXPECT_EQ(over_cap.load(), 0);
  EXPECT_EQ(b.calls(end), kCalls) << "no call lost";
  EXPECT_EQ(b.retries(end), granted.load()) << "every grant counted once";
  EXPECT_LE(granted.load(), kCalls / 5);
  // What is left of the budget is still there, and no more.
  while (b.try_retry(end)) granted.fetch_add(1);
  EXPECT_EQ(granted.load(), kCalls / 5);
  EXPECT_EQ(b.retries(end), kCalls / 5);
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
