// The scheduling clock must never read behind the steady clock (a deadline
// computed from it would fire early) and must stay within a few microseconds
// ahead of it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "fast_clock.h"

namespace {

using wheelrpc::timer::detail::FastClock;

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void check_readings(int n) {
  std::int64_t worst_ahead = 0;
  for (int i = 0; i < n; ++i) {
    const std::int64_t before = steady_ns();
    const std::int64_t fast = FastClock::now_ns();
    const std::int64_t after = steady_ns();
    ASSERT_GE(fast, before) << "reading " << i << " is behind the steady clock";
    worst_ahead = std::max(worst_ahead, fast - after);
    if (i % 1000 == 0) std::this_thread::yield();  // let windows expire and re-anchor
  }
  // A few microseconds of bias, plus generous room for a preempted thread.
  EXPECT_LE(worst_ahead, FastClock::kMarginNs + 50'000);
}

TEST(FastClock, NeverBehindTheSteadyClock) { check_readings(300'000); }

TEST(FastClock, NeverBehindOnManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([] { check_readings(50'000); });
  for (auto& t : threads) t.join();
}

TEST(FastClock, NeverBehindAcrossLongGaps) {
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(300 * i));
    const std::int64_t before = steady_ns();
    EXPECT_GE(FastClock::now_ns(), before);
  }
}

}  // namespace
