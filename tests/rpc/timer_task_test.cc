// AbstractTimerTask on a manual clock: reschedules itself every tick, survives
// its own exceptions, stops when cancelled, when its owner is gone, and when
// the timer stops.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/channel_timer_task.h"

#include "support/log_capture.h"
#include "support/manual_timer.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::AbstractTimerTask;
using wheelrpc::rpc::ChannelProvider;
using wheelrpc::rpc::WatchedChannel;
using wheelrpc::test::ManualTimer;

namespace {

// Counts visits; throws on the visits listed in `throw_on`.
class CountingTask final : public AbstractTimerTask {
 public:
  CountingTask(ChannelProvider p, std::chrono::milliseconds tick) : AbstractTimerTask(std::move(p), tick) {}
  std::atomic<int> visits{0};
  int throw_on = -1;

 private:
  void do_task(const WatchedChannel&, std::chrono::steady_clock::time_point) override {
    if (visits.fetch_add(1) == throw_on) throw std::runtime_error("task work failed");
  }
  const char* name() const noexcept override { return "CountingTask"; }
};

ChannelProvider two_entries() {
  return [](std::vector<WatchedChannel>& out) {
    out.resize(2);
    return true;
  };
}

TEST(TimerTask, RunsEveryTickAndReschedulesItself) {
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>(two_entries(), 10ms);
  task->start(mt.timer);
  mt.advance(9ms);
  EXPECT_EQ(task->runs(), 0u);
  mt.advance(1ms);
  EXPECT_EQ(task->runs(), 1u);
  EXPECT_EQ(task->visits.load(), 2) << "once per watched channel";
  for (int i = 0; i < 5; ++i) mt.advance(10ms);
  EXPECT_EQ(task->runs(), 6u);
  EXPECT_EQ(mt.timer.stats().pending, 1u) << "always exactly one next run scheduled";
}

TEST(TimerTask, CheckWithinBringsTheNextRunForwardOnce) {
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>(two_entries(), 100ms);
  task->check_within(1ms);  // before start(): nothing to move
  task->start(mt.timer);
  mt.advance(10ms);
  task->check_within(20ms);  // due at 30 ms instead of 100 ms
  task->check_within(50ms);  // later than planned: ignored
  mt.advance(19ms);
  EXPECT_EQ(task->runs(), 0u);
  mt.advance(1ms);
  EXPECT_EQ(task->runs(), 1u);
  EXPECT_EQ(mt.timer.stats().pending, 1u) << "the replaced run was cancelled";
  mt.advance(99ms);
  EXPECT_EQ(task->runs(), 1u) << "back to the tick after the early run";
  mt.advance(1ms);
  EXPECT_EQ(task->runs(), 2u);
  task->cancel();
  task->check_within(1ms);  // after cancel(): nothing
  mt.advance(200ms);
  EXPECT_EQ(task->runs(), 2u);
  EXPECT_EQ(mt.timer.stats().pending, 0u);
}

// Asked while a run is in progress (its timeout no longer pending), the run's
// own reschedule takes the shorter delay.
class AskingTask final : public AbstractTimerTask {
 public:
  AskingTask(ChannelProvider p, std::chrono::milliseconds tick) : AbstractTimerTask(std::move(p), tick) {}
  std::atomic<int> visits{0};

 private:
  void do_task(const WatchedChannel&, std::chrono::steady_clock::time_point) override {
    if (visits.fetch_add(1) == 0) check_within(std::chrono::milliseconds(5));
  }
  const char* name() const noexcept override { return "AskingTask"; }
};

TEST(TimerTask, CheckWithinDuringARunAppliesToItsReschedule) {
  ManualTimer mt;
  auto task = std::make_shared<AskingTask>(
      [](std::vector<WatchedChannel>& out) {
        out.resize(1);
        return true;
      },
      100ms);
  task->start(mt.timer);
  mt.advance(100ms);
  EXPECT_EQ(task->runs(), 1u);
  mt.advance(4ms);
  EXPECT_EQ(task->runs(), 1u);
  mt.advance(1ms);
  EXPECT_EQ(task->runs(), 2u) << "the run asked for a check within 5 ms";
  mt.advance(99ms);
  EXPECT_EQ(task->runs(), 2u);
  mt.advance(1ms);
  EXPECT_EQ(task->runs(), 3u);
  task->cancel();
}

// A task watching one channel sleeps until the channel's next_check (at most
// a tick); over several channels it runs every tick.
class DueTask final : public AbstractTimerTask {
 public:
  DueTask(ChannelProvider p, std::chrono::milliseconds tick, std::chrono::milliseconds every, bool past_tick = false)
      : AbstractTimerTask(std::move(p), tick), every_(every), past_tick_(past_tick) {}

