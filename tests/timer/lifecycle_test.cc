// Construction, lazy start, stop(), errors, limits, failing tasks and the
// too-many-timers warning.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "support/log_capture.h"
#include "support/manual_timer.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using wheelrpc::test::LogCapture;
using wheelrpc::test::ManualTimer;
using wheelrpc::timer::errc;
using wheelrpc::timer::HashedWheelTimer;
using wheelrpc::timer::HashedWheelTimerOptions;
using wheelrpc::timer::Timeout;
using wheelrpc::timer::TimeoutState;
using wheelrpc::timer::TimerError;
using wheelrpc::timer::TimerTask;

namespace {

struct NoopTask : TimerTask {
  void run(Timeout&) override {}
};

// Names of this process's threads.
std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::string name;
      std::getline(f, name);
      names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

std::size_t count_threads_named(const std::string& name) {
  std::size_t n = 0;
  for (const auto& t : thread_names()) n += t == name;
  return n;
}

HashedWheelTimerOptions named(std::string name) {
  HashedWheelTimerOptions o;
  o.thread_name = std::move(name);
  return o;
}

TEST(Lifecycle, StartsItsWorkerLazily) {
  HashedWheelTimer timer(named("lazy-timer"));
  EXPECT_EQ(count_threads_named("lazy-timer"), 0u) << "no thread before the first timeout";
  timer.new_timeout([] {}, 1h);
  EXPECT_TRUE(wheelrpc::test::wait_until([] { return count_threads_named("lazy-timer") == 1; }));
  timer.stop();
  EXPECT_EQ(count_threads_named("lazy-timer"), 0u) << "stop() joins the worker";
}

TEST(Lifecycle, StopReturnsExactlyTheTimeoutsThatNeverRan) {
  ManualTimer mt;
  auto task = std::make_shared<NoopTask>();
  Timeout ran = mt.timer.new_timeout([] {}, 1ms);
  Timeout cancelled = mt.timer.new_timeout([] {}, 5ms);
  Timeout left1 = mt.timer.new_timeout(task, 10ms);
  Timeout left2 = mt.timer.new_timeout([] {}, 24h);
  mt.advance(2ms);
  ASSERT_TRUE(cancelled.cancel());

  auto left = mt.timer.stop();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_NE(std::find(left.begin(), left.end(), left1), left.end());
  EXPECT_NE(std::find(left.begin(), left.end(), left2), left.end());
  EXPECT_EQ(left1.state(), TimeoutState::unprocessed);
  EXPECT_FALSE(left1.is_expired());
  EXPECT_FALSE(left1.is_cancelled());
  EXPECT_EQ(left1.task(), task) << "the task of an unprocessed timeout stays reachable";
  EXPECT_TRUE(mt.timer.is_stopped());
  EXPECT_EQ(mt.timer.stats().pending, 0u);
  EXPECT_TRUE(mt.timer.stop().empty()) << "a second stop() returns nothing";
  EXPECT_EQ(mt.advance(1h), 0u) << "nothing runs after stop()";
  EXPECT_EQ(ran.state(), TimeoutState::expired);
}

TEST(Lifecycle, DestroyingAStoppedTimerReleasesUnprocessedTasks) {
  auto task = std::make_shared<NoopTask>();
  std::weak_ptr<TimerTask> weak = task;
  {
    ManualTimer mt;
    mt.timer.new_timeout(std::move(task), 1h);
    auto left = mt.timer.stop();
    ASSERT_EQ(left.size(), 1u);
    EXPECT_FALSE(weak.expired());
    EXPECT_TRUE(left[0].cancel()) << "cancelling an unprocessed timeout releases its task";
    EXPECT_TRUE(weak.expired());
  }
  auto task2 = std::make_shared<NoopTask>();
  std::weak_ptr<TimerTask> weak2 = task2;
  {
    ManualTimer mt;
    mt.timer.new_timeout(std::move(task2), 1h);
  }  // destroyed without stop(): stops itself and releases the task
  EXPECT_TRUE(weak2.expired());
}

TEST(Lifecycle, NewTimeoutAfterStopFailsClearly) {
  ManualTimer mt;
  mt.timer.stop();
  try {
    mt.timer.new_timeout([] {}, 1ms);
    FAIL() << "expected TimerError";
  } catch (const TimerError& e) {
    EXPECT_EQ(e.code(), errc::timer_stopped);
    EXPECT_NE(std::string(e.what()).find("stopped"), std::string::npos);
  }
  std::error_code ec;
  Timeout t = mt.timer.new_timeout([] {}, 1ms, ec);
  EXPECT_EQ(ec, errc::timer_stopped);
  EXPECT_FALSE(t);
  EXPECT_EQ(ec.category().name(), std::string("wheelrpc.timer"));
  EXPECT_EQ(mt.timer.stats().rejected, 2u);
}

TEST(Lifecycle, NeverStartedTimerCanBeStopped) {
  HashedWheelTimer timer;
  EXPECT_TRUE(timer.stop().empty());
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), TimerError);
}

TEST(Lifecycle, StopFromInsideATaskFailsClearly) {
  wheelrpc::test::Latch done(1);
  wheelrpc::test::Latch again(1);
  std::string error;
  HashedWheelTimer timer;
  timer.new_timeout(
      [&] {
        try {
          timer.stop();
        } catch (const std::logic_error& e) {
          error = e.what();
        }
        done.count_down();
      },
      1ms);
  ASSERT_TRUE(done.wait_for());
  EXPECT_NE(error.find("stop()"), std::string::npos) << error;
  EXPECT_FALSE(timer.is_stopped());
  // The wheel goes on.
  timer.new_timeout([&] { again.count_down(); }, 1ms);
  EXPECT_TRUE(again.wait_for());
}

