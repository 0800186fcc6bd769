// Expired tasks handed to an executor instead of running on the worker.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <thread>

#include "support/log_capture.h"
#include "support/manual_timer.h"

using namespace std::chrono_literals;
using wheelrpc::test::ManualTimer;
using wheelrpc::timer::ExpiredTask;
using wheelrpc::timer::Timeout;
using wheelrpc::timer::TimeoutState;

namespace {

struct QueueExecutor {
  std::deque<ExpiredTask> queue;
  wheelrpc::timer::TaskExecutor executor() {
    return [this](ExpiredTask t) { queue.push_back(std::move(t)); };
  }
};

TEST(Executor, ExpiredTasksRunWhereTheExecutorRunsThem) {
  QueueExecutor ex;
  ManualTimer mt(1ms, 512, 0, ex.executor());
  std::thread::id ran_on;
  int runs = 0;
  Timeout t = mt.timer.new_timeout(
      [&](Timeout& self) {
        ++runs;
        ran_on = std::this_thread::get_id();
        EXPECT_TRUE(self.is_expired());
      },
      2ms);
  EXPECT_EQ(mt.advance(2ms), 1u);
  EXPECT_EQ(runs, 0) << "handed to the executor, not run inline";
  ASSERT_EQ(ex.queue.size(), 1u);
  EXPECT_EQ(ex.queue.front().timeout(), t);
  EXPECT_TRUE(t.is_expired());
  EXPECT_FALSE(t.cancel()) << "too late once handed to the executor";

  std::thread runner([&] {
    ex.queue.front()();
    ex.queue.front()();  // a second call does nothing
  });
  runner.join();
  EXPECT_EQ(runs, 1);
  EXPECT_NE(ran_on, std::this_thread::get_id());
  ex.queue.clear();
  EXPECT_EQ(mt.timer.stats().dropped, 0u);
  EXPECT_EQ(t.state(), TimeoutState::expired);
}

TEST(Executor, DroppedExpiredTaskFreesItsTimeoutWithoutRunning) {
  QueueExecutor ex;
  ManualTimer mt(1ms, 512, 0, ex.executor());
  auto token = std::make_shared<int>(1);
  std::weak_ptr<int> weak = token;
  int runs = 0;
  mt.timer.new_timeout([&runs, token = std::move(token)] { ++runs; }, 1ms);
  mt.advance(1ms);
  ASSERT_EQ(ex.queue.size(), 1u);
  ExpiredTask moved = std::move(ex.queue.front());
  ex.queue.clear();  // the moved-from task does nothing
  EXPECT_FALSE(weak.expired());
  { ExpiredTask dropped = std::move(moved); }
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(mt.timer.stats().dropped, 1u);
}

TEST(Executor, ExecutorThatThrowsIsLoggedAndTheTaskDropped) {
  wheelrpc::test::LogCapture log("wheelrpc.timer");
  ManualTimer mt(1ms, 512, 0, [](ExpiredTask) { throw std::runtime_error("executor full"); });
  int runs = 0;
  mt.timer.new_timeout([&] { ++runs; }, 1ms);
  mt.advance(1ms);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(log.count("executor full"), 1u);
  EXPECT_EQ(mt.timer.stats().dropped, 1u);
}

TEST(Executor, ThrowingTaskOnTheExecutorIsLogged) {
  wheelrpc::test::LogCapture log("wheelrpc.timer");
  QueueExecutor ex;
  ManualTimer mt(1ms, 512, 0, ex.executor());
  mt.timer.new_timeout([] { throw std::runtime_error("task failed on executor"); }, 1ms);
  mt.advance(1ms);
  ASSERT_EQ(ex.queue.size(), 1u);
  ex.queue.front()();
  ex.queue.clear();
  EXPECT_EQ(log.count("task failed on executor"), 1u);
  EXPECT_EQ(mt.timer.stats().failed, 1u);
}

}  // namespace