 private:
  void do_task(const WatchedChannel&, std::chrono::steady_clock::time_point) override {}
  std::chrono::steady_clock::time_point next_check(const WatchedChannel&,
                                                   std::chrono::steady_clock::time_point now) const override {
    return now + every_;
  }
  bool sleeps_past_tick() const noexcept override { return past_tick_; }
  const char* name() const noexcept override { return "DueTask"; }
  std::chrono::milliseconds every_;
  bool past_tick_;
};

ChannelProvider entries(std::size_t n) {
  return [n](std::vector<WatchedChannel>& out) {
    out.resize(n);
    return true;
  };
}

TEST(TimerTask, OneChannelRunsWhenItIsDueAtMostATickApart) {
  ManualTimer mt;
  auto soon = std::make_shared<DueTask>(entries(1), 100ms, 30ms);
  auto late = std::make_shared<DueTask>(entries(1), 100ms, 500ms);
  auto many = std::make_shared<DueTask>(entries(2), 100ms, 30ms);
  soon->start(mt.timer);
  late->start(mt.timer);
  many->start(mt.timer);
  mt.advance(100ms);  // the first run of each is one tick after start()
  EXPECT_EQ(soon->runs(), 1u);
  EXPECT_EQ(late->runs(), 1u);
  EXPECT_EQ(many->runs(), 1u);
  mt.advance(29ms);
  EXPECT_EQ(soon->runs(), 1u);
  mt.advance(1ms);
  EXPECT_EQ(soon->runs(), 2u) << "due 30 ms after its run";
  EXPECT_EQ(many->runs(), 1u) << "several channels: every tick";
  for (int i = 0; i < 70; ++i) mt.advance(1ms);  // a step at a time: each run reschedules from its own time
  EXPECT_EQ(soon->runs(), 4u);
  EXPECT_EQ(late->runs(), 2u) << "never more than a tick apart";
  EXPECT_EQ(many->runs(), 2u);
  soon->cancel();
  late->cancel();
  many->cancel();
}

// A task that may sleep past the tick (ReconnectTimerTask on an open channel)
// runs when its one channel is due, however far; check_within() still brings
// it forward; over several channels it runs every tick.
TEST(TimerTask, OneChannelThatMaySleepPastTheTickRunsWhenItIsDue) {
  ManualTimer mt;
  auto late = std::make_shared<DueTask>(entries(1), 100ms, 500ms, /*past_tick=*/true);
  auto many = std::make_shared<DueTask>(entries(2), 100ms, 500ms, /*past_tick=*/true);
  late->start(mt.timer);
  many->start(mt.timer);
  mt.advance(100ms);  // the first run is one tick after start()
  EXPECT_EQ(late->runs(), 1u);
  EXPECT_EQ(many->runs(), 1u);
  for (int i = 0; i < 499; ++i) mt.advance(1ms);
  EXPECT_EQ(late->runs(), 1u) << "asleep past four ticks until its channel is due";
  EXPECT_EQ(many->runs(), 5u) << "several channels: every tick";
  mt.advance(1ms);
  EXPECT_EQ(late->runs(), 2u) << "due 500 ms after its run";
  late->check_within(50ms);  // an owner that knows better
  for (int i = 0; i < 49; ++i) mt.advance(1ms);
  EXPECT_EQ(late->runs(), 2u);
  mt.advance(1ms);
  EXPECT_EQ(late->runs(), 3u) << "brought forward by check_within";
  EXPECT_EQ(mt.timer.stats().pending, 2u) << "one next run each";
  late->cancel();
  many->cancel();
}

// A task due `every` after each run whose clock is the manual timer's, so
// the grid its runs are coalesced onto is exact.
class ManualDueTask final : public AbstractTimerTask {
 public:
  ManualDueTask(ChannelProvider p, std::chrono::milliseconds tick, std::chrono::milliseconds every,
                const wheelrpc::timer::ManualClock& clock)
      : AbstractTimerTask(std::move(p), tick), every_(every), clock_(clock) {}

