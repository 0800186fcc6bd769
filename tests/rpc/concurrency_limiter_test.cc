// The server's concurrency limiter on synthetic samples and manual time: the
// gradient rule as a table, then the limiter driven like a server would.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/concurrency_limiter.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::AutoLimitOptions;
using wheelrpc::rpc::ConcurrencyLimit;
using wheelrpc::rpc::detail::ConcurrencyLimiter;
using wheelrpc::rpc::detail::LimitState;
using wheelrpc::rpc::detail::LimitWindow;
using wheelrpc::rpc::detail::next_limit_state;

namespace {

/// The gradient alone: no latency allowance (its default is 2 ms).
AutoLimitOptions no_allowance() {
  AutoLimitOptions o;
  o.latency_allowance = std::chrono::nanoseconds(0);
  return o;
}

struct GradientCase {
  std::string name;
  double limit;
  std::chrono::nanoseconds no_load;  // before the window
  LimitWindow window;
  bool remeasure;
  double want_limit;
  std::chrono::nanoseconds want_no_load;
};

LimitWindow window(std::chrono::nanoseconds avg, std::chrono::nanoseconds min_unqueued, std::size_t max_in_flight,
                   std::size_t samples = 100) {
  return LimitWindow{samples, avg, min_unqueued, max_in_flight};
}

}  // namespace

TEST(ConcurrencyLimiterRule, FollowsTheGradientTable) {
  AutoLimitOptions o = no_allowance();  // tolerance 2, bounds [2, 1000]
  const std::vector<GradientCase> cases = {
      {"near no-load and busy: grows by sqrt(limit)", 16, 100us, window(120us, 100us, 16), false, 20, 100us},
      {"near no-load but never busy: stays", 16, 100us, window(120us, 100us, 7), false, 16, 100us},
      {"at twice no-load: the gradient is 1, grows", 16, 100us, window(200us, 100us, 16), false, 20, 100us},
      {"at four times no-load: halves plus headroom", 16, 100us, window(400us, 100us, 16), false, 12, 100us},
      {"far above no-load: at most halves", 100, 100us, window(100ms, 100us, 100), false, 60, 100us},
      {"halving plus headroom settles at 4", 4, 100us, window(10ms, 100us, 4), false, 4, 100us},
      {"grows no higher than max_limit", 999, 100us, window(100us, 100us, 999), false, 1000, 100us},
      {"a lower unqueued latency lowers no-load", 16, 100us, window(320us, 80us, 16), false, 12, 80us},
      {"a higher one does not raise it", 16, 100us, window(200us, 150us, 16), false, 20, 100us},
      {"a re-measure takes the window's", 16, 100us, window(300us, 150us, 16), true, 20, 150us},
      {"the first window sets no-load", 16, 0ns, window(100us, 90us, 16), false, 20, 90us},
      {"a window with nothing run keeps no-load", 16, 100us, window(800us, 0ns, 16), false, 12, 100us},
      {"no samples: nothing changes", 16, 100us, window(0ns, 0ns, 0, 0), false, 16, 100us},
      {"no no-load yet: nothing to compare with", 16, 0ns, window(5ms, 0ns, 16), false, 16, 0ns},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const LimitState got = next_limit_state(o, LimitState{c.limit, c.no_load}, c.window, c.remeasure);
    EXPECT_NEAR(got.limit, c.want_limit, 1e-9);
    EXPECT_EQ(got.no_load, c.want_no_load);
  }
}

TEST(ConcurrencyLimiterRule, ShrinksNoLowerThanMinLimit) {
  AutoLimitOptions o = no_allowance();
  o.min_limit = 8;
  EXPECT_NEAR(next_limit_state(o, LimitState{8, 100us}, window(10ms, 100us, 8), false).limit, 8, 1e-9);
}

TEST(ConcurrencyLimiterRule, ATighterToleranceShrinksSooner) {
  AutoLimitOptions o = no_allowance();
  o.tolerance = 1.0;
  const auto got = next_limit_state(o, LimitState{16, 100us}, window(200us, 100us, 16), false);
  EXPECT_NEAR(got.limit, 12, 1e-9);  // 16 * 0.5 + 4
}

TEST(ConcurrencyLimiter, NoneAdmitsEverything) {
  ConcurrencyLimiter l(ConcurrencyLimit::none(), {});
  EXPECT_FALSE(l.enabled());
  EXPECT_EQ(l.limit(), 0u);
}

