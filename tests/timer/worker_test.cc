// The real worker thread: wake-ups, producers on many threads, cancel racing
// expiry. Real time is involved, so these tests assert ordering and generous
// bounds, never exact sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "support/wait.h"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using wheelrpc::test::Latch;
using wheelrpc::test::wait_until;
using wheelrpc::timer::HashedWheelTimer;
using wheelrpc::timer::HashedWheelTimerOptions;
using wheelrpc::timer::Timeout;

namespace {

TEST(Worker, NeverFiresEarlyAndFiresWithinABound) {
  constexpr int kN = 200;
  std::vector<Clock::time_point> due(kN), fired(kN);
  Latch done(kN);
  // Declared after what its tasks touch: destroyed first, it joins its worker
  // before those go away.
  HashedWheelTimer timer;  // 1 ms tick
  std::mt19937 rng(7);
  for (int i = 0; i < kN; ++i) {
    const auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 30000)(rng));
    const auto u = static_cast<std::size_t>(i);
    due[u] = Clock::now() + delay;
    timer.new_timeout(
        [&, u] {
          fired[u] = Clock::now();
          done.count_down();
        },
        delay);
  }
  ASSERT_TRUE(done.wait_for(10s));
  for (std::size_t i = 0; i < kN; ++i) {
    EXPECT_GE(fired[i], due[i]) << "timeout " << i << " fired early";
    EXPECT_LT(fired[i] - due[i], 2s) << "timeout " << i << " far too late";
  }
}

TEST(Worker, NewEarliestTimeoutWakesASleepingWorker) {
  Latch done(1);
  HashedWheelTimer timer;
  timer.new_timeout([] {}, 1h);  // the worker now sleeps until then
  const auto t0 = Clock::now();
  timer.new_timeout([&] { done.count_down(); }, 5ms);
  ASSERT_TRUE(done.wait_for(10s)) << "the worker was not woken for the earlier timeout";
  EXPECT_GE(Clock::now() - t0, 5ms);
}

TEST(Worker, IdleWorkerDoesNotTick) {
  HashedWheelTimer timer;  // 1 ms tick: Netty's worker would wake ~1000 times a second
  Timeout far = timer.new_timeout([] {}, 1h);
  const auto before = timer.stats().wakeups;
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(timer.stats().wakeups - before, 2u);
  EXPECT_TRUE(far.cancel());
}

TEST(Worker, ManyProducerThreadsEachTimeoutCompletesExactlyOnce) {
  constexpr int kThreads = 8, kPerThread = 4000;
  std::vector<std::atomic<int>> runs(kThreads * kPerThread);
  std::vector<char> cancelled(kThreads * kPerThread, 0);
  HashedWheelTimer timer;
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<Timeout> mine;
      for (int k = 0; k < kPerThread; ++k) {
        const std::size_t id = static_cast<std::size_t>(t * kPerThread + k);
        const auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 20000)(rng));
        mine.push_back(timer.new_timeout([&runs, id] { runs[id].fetch_add(1); }, delay));
      }
      for (int k = 0; k < kPerThread; k += 2) {  // cancel every other one, some too late
        if (mine[static_cast<std::size_t>(k)].cancel()) cancelled[static_cast<std::size_t>(t * kPerThread + k)] = 1;
      }
    });
  }
  for (auto& p : producers) p.join();
  ASSERT_TRUE(wait_until([&] { return timer.stats().pending == 0; }));
  timer.stop();  // joins the worker: every task that expired has finished running
  const auto st = timer.stats();
  std::uint64_t ran = 0, n_cancelled = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ASSERT_EQ(runs[i].load() + cancelled[i], 1)
        << "timeout " << i << " ran " << runs[i].load() << " times, cancelled=" << int(cancelled[i]);
    ran += static_cast<std::uint64_t>(runs[i].load());
    n_cancelled += static_cast<std::uint64_t>(cancelled[i]);
  }
  EXPECT_EQ(st.scheduled, static_cast<std::uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(st.cancelled, n_cancelled);
  EXPECT_EQ(st.expired, ran);
}

TEST(Worker, CancelRacingExpiryHasExactlyOneWinner) {
  constexpr int kN = 3000;
  std::vector<std::atomic<int>> runs(kN);
  std::vector<Timeout> ts(kN);
  Latch first_ran(1);
  HashedWheelTimer timer(100us);
  for (int i = 0; i < kN; ++i) {
    const auto u = static_cast<std::size_t>(i);
    ts[u] = timer.new_timeout(
        [&runs, &first_ran, u] {
          runs[u].fetch_add(1);
          first_ran.count_down();
        },
        std::chrono::microseconds(100 * (i % 50)));
  }
  // Once expiry is under way, cancel everything from two threads at once.
  ASSERT_TRUE(first_ran.wait_for());
  std::vector<std::atomic<int>> cancel_wins(kN);
  auto canceller = [&] {
    for (int i = 0; i < kN; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (ts[u].cancel()) cancel_wins[u].fetch_add(1);
    }
  };
  std::thread a(canceller), b(canceller);
  a.join();
  b.join();
  ASSERT_TRUE(wait_until([&] { return timer.stats().pending == 0; }));
  timer.stop();  // every expired task has finished running
  ASSERT_TRUE(wait_until([&] {
    int total = 0;
    for (int i = 0; i < kN; ++i)
      total += runs[static_cast<std::size_t>(i)].load() + cancel_wins[static_cast<std::size_t>(i)].load();
    return total == kN;
  }));
  std::uint64_t cancelled = 0;
  for (int i = 0; i < kN; ++i) {
    const auto u = static_cast<std::size_t>(i);
    ASSERT_EQ(runs[u].load() + cancel_wins[u].load(), 1) << "timeout " << i;
    cancelled += static_cast<std::uint64_t>(cancel_wins[u].load());
  }
  EXPECT_EQ(timer.stats().cancelled, cancelled);
}

TEST(Worker, TasksRunOnTheWorkerThreadNamedInOptions) {
  Latch done(1);
  std::string name;
  HashedWheelTimerOptions o;
  o.thread_name = "my-wheel";
  HashedWheelTimer timer(o);
  timer.new_timeout(
      [&] {
        char buf[16] = {};
        pthread_getname_np(pthread_self(), buf, sizeof buf);
        name = buf;
        done.count_down();
      },
      1ms);
  ASSERT_TRUE(done.wait_for());
  EXPECT_EQ(name, "my-wheel");
}

TEST(Worker, ATaskCanRescheduleItselfRepeatedly) {
  std::atomic<int> runs{0};
  Latch done(1);
  HashedWheelTimer timer;
  struct Again {
    std::atomic<int>* runs;
    Latch* done;
    void operator()(Timeout& t) const {
      if (runs->fetch_add(1) + 1 == 20) {
        done->count_down();
      } else {
        t.timer()->new_timeout(*this, std::chrono::milliseconds(1));
      }
    }
  };
  timer.new_timeout(Again{&runs, &done}, 1ms);
  ASSERT_TRUE(done.wait_for());
  EXPECT_EQ(runs.load(), 20);
}

}  // namespace
