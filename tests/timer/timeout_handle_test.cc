// The Timeout handle: cancel semantics, state queries, generation-safe reuse,
// task() access and task lifetime.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "support/manual_timer.h"

using namespace std::chrono_literals;
using wheelrpc::test::ManualTimer;
using wheelrpc::timer::Timeout;
using wheelrpc::timer::TimeoutState;
using wheelrpc::timer::TimerTask;

namespace {

class CountingTask : public TimerTask {
 public:
  void run(Timeout& t) override {
    ++runs;
    saw_expired = t.is_expired();
    saw_cancel_result = t.cancel();
  }
  int runs = 0;
  bool saw_expired = false;
  bool saw_cancel_result = true;
};

TEST(TimeoutHandle, IsSixteenBytes) { EXPECT_EQ(sizeof(Timeout), 16u); }

TEST(TimeoutHandle, EmptyHandleIsHarmless) {
  Timeout t;
  EXPECT_FALSE(t);
  EXPECT_EQ(t.timer(), nullptr);
  EXPECT_FALSE(t.cancel());
  EXPECT_EQ(t.state(), TimeoutState::empty);
  EXPECT_EQ(t.task(), nullptr);
}

TEST(TimeoutHandle, CancelBeforeExpiryPreventsTheRun) {
  ManualTimer mt;
  int runs = 0;
  Timeout t = mt.timer.new_timeout([&] { ++runs; }, 5ms);
  EXPECT_EQ(t.timer(), &mt.timer);
  EXPECT_EQ(t.state(), TimeoutState::pending);
  EXPECT_TRUE(t.cancel());
  EXPECT_FALSE(t.cancel()) << "only the first cancel prevents anything";
  EXPECT_TRUE(t.is_cancelled());
  EXPECT_FALSE(t.is_expired());
  mt.advance(10ms);
  EXPECT_EQ(runs, 0);
  const auto st = mt.timer.stats();
  EXPECT_EQ(st.cancelled, 1u);
  EXPECT_EQ(st.expired, 0u);
  EXPECT_EQ(st.pending, 0u);
}

TEST(TimeoutHandle, CancelAfterExpiryReturnsFalse) {
  ManualTimer mt;
  int runs = 0;
  Timeout t = mt.timer.new_timeout([&] { ++runs; }, 1ms);
  mt.advance(1ms);
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(t.is_expired());
  EXPECT_FALSE(t.cancel());
  EXPECT_TRUE(t.is_expired());
  EXPECT_FALSE(t.is_cancelled());
}

TEST(TimeoutHandle, InsideItsTaskTheTimeoutIsExpiredAndCannotBeCancelled) {
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>();
  mt.timer.new_timeout(task, 1ms);
  mt.advance(1ms);
  EXPECT_EQ(task->runs, 1);
  EXPECT_TRUE(task->saw_expired);
  EXPECT_FALSE(task->saw_cancel_result);
}

TEST(TimeoutHandle, CancelFromInsideATaskPreventsALaterTimeout) {
  ManualTimer mt;
  int later_runs = 0;
  Timeout later = mt.timer.new_timeout([&] { ++later_runs; }, 10ms);
  bool cancelled = false;
  mt.timer.new_timeout([&] { cancelled = later.cancel(); }, 2ms);
  for (int i = 0; i < 20; ++i) mt.advance(1ms);
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(later_runs, 0);
}

TEST(TimeoutHandle, CancelFromInsideATaskOfTheSameTickIsTooLate) {
  // Both expired in the same tick: the second is already handed to run (as in Netty).
  ManualTimer mt;
  int second_runs = 0;
  Timeout second;
  bool cancelled = true;
  mt.timer.new_timeout([&] { cancelled = second.cancel(); }, 2ms);
  second = mt.timer.new_timeout([&] { ++second_runs; }, 2ms);
  mt.advance(2ms);
  EXPECT_FALSE(cancelled);
  EXPECT_EQ(second_runs, 1);
}

TEST(TimeoutHandle, StaleHandleNeverTouchesTheRecordsNextUse) {
  ManualTimer mt;
  int a_runs = 0, b_runs = 0;
  Timeout a = mt.timer.new_timeout([&] { ++a_runs; }, 5ms);
  ASSERT_TRUE(a.cancel());
  Timeout b = mt.timer.new_timeout([&] { ++b_runs; }, 5ms);
  ASSERT_EQ(a.id(), b.id()) << "the freed record is reused at once";
  ASSERT_NE(a.generation(), b.generation());
  EXPECT_FALSE(a.cancel());
  EXPECT_EQ(a.state(), TimeoutState::cancelled);
  EXPECT_EQ(b.state(), TimeoutState::pending);
  EXPECT_NE(a, b);
  mt.advance(5ms);
  EXPECT_EQ(b_runs, 1);
  EXPECT_EQ(a_runs, 0);
  EXPECT_EQ(a.state(), TimeoutState::finished) << "two uses later the outcome is forgotten";
  EXPECT_EQ(b.state(), TimeoutState::expired);
  EXPECT_FALSE(a.cancel());
}

TEST(TimeoutHandle, TaskReturnsTheTimerTaskWhilePending) {
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>();
  Timeout t = mt.timer.new_timeout(task, 5ms);
  EXPECT_EQ(t.task(), task);
  Timeout f = mt.timer.new_timeout([] {}, 5ms);
  EXPECT_EQ(f.task(), nullptr) << "a plain callable has no TimerTask";
  mt.advance(5ms);
  EXPECT_EQ(t.task(), nullptr) << "released once run";
}

TEST(TimeoutHandle, CancelDestroysTheTaskBeforeReturning) {
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>();
  std::weak_ptr<CountingTask> weak = task;
  Timeout t = mt.timer.new_timeout(std::move(task), 5ms);
  EXPECT_FALSE(weak.expired());
  EXPECT_TRUE(t.cancel());
  EXPECT_TRUE(weak.expired());
}

TEST(TimeoutHandle, RunTasksAreDestroyedAfterRunning) {
  ManualTimer mt;
  auto token = std::make_shared<int>(7);
  std::weak_ptr<int> weak = token;
  std::string big(100, 'x');  // a large capture: the task lives on the heap
  int seen = 0;
  mt.timer.new_timeout([token = std::move(token), big, &seen] { seen = *token + static_cast<int>(big.size()); }, 1ms);
  EXPECT_FALSE(weak.expired());
  mt.advance(1ms);
  EXPECT_EQ(seen, 107);
  EXPECT_TRUE(weak.expired());
}

TEST(TimeoutHandle, HandlesCompareByIdentity) {
  ManualTimer mt;
  Timeout a = mt.timer.new_timeout([] {}, 5ms);
  Timeout copy = a;
  Timeout b = mt.timer.new_timeout([] {}, 5ms);
  EXPECT_EQ(a, copy);
  EXPECT_NE(a, b);
  EXPECT_TRUE(copy.cancel());
  EXPECT_TRUE(a.is_cancelled()) << "a cancel through a copy is seen by every copy";
}

}  // namespace