TEST(Lifecycle, RunExpiredFromInsideATaskFailsClearly) {
  ManualTimer mt;
  std::string error;
  mt.timer.new_timeout(
      [&] {
        try {
          mt.timer.run_expired();
        } catch (const std::logic_error& e) {
          error = e.what();
        }
      },
      1ms);
  mt.advance(1ms);
  EXPECT_NE(error.find("run_expired()"), std::string::npos) << error;
}

TEST(Lifecycle, RunExpiredNeedsManualDrive) {
  HashedWheelTimer timer;
  EXPECT_THROW(timer.run_expired(), std::logic_error);
}

TEST(Lifecycle, MaxPendingTimeoutsIsEnforced) {
  ManualTimer mt(1ms, 512, 3);
  std::vector<Timeout> ts;
  for (int i = 0; i < 3; ++i) ts.push_back(mt.timer.new_timeout([] {}, 10ms));
  try {
    mt.timer.new_timeout([] {}, 10ms);
    FAIL() << "expected TimerError";
  } catch (const TimerError& e) {
    EXPECT_EQ(e.code(), errc::too_many_pending);
  }
  ASSERT_TRUE(ts[0].cancel());
  ts.push_back(mt.timer.new_timeout([] {}, 1ms));  // room again after a cancel
  std::error_code ec;
  mt.timer.new_timeout([] {}, 1ms, ec);
  EXPECT_EQ(ec, errc::too_many_pending);
  mt.advance(1ms);  // one expires
  mt.timer.new_timeout([] {}, 1ms, ec);
  EXPECT_FALSE(ec) << "room again after an expiry";
}

TEST(Lifecycle, OptionsAreValidated) {
  auto with = [](auto set) {
    HashedWheelTimerOptions o;
    set(o);
    return o;
  };
  EXPECT_THROW(HashedWheelTimer(with([](auto& o) { o.tick_duration = 0ns; })), std::invalid_argument);
  EXPECT_THROW(HashedWheelTimer(with([](auto& o) { o.tick_duration = -1ms; })), std::invalid_argument);
  EXPECT_THROW(HashedWheelTimer(with([](auto& o) { o.tick_duration = 2h; })), std::invalid_argument);
  EXPECT_THROW(HashedWheelTimer(with([](auto& o) { o.ticks_per_wheel = 0; })), std::invalid_argument);
  EXPECT_THROW(HashedWheelTimer(with([](auto& o) { o.ticks_per_wheel = 4097; })), std::invalid_argument);
  EXPECT_THROW(HashedWheelTimer(with([](auto& o) { o.shards = 33; })), std::invalid_argument);
  wheelrpc::timer::ManualClock clock;
  EXPECT_THROW(HashedWheelTimer(with([&](auto& o) { o.clock = &clock; })), std::invalid_argument);
  try {
    HashedWheelTimer t(with([](auto& o) { o.ticks_per_wheel = 0; }));
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ticks_per_wheel"), std::string::npos);
  }
}

TEST(Lifecycle, TicksPerWheelRoundsUpToAPowerOfTwo) {
  EXPECT_EQ(HashedWheelTimer(1ms, 100).ticks_per_wheel(), 128u);
  EXPECT_EQ(HashedWheelTimer(1ms, 512).ticks_per_wheel(), 512u);
  EXPECT_EQ(HashedWheelTimer(1ms, 1).ticks_per_wheel(), 2u);
  EXPECT_EQ(HashedWheelTimer(30ms, 4096).tick_duration(), 30ms);
  HashedWheelTimerOptions o;
  o.shards = 3;
  EXPECT_EQ(HashedWheelTimer(o).shard_count(), 4u);
}

TEST(Lifecycle, ATaskThatThrowsIsLoggedAndTheWheelGoesOn) {
  LogCapture log("wheelrpc.timer");
  ManualTimer mt;
  int after = 0;
  mt.timer.new_timeout([] { throw std::runtime_error("boom in task"); }, 1ms);
  mt.timer.new_timeout([] { throw 42; }, 1ms);
  mt.timer.new_timeout([&] { ++after; }, 1ms);
  mt.timer.new_timeout([&] { ++after; }, 2ms);
  mt.advance(1ms);
  mt.advance(1ms);
  EXPECT_EQ(after, 2);
  EXPECT_EQ(log.count("boom in task"), 1u);
  EXPECT_EQ(log.count("non-std exception"), 1u);
  EXPECT_EQ(mt.timer.stats().failed, 2u);
}

TEST(Lifecycle, WarnsOnceWhenTooManyTimersAreAlive) {
  LogCapture log("wheelrpc.timer");
  std::vector<std::unique_ptr<HashedWheelTimer>> timers;
  HashedWheelTimerOptions o;
  o.manual_drive = true;  // no threads needed to count instances
  o.shards = 1;
  o.ticks_per_wheel = 2;
  const std::size_t base = HashedWheelTimer::instance_count();
  for (std::size_t i = base; i <= HashedWheelTimer::kInstanceWarningThreshold; ++i) {
    timers.push_back(std::make_unique<HashedWheelTimer>(o));
  }
  EXPECT_EQ(log.count("meant to be shared"), 1u);
  timers.push_back(std::make_unique<HashedWheelTimer>(o));
  timers.push_back(std::make_unique<HashedWheelTimer>(o));
  EXPECT_EQ(log.count("meant to be shared"), 1u) << "only once per process";
  EXPECT_EQ(HashedWheelTimer::instance_count(), base + timers.size());
}

}  // namespace