TEST(ConcurrencyLimiter, AFixedLimitRefusesBeyondItAndTakesSlotsBack) {
  ConcurrencyLimiter l(ConcurrencyLimit::fixed(2), {});
  EXPECT_TRUE(l.enabled());
  EXPECT_TRUE(l.try_acquire());
  EXPECT_TRUE(l.try_acquire());
  EXPECT_FALSE(l.try_acquire());
  EXPECT_EQ(l.in_flight(), 2u);
  l.release(1ms, 0ns, true, {});
  EXPECT_TRUE(l.try_acquire());
  EXPECT_EQ(l.limit(), 2u) << "a fixed limit never moves";
}

namespace {

/// Drives an automatic limiter as a server with `threads` handler threads of
/// service time `service` would, offered more than it can take: the limit
/// is always full, and a request's latency is its queue wait (the waves of
/// requests ahead of it) plus its service time.
struct SyntheticServer {
  ConcurrencyLimiter limiter;
  std::chrono::steady_clock::time_point now{};
  std::chrono::nanoseconds service;
  std::int64_t threads;

  SyntheticServer(AutoLimitOptions o, std::chrono::nanoseconds s, std::int64_t t = 1)
      : limiter(ConcurrencyLimit::automatic(o), {}), service(s), threads(t) {}

  /// Runs `n` requests with the limiter full.
  void saturate(int n) {
    for (int i = 0; i < n; ++i) {
      while (limiter.try_acquire()) {
      }
      const auto waves = (static_cast<std::int64_t>(limiter.in_flight()) + threads - 1) / threads;
      now += service / threads;
      limiter.release(service * waves, service * (waves - 1), true, now);
    }
  }
  /// Runs `n` requests one at a time (no queue: the limit is never approached).
  void trickle(int n, std::chrono::nanoseconds latency) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(limiter.try_acquire());
      now += 1ms;
      limiter.release(latency, 0ns, true, now);
    }
  }
};

}  // namespace

