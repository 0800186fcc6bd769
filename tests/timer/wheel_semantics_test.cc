// When timeouts fire, driven by a manual clock: never early, at most one tick
// late, long delays through every level and beyond the top, zero and negative
// delays, order within a tick.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "support/manual_timer.h"

using namespace std::chrono_literals;
using wheelrpc::test::ManualTimer;
using wheelrpc::timer::Timeout;

namespace {

TEST(WheelSemantics, FiresAtItsTickNeverEarly) {
  ManualTimer mt;  // 1 ms tick; time starts on a tick boundary
  int fired = 0;
  mt.timer.new_timeout([&] { ++fired; }, 10ms);
  EXPECT_EQ(mt.advance(9ms + 999us), 0u);
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(mt.advance(1us), 1u);
  EXPECT_EQ(fired, 1);
}

TEST(WheelSemantics, SubTickDelayRoundsUpToTheNextTick) {
  ManualTimer mt;
  mt.clock.advance(300us);  // mid-tick
  int fired = 0;
  mt.timer.new_timeout([&] { ++fired; }, 1500us);  // due at 1.8 ms -> tick 2
  EXPECT_EQ(mt.advance(1499us), 0u);               // 1.799 ms
  EXPECT_EQ(mt.advance(1us), 0u);                  // 1.800 ms: deadline reached, tick 2 not yet
  EXPECT_EQ(mt.advance(199us), 0u);                // 1.999 ms
  EXPECT_EQ(mt.advance(1us), 1u);                  // 2.000 ms: one tick boundary later at most
  EXPECT_EQ(fired, 1);
}

TEST(WheelSemantics, ZeroAndNegativeDelaysRunAtTheNextTick) {
  ManualTimer mt;
  mt.clock.advance(250us);
  std::vector<int> order;
  mt.timer.new_timeout([&] { order.push_back(0); }, 0ns);
  mt.timer.new_timeout([&] { order.push_back(1); }, -5s);
  EXPECT_EQ(mt.timer.run_expired(), 0u);  // not in the current tick
  EXPECT_EQ(mt.advance(749us), 0u);
  EXPECT_EQ(mt.advance(1us), 2u);  // tick 1
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
}

TEST(WheelSemantics, SameTickFiresInSchedulingOrder) {
  ManualTimer mt;
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) mt.timer.new_timeout([&order, i] { order.push_back(i); }, 5ms);
  EXPECT_EQ(mt.advance(5ms), 100u);
  ASSERT_EQ(order.size(), 100u);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(WheelSemantics, DelaysLongerThanOneWheelTurnFireOnTime) {
  ManualTimer mt(1ms, 8);  // 8 slots per level: level 1 starts at 8 ms, level 2 at 64 ms ...
  std::vector<std::chrono::milliseconds> delays{7ms, 8ms, 9ms, 63ms, 64ms, 65ms, 511ms, 4097ms};
  std::vector<int> fired(delays.size(), 0);
  for (std::size_t i = 0; i < delays.size(); ++i) {
    mt.timer.new_timeout([&fired, i] { ++fired[i]; }, delays[i]);
  }
  auto elapsed = 0ms;
  for (std::size_t i = 0; i < delays.size(); ++i) {
    mt.advance(delays[i] - 1ms - elapsed);
    elapsed = delays[i] - 1ms;
    EXPECT_EQ(fired[i], 0) << "delay " << delays[i].count() << " ms fired early";
    mt.advance(1ms);
    elapsed += 1ms;
    EXPECT_EQ(fired[i], 1) << "delay " << delays[i].count() << " ms did not fire on time";
  }
}

TEST(WheelSemantics, DelayBeyondTheTopLevelRangeHopsAndFiresOnTime) {
  // With a 1 us tick, 2^31 ticks is about 36 minutes: a 3 h delay takes the far
  // path (hops through the wheel) and must still fire at exactly its tick.
  ManualTimer mt(1us, 64);
  int fired = 0;
  mt.timer.new_timeout([&] { ++fired; }, 3h);
  Timeout near = mt.timer.new_timeout([] {}, 10min);
  for (int i = 0; i < 179; ++i) mt.advance(1min);  // 2 h 59 min, hopping on the way
  EXPECT_TRUE(near.is_expired());
  EXPECT_EQ(fired, 0);
  mt.advance(59s);
  mt.advance(999999us);
  EXPECT_EQ(fired, 0);
  mt.advance(1us);
  EXPECT_EQ(fired, 1);
}

TEST(WheelSemantics, FarTimeoutCanBeCancelled) {
  ManualTimer mt(1us, 64);
  int fired = 0;
  Timeout t = mt.timer.new_timeout([&] { ++fired; }, 5h);
  mt.advance(1h);
  EXPECT_TRUE(t.cancel());
  mt.advance(5h);
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(mt.timer.stats().pending, 0u);
}

TEST(WheelSemantics, ScheduleAfterLongIdleUsesCurrentTime) {
  ManualTimer mt(1us, 16);
  mt.clock.advance(2h);  // the wheel has not been advanced for 2^32+ ticks
  int fired = 0;
  mt.timer.new_timeout([&] { ++fired; }, 5ms);
  EXPECT_EQ(mt.advance(4999us), 0u);
  EXPECT_EQ(mt.advance(1us), 1u);
  EXPECT_EQ(fired, 1);
}

// Property: for random delays over six orders of magnitude and random clock
// steps, every timeout fires in the first run_expired() whose clock has reached
// its tick-rounded deadline: never before, never later.
void check_random_schedule(std::size_t ticks_per_wheel, std::uint64_t seed) {
  ManualTimer mt(1ms, ticks_per_wheel);
  std::mt19937_64 rng(seed);
  constexpr int kN = 5000;
  std::vector<std::int64_t> due_ms(kN), fired_at_ms(kN, -1);
  std::int64_t now_ms = 0;
  std::vector<std::int64_t> steps;  // the clock at every run_expired()
  auto fire = [&](int i) { fired_at_ms[static_cast<std::size_t>(i)] = now_ms; };
  for (int i = 0; i < kN; ++i) {
    // Interleave scheduling with time passing, so timeouts land at every level.
    if (i % 50 == 0) {
      const auto step = std::uniform_int_distribution<std::int64_t>(0, 300)(rng);
      now_ms += step;
      mt.advance(std::chrono::milliseconds(step));
      steps.push_back(now_ms);
    }
    const auto exp = std::uniform_int_distribution<int>(0, 6)(rng);
    std::int64_t d = std::uniform_int_distribution<std::int64_t>(1, 9)(rng);
    for (int k = 0; k < exp; ++k) d *= 10;
    due_ms[static_cast<std::size_t>(i)] = now_ms + d;
    mt.timer.new_timeout([&fire, i] { fire(i); }, std::chrono::milliseconds(d));
  }
  while (mt.timer.stats().pending > 0) {
    const auto step = std::uniform_int_distribution<std::int64_t>(1, 20000)(rng);
    now_ms += step;
    mt.advance(std::chrono::milliseconds(step));
    steps.push_back(now_ms);
  }
  for (std::size_t i = 0; i < due_ms.size(); ++i) {
    ASSERT_GE(fired_at_ms[i], due_ms[i]) << "timeout " << i << " fired early";
    // It fired at the first run_expired() at or after its deadline.
    auto it = std::lower_bound(steps.begin(), steps.end(), due_ms[i]);
    ASSERT_NE(it, steps.end());
    ASSERT_EQ(fired_at_ms[i], *it) << "timeout " << i << " fired late";
  }
  const auto st = mt.timer.stats();
  EXPECT_EQ(st.expired, static_cast<std::uint64_t>(kN));
  EXPECT_EQ(st.pending, 0u);
}

TEST(WheelSemantics, RandomSchedulesFireExactlyOnTimeWithWideLevels) { check_random_schedule(512, 1); }
TEST(WheelSemantics, RandomSchedulesFireExactlyOnTimeWithNarrowLevels) { check_random_schedule(2, 2); }
TEST(WheelSemantics, RandomSchedulesFireExactlyOnTimeWithWidestLevels) { check_random_schedule(4096, 3); }

TEST(WheelSemantics, TaskSchedulingANewTimeoutRunsItLater) {
  ManualTimer mt;
  std::vector<std::int64_t> runs;
  auto now_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(mt.clock.now().time_since_epoch()).count();
  };
  const auto t0 = now_ms();
  mt.timer.new_timeout(
      [&](Timeout& t) {
        runs.push_back(now_ms() - t0);
        t.timer()->new_timeout([&] { runs.push_back(now_ms() - t0); }, 5ms);
      },
      3ms);
  for (int i = 0; i < 10; ++i) mt.advance(1ms);
  EXPECT_EQ(runs, (std::vector<std::int64_t>{3, 8}));
}

TEST(WheelSemantics, LatenessHistogramCountsEveryExpiry) {
  ManualTimer mt;
  for (int i = 0; i < 10; ++i) mt.timer.new_timeout([] {}, 2ms);
  mt.advance(2ms);  // exactly on time
  mt.timer.new_timeout([] {}, 1ms);
  mt.advance(1ms + 700us);  // 700 us late
  const auto st = mt.timer.stats();
  EXPECT_EQ(st.lateness_us[0], 10u);
  EXPECT_EQ(st.lateness_us[10], 1u);  // [512, 1024) us
  EXPECT_EQ(st.lateness_quantile_us(0.5), 1u);
  EXPECT_EQ(st.lateness_quantile_us(1.0), 1024u);
}

}  // namespace