 private:
  void do_task(const WatchedChannel&, std::chrono::steady_clock::time_point) override {}
  std::chrono::steady_clock::time_point next_check(const WatchedChannel&,
                                                   std::chrono::steady_clock::time_point now) const override {
    return now + every_;
  }
  std::chrono::steady_clock::time_point clock_now() const noexcept override { return clock_.now(); }
  const char* name() const noexcept override { return "ManualDueTask"; }
  std::chrono::milliseconds every_;
  const wheelrpc::timer::ManualClock& clock_;
};

TEST(TimerTask, CoalescedTasksRunTogetherOnTheGridNeverBeforeDue) {
  ManualTimer mt;  // starts at one hour: a multiple of 64 ms
  auto a = std::make_shared<ManualDueTask>(entries(1), 100ms, 30ms, mt.clock);
  auto b = std::make_shared<ManualDueTask>(entries(1), 100ms, 40ms, mt.clock);
  auto plain = std::make_shared<ManualDueTask>(entries(1), 100ms, 30ms, mt.clock);
  a->set_coalescing(64ms);
  b->set_coalescing(64ms);
  a->start(mt.timer);
  b->start(mt.timer);
  plain->start(mt.timer);
  mt.advance(100ms);  // the first runs, at 100 ms; due again at 130 and 140 ms
  ASSERT_EQ(a->runs(), 1u);
  ASSERT_EQ(b->runs(), 1u);
  for (int i = 0; i < 91; ++i) mt.advance(1ms);  // to 191 ms
  EXPECT_EQ(plain->runs(), 4u) << "not coalesced: due 30 ms after each run (130, 160, 190 ms)";
  EXPECT_EQ(a->runs(), 1u) << "coalesced: waits for the grid's step at 192 ms";
  EXPECT_EQ(b->runs(), 1u);
  mt.advance(1ms);  // 192 ms = 3 x 64 ms past the hour
  EXPECT_EQ(a->runs(), 2u) << "both on the same step";
  EXPECT_EQ(b->runs(), 2u);
  a->cancel();
  b->cancel();
  plain->cancel();
}

TEST(TimerTask, CoalescedRoundsUpToTheGrid) {
  using TP = std::chrono::steady_clock::time_point;
  EXPECT_EQ(AbstractTimerTask::coalesced(TP(100ms), 64ms), TP(128ms));
  EXPECT_EQ(AbstractTimerTask::coalesced(TP(128ms), 64ms), TP(128ms)) << "on the grid: unchanged";
  EXPECT_EQ(AbstractTimerTask::coalesced(TP(129ms), 0ms), TP(129ms)) << "no grid";
}

TEST(TimerTask, SurvivesItsOwnExceptions) {
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>(two_entries(), 10ms);
  task->throw_on = 0;
  task->start(mt.timer);
  mt.advance(10ms);
  EXPECT_EQ(task->visits.load(), 2) << "the other channel is still visited";
  mt.advance(10ms);
  EXPECT_EQ(task->runs(), 2u) << "rescheduled after the failure";
  EXPECT_EQ(log.count("task work failed"), 1u);
}

TEST(TimerTask, CancelStopsItForGood) {
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>(two_entries(), 10ms);
  std::weak_ptr<CountingTask> weak = task;
  task->start(mt.timer);
  mt.advance(10ms);
  task->cancel();
  EXPECT_TRUE(task->cancelled());
  mt.advance(100ms);
  EXPECT_EQ(task->runs(), 1u);
  EXPECT_EQ(mt.timer.stats().pending, 0u);
  task.reset();
  EXPECT_TRUE(weak.expired()) << "the timer holds no reference to a cancelled task";
}

TEST(TimerTask, ARunKeepsNothingItsProviderGaveIt) {
  // What the provider hands over (a channel, a reconnect action) is let go of
  // when the run ends: the vector it went into is reused, not kept full.
  ManualTimer mt;
  auto token = std::make_shared<int>(7);
  int calls = 0;
  ChannelProvider provider = [&calls, token](std::vector<WatchedChannel>& out) {
    EXPECT_TRUE(out.empty()) << "the provider gets an empty vector";
    ++calls;
    WatchedChannel w;
    w.reconnect = [token](std::chrono::steady_clock::time_point) {};
    out.push_back(std::move(w));
    return true;
  };
  auto task = std::make_shared<CountingTask>(std::move(provider), 10ms);
  task->start(mt.timer);
  mt.advance(10ms);
  mt.advance(10ms);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(task->runs(), 2u);
  // Held by the test and by the provider's capture only: no run kept a copy.
  EXPECT_EQ(token.use_count(), 2);
  task->cancel();
}

TEST(TimerTask, StopsWhenItsOwnerIsGone) {
  ManualTimer mt;
  auto owner = std::make_shared<int>(1);
  ChannelProvider provider = [weak = std::weak_ptr<int>(owner)](std::vector<WatchedChannel>& out) {
    if (weak.expired()) return false;
    out.resize(1);
    return true;
  };
  auto task = std::make_shared<CountingTask>(provider, 10ms);
  task->start(mt.timer);
  mt.advance(10ms);
  EXPECT_EQ(task->runs(), 1u);
  owner.reset();
  mt.advance(10ms);
  EXPECT_TRUE(task->cancelled());
  mt.advance(100ms);
  EXPECT_EQ(task->runs(), 2u) << "the run that found the owner gone, then none";
  EXPECT_EQ(mt.timer.stats().pending, 0u);
}

TEST(TimerTask, StopsWhenTheTimerStops) {
  ManualTimer mt;
  auto task = std::make_shared<CountingTask>(two_entries(), 10ms);
  task->start(mt.timer);
  auto left = mt.timer.stop();
  EXPECT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].task(), task);
}