TEST(ConcurrencyLimiter, ShrinksUnderASustainedBacklogToAFewTimesTheThreads) {
  SyntheticServer s(no_allowance(), 100us);
  ASSERT_EQ(s.limiter.limit(), 16u);
  s.saturate(20'000);  // 2 s of windows of max_samples
  EXPECT_LE(s.limiter.limit(), 6u) << "latency kept near tolerance x no-load";
  EXPECT_GE(s.limiter.limit(), 2u) << "the handler thread is kept busy";
}

TEST(ConcurrencyLimiter, GrowsWhenLatencyStaysAtNoLoadAndTheLimitIsUsed) {
  AutoLimitOptions o = no_allowance();
  o.initial_limit = 4;
  ConcurrencyLimiter l(ConcurrencyLimit::automatic(o), {});
  std::chrono::steady_clock::time_point now{};
  // Many handler threads: every request takes 100 us however many run.
  for (int round = 0; round < 40; ++round) {
    std::size_t took = 0;
    while (l.try_acquire()) ++took;
    for (std::size_t i = 0; i < took; ++i) {
      now += 10ms;
      l.release(100us, 0ns, true, now);
    }
  }
  EXPECT_GE(l.limit(), 60u);
}

TEST(ConcurrencyLimiter, DoesNotGrowWhileTheLoadStaysFarBelowTheLimit) {
  SyntheticServer s(no_allowance(), 100us);
  s.trickle(5'000, 100us);
  EXPECT_EQ(s.limiter.limit(), 16u);
}

TEST(ConcurrencyLimiter, RecoversWhenTheBacklogEnds) {
  SyntheticServer s(no_allowance(), 100us);
  s.saturate(20'000);
  const auto shrunk = s.limiter.limit();
  // More handler capacity arrives (or the load's nature changes): latency
  // back at no-load while the limit is in use.
  for (int round = 0; round < 50; ++round) {
    std::size_t took = 0;
    while (s.limiter.try_acquire()) ++took;
    for (std::size_t i = 0; i < took; ++i) {
      s.now += 10ms;
      s.limiter.release(100us, 0ns, true, s.now);
    }
  }
  EXPECT_GT(s.limiter.limit(), 4 * shrunk);
}

TEST(ConcurrencyLimiter, SettlesNearTwiceTheHandlerThreadsUnderABacklog) {
  SyntheticServer s(no_allowance(), 100us, 8);
  s.saturate(50'000);
  EXPECT_GE(s.limiter.limit(), 16u) << "every handler thread kept busy";
  EXPECT_LE(s.limiter.limit(), 24u) << "about one wave queued";
}

TEST(ConcurrencyLimiterRule, TheAllowanceRaisesTheLatencyTarget) {
  AutoLimitOptions o = no_allowance();
  o.latency_allowance = 1ms;
  // Target 2 x 100 us + 1 ms = 1.2 ms: 1 ms average is no congestion.
  EXPECT_NEAR(next_limit_state(o, LimitState{16, 100us}, window(1ms, 100us, 16), false).limit, 20, 1e-9);
  // 2.4 ms is: halved plus headroom.
  EXPECT_NEAR(next_limit_state(o, LimitState{16, 100us}, window(2400us, 100us, 16), false).limit, 12, 1e-9);
}

TEST(ConcurrencyLimiter, WithTheDefaultAllowanceAFastMethodQueuesAboutTwoMilliseconds) {
  SyntheticServer s({}, 100us);
  s.saturate(50'000);
  EXPECT_GE(s.limiter.limit(), 15u);
  EXPECT_LE(s.limiter.limit(), 30u);
}

TEST(ConcurrencyLimiter, ReMeasuresTheNoLoadLatencySoItCanRise) {
  for (const bool remeasure : {true, false}) {
    SCOPED_TRACE(remeasure ? "re-measuring every second" : "never re-measuring");
    AutoLimitOptions o = no_allowance();
    o.probe_interval = remeasure ? std::chrono::nanoseconds(1s) : std::chrono::nanoseconds(0);
    SyntheticServer s(o, 100us, 8);
    s.saturate(50'000);
    ASSERT_GE(s.limiter.limit(), 16u);
    // Every request became 4x slower for good: without a re-measure its
    // queue-free latency (400 us) looks like 4x no-load, and the limit drops
    // to its floor, leaving most handler threads idle.
    s.service = 400us;
    s.saturate(50'000);  // 2.5 s: re-measured twice
    if (remeasure) {
      EXPECT_GE(s.limiter.limit(), 16u);
    } else {
      EXPECT_LE(s.limiter.limit(), 6u);
    }
  }
}

TEST(ConcurrencyLimiter, ShedRequestsPushTheLimitDownButSayNothingOfNoLoad) {
  SyntheticServer s(no_allowance(), 100us);
  s.trickle(100, 100us);  // no-load 100 us
  // Requests that waited 50 ms and were shed unrun.
  for (int i = 0; i < 5'000; ++i) {
    ASSERT_TRUE(s.limiter.try_acquire());
    s.now += 100us;
    s.limiter.release(50ms, 50ms, false, s.now);
  }
  EXPECT_LE(s.limiter.limit(), 4u);
}

TEST(ConcurrencyLimiter, IsSafeFromManyThreads) {
  ConcurrencyLimiter l(ConcurrencyLimit::automatic(), {});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&l, t] {
      std::chrono::steady_clock::time_point now{};
      for (int i = 0; i < 20'000; ++i) {
        now += 10us;
        if (l.try_acquire()) l.release(std::chrono::microseconds(100 + t * 10), 0ns, true, now);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(l.in_flight(), 0u);
  EXPECT_GE(l.limit(), 2u);
  EXPECT_LE(l.limit(), 1000u);
}

TEST(ConcurrencyLimiter, InvalidSettingsAreRefusedWithTheirName) {
  using wheelrpc::rpc::detail::validate_concurrency_limit;
  EXPECT_THROW(validate_concurrency_limit(ConcurrencyLimit::fixed(0)), std::invalid_argument);
  AutoLimitOptions o;
  o.min_limit = 10;
  o.max_limit = 5;
  EXPECT_THROW(validate_concurrency_limit(ConcurrencyLimit::automatic(o)), std::invalid_argument);
  o = {};
  o.tolerance = 0.5;
  try {
    validate_concurrency_limit(ConcurrencyLimit::automatic(o));
    FAIL() << "accepted a tolerance below 1";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tolerance"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(validate_concurrency_limit(ConcurrencyLimit::automatic()));
}