// Blocks in its work until released; can cancel itself from inside it.
class BlockingTask final : public AbstractTimerTask {
 public:
  BlockingTask(ChannelProvider p, std::chrono::milliseconds tick) : AbstractTimerTask(std::move(p), tick) {}
  std::atomic<bool> entered{false}, release{false}, finished{false};
  bool cancel_self = false;

 private:
  void do_task(const WatchedChannel&, std::chrono::steady_clock::time_point) override {
    entered = true;
    if (cancel_self) cancel();  // must not wait for itself
    while (!release.load()) std::this_thread::yield();
    finished = true;
  }
  const char* name() const noexcept override { return "BlockingTask"; }
};

ChannelProvider one_entry() {
  return [](std::vector<WatchedChannel>& out) {
    out.resize(1);
    return true;
  };
}

TEST(TimerTask, CancelWaitsForARunInProgressOnAnotherThread) {
  ManualTimer mt;
  auto task = std::make_shared<BlockingTask>(one_entry(), 10ms);
  task->start(mt.timer);
  std::thread worker([&] { mt.advance(10ms); });  // runs the task, which blocks
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return task->entered.load(); }));
  std::atomic<bool> cancelling{false}, returned{false}, finished_at_return{false};
  std::thread canceller([&] {
    cancelling = true;
    task->cancel();
    finished_at_return = task->finished.load();
    returned = true;
  });
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return cancelling.load(); }));
  // Give a cancel() that did not wait every chance to return early.
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(returned.load()) << "cancel() returned while the run was still working";
  task->release = true;
  canceller.join();
  worker.join();
  EXPECT_TRUE(finished_at_return.load());
  EXPECT_TRUE(task->cancelled());
  mt.advance(50ms);
  EXPECT_EQ(task->runs(), 1u) << "no run after cancel()";
}

TEST(TimerTask, CancelFromInsideItsOwnRunDoesNotWaitForItself) {
  ManualTimer mt;
  auto task = std::make_shared<BlockingTask>(one_entry(), 10ms);
  task->cancel_self = true;
  task->release = true;
  task->start(mt.timer);
  mt.advance(10ms);  // would hang if cancel() waited for its own run
  EXPECT_TRUE(task->finished.load());
  EXPECT_TRUE(task->cancelled());
  mt.advance(50ms);
  EXPECT_EQ(task->runs(), 1u);
}

}  // namespace
