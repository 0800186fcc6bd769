// Retries and failover across providers, attempt timeouts, backoff, the
// retry budget and hedging, on 127.0.0.1 with in-process servers, each behind
// its own FaultProxy (to kill, black-hole or slow it). Bounded waits only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <wheelrpc/fault/fault_proxy.h>

#include "support/cluster.h"
#include "support/toxic.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"
using wheelrpc::fault::Stream;
using wheelrpc::fault::Toxic;
using wheelrpc::test::toxic;

namespace {

// ---------------------------------------------------------------- failover

TEST(Retry, OneOfThreeProvidersKilledUnderLoadEveryCallSucceeds) {
  Cluster c({Mode::delay, Mode::delay, Mode::delay});
  for (auto& p : c.providers) p->delay = 5ms;  // calls stay in flight long enough to be caught by the kill
  c.connect_all();
  constexpr int kCalls = 900;
  constexpr int kConcurrency = 24;
  std::atomic<int> issued{0}, ok{0}, failed{0}, completions{0};
  std::mutex mu;
  std::vector<int> completed(kCalls, 0);
  std::string first_error;
  std::function<void()> issue = [&] {
    const int id = issued.fetch_add(1);
    if (id >= kCalls) return;
    c.client->async_call("work", "", opts(5s), [&, id](error_code ec, Response r) {
      {
        std::lock_guard lock(mu);
        ++completed[static_cast<std::size_t>(id)];
        if (ec && first_error.empty()) first_error = ec.message() + ": " + r.error_message;
      }
      (ec ? failed : ok).fetch_add(1);
      issue();
      completions.fetch_add(1);  // last: once all are counted, nothing here touches `issue` again
    });
  };
  for (int i = 0; i < kConcurrency; ++i) issue();
  ASSERT_TRUE(wait_until([&] { return completions.load() >= kCalls / 3; }, 30s));
  ASSERT_GT(c.providers[1]->requests(), 0);
  c.providers[1]->proxy->down();  // killed: its connections drop, new ones are refused
  ASSERT_TRUE(wait_until([&] { return completions.load() == kCalls; }, 30s)) << completions.load();
  EXPECT_EQ(ok.load(), kCalls) << first_error;
  EXPECT_EQ(failed.load(), 0);
  for (int n : completed) EXPECT_EQ(n, 1);
  const auto s = c.client->stats();
  EXPECT_GE(s.retries, 1u) << "the calls in flight on the killed provider were retried elsewhere";
  EXPECT_EQ(s.attempts, static_cast<std::uint64_t>(kCalls) + s.retries);
  EXPECT_EQ(s.pending, 0u);
  EXPECT_FALSE(c.client->providers()[1].ready);
}

TEST(Retry, AllProvidersDownWaitForReadyCallsFailWithUnavailableByTheirDeadlines) {
  // On the client's manual clock: each call ends exactly at its deadline.
  Cluster c(ManualTime{}, {Mode::reply, Mode::reply, Mode::reply});
  for (auto& p : c.providers) p->proxy->down();
  auto o = opts(300ms);
  o.wait_for_ready = true;  // wait through the reconnect attempts
  std::vector<std::future<Outcome>> fs;
  for (int i = 0; i < 10; ++i) fs.push_back(start(c, "work", "", o));
  // The calls made the client connect to every provider; each refused.
  ASSERT_TRUE(wait_until([&] {
    auto ps = c.client->providers();
    return std::all_of(ps.begin(), ps.end(), [](const auto& p) { return !p.last_error.empty(); });
  }));
  c.advance(299ms);
  for (auto& f : fs) EXPECT_FALSE(done(f)) << "failed before its deadline";
  c.advance(1ms);
  for (auto& f : fs) {
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
    EXPECT_TRUE(contains(out.response.error_message, "cannot connect")) << out.response.error_message;
    EXPECT_TRUE(contains(out.response.error_message, "after 300 ms")) << out.response.error_message;
    EXPECT_EQ(out.took, 300ms);
  }
  EXPECT_EQ(c.total_requests(), 0);
}

TEST(Retry, WithoutWaitForReadyAnUnavailableCallIsRetriedThenFailsNamingItsAttempts) {
  Cluster c(ManualTime{}, {Mode::reply, Mode::reply});
  for (auto& p : c.providers) p->proxy->down();
  auto o = opts(2s);
  o.wait_for_ready = false;  // the default
  auto f = start(c, "work", "", o);
  // The call starts the connects and waits for them; the first attempt fails
  // when both are refused.
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 1; }));
  // The default retry backoff (without jitter here): 10 ms, then 20 ms; the
  // providers are still in their reconnect backoff, so each retry fails at once.
  c.advance(10ms);
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 2; }));
  c.advance(20ms);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::unavailable);
  EXPECT_TRUE(contains(out.response.error_message, "attempt 3 of 3")) << out.response.error_message;
  EXPECT_EQ(out.took, 30ms) << "fails after its retries, not at its deadline";
  const auto s = c.client->stats();
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.retries, 2u);
}

TEST(Retry, ApplicationErrorsAreNeverRetried) {
  Cluster c({Mode::reply, Mode::reply, Mode::reply});
  c.connect_all();
  auto f = start(*c.client, "no_such_method", "", opts(1s, /*idempotent=*/true));
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::method_not_found);
  EXPECT_EQ(c.total_requests(), 1);
  EXPECT_EQ(c.client->stats().retries, 0u);
}

TEST(Retry, AbsurdCallOptionsFailAtOnceWithBadRequest) {
  Cluster c({Mode::reply});
  auto o = opts(1s);
  o.retries = 99;
  auto f1 = start(*c.client, "work", "", o);
  auto out = wait(f1);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_TRUE(contains(out.response.error_message, "retries")) << out.response.error_message;
  auto h = opts(1s, /*idempotent=*/false);
  h.hedge_delay = 10ms;
  auto f2 = start(*c.client, "work", "", h);
  out = wait(f2);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_TRUE(contains(out.response.error_message, "idempotent")) << out.response.error_message;
  auto t = opts(std::chrono::hours(24 * 365 * 1000));  // would overflow the clock
  auto f3 = start(*c.client, "work", "", t);
  out = wait(f3);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_TRUE(contains(out.response.error_message, "timeout must be at most")) << out.response.error_message;
  auto a = opts(1s, /*idempotent=*/true);
  a.hedge_delay = std::chrono::milliseconds::max();
  auto f4 = start(*c.client, "work", "", a);
  out = wait(f4);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_EQ(c.total_requests(), 0);
}

TEST(Retry, ChaosOnOneProviderAtATimeEveryCallCompletesExactlyOnceByItsDeadline) {
  const char* env = std::getenv("WHEELRPC_CHAOS_SECONDS");
  const auto soak = std::chrono::seconds(env ? std::max(1, std::atoi(env)) : 8);
  Cluster c({Mode::delay, Mode::delay, Mode::delay});
  for (auto& p : c.providers) p->delay = 2ms;
  c.connect_all();
  constexpr auto kDeadline = 300ms;
  struct Record {
    std::atomic<int> completions{0};
    Clock::time_point deadline;
    Clock::time_point completed_at;
    error_code ec;
  };
  std::mutex mu;
  std::vector<std::unique_ptr<Record>> records;
  std::atomic<bool> stop{false};
  // 9 callers, a call at a time each: plain calls (failover on connection
  // failures only), idempotent ones (attempt timeouts retried) and hedged ones.
  std::vector<std::thread> callers;
  for (int k = 0; k < 9; ++k) {
    callers.emplace_back([&, k] {
      while (!stop.load()) {
        auto o = opts(kDeadline, /*idempotent=*/k % 3 != 0);
        if (k % 3 == 2) o.hedge_delay = 30ms;
        Record* r;
        {
          std::lock_guard lock(mu);
          records.push_back(std::make_unique<Record>());
          r = records.back().get();
        }
        r->deadline = Clock::now() + kDeadline;
        auto done = std::make_shared<std::promise<void>>();
        c.client->async_call("work", "", o, [r, done](error_code ec, Response) {
          r->ec = ec;
          r->completed_at = Clock::now();
          if (r->completions.fetch_add(1) == 0) done->set_value();
        });
        done->get_future().wait_for(5s);
      }
    });
  }
  std::mt19937 rng(2027);
  const auto end = Clock::now() + soak;
  int step = 0;
  while (Clock::now() < end) {
    auto& proxy = *c.providers[rng() % c.providers.size()]->proxy;
    const std::string name = "t" + std::to_string(step++);
    Toxic t;
    switch (rng() % 5) {
      case 0:
        t = toxic(name, Stream::downstream, wheelrpc::fault::Latency{std::chrono::milliseconds(rng() % 200), 20ms});
        break;
      case 1: t = toxic(name, Stream::both, wheelrpc::fault::Blackhole{}); break;
      case 2: t = toxic(name, Stream::both, wheelrpc::fault::ResetPeer{std::chrono::milliseconds(rng() % 50)}); break;
      case 3: t = toxic(name, Stream::downstream, wheelrpc::fault::LimitData{rng() % 2000}); break;
      default: t = {}; break;
    }
    if (!t.name.empty()) {
      ASSERT_FALSE(proxy.add_toxic(t));
    } else {
      proxy.down();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 300));
    if (!t.name.empty()) {
      ASSERT_FALSE(proxy.remove_toxic(t.name));
    } else {
      ASSERT_TRUE(wait_until([&] { return !proxy.up(); }));  // bounded: the port may briefly be taken
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 100));
  }
  stop = true;
  for (auto& t : callers) t.join();
  std::lock_guard lock(mu);
  ASSERT_TRUE(wait_until([&] {
    return std::all_of(records.begin(), records.end(), [](const auto& r) { return r->completions.load() >= 1; });
  })) << "a call never completed";
  // On real time, under chaos and maybe a sanitizer on a busy machine, "by
  // its deadline" has a generous margin; the ManualTime tests check that a
  // deadline fires exactly when the client's clock passes it.
  constexpr auto kLate = 2s;
  Clock::duration latest{};
  int ok = 0;
  for (const auto& r : records) {
    EXPECT_EQ(r->completions.load(), 1);
    EXPECT_LE(r->completed_at - r->deadline, kLate) << "completed late: " << r->ec.message();
    latest = std::max(latest, r->completed_at - r->deadline);
    if (!r->ec) {
      ++ok;
    } else {
      EXPECT_TRUE(r->ec == errc::timeout || r->ec == errc::connection_lost || r->ec == errc::unavailable)
          << r->ec.message();
    }
  }
  EXPECT_GT(ok, static_cast<int>(records.size()) / 2) << "two of three providers were healthy at any time";
  const auto s = c.client->stats();
  EXPECT_EQ(s.pending, 0u);
  EXPECT_EQ(s.calls, records.size());
  RecordProperty("calls", static_cast<int>(records.size()));
  RecordProperty("ok", ok);
  RecordProperty("retries", static_cast<int>(s.retries));
  RecordProperty("hedges", static_cast<int>(s.hedges));
  RecordProperty("latest_ms", static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(latest).count()));
}

// ---------------------------------------------------------------- timeouts

TEST(Retry, ATimeoutIsRetriedOnlyForIdempotentCalls) {
  Cluster c(ManualTime{}, {Mode::hold, Mode::hold});
  c.connect_all();
  // Not idempotent: one attempt, which times out with the call.
  auto f = start(c, "work", "", opts(300ms));
  ASSERT_TRUE(wait_until([&] { return c.total_held() == 1; }));
  c.advance(299ms);
  EXPECT_FALSE(done(f));
  c.advance(1ms);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_EQ(out.took, 300ms);
  EXPECT_EQ(c.client->stats().retries, 0u);

  // Idempotent: three attempts sharing the 600 ms (200 ms, then an even
  // share of what is left after each 10 ms / 20 ms backoff), never twice in
  // a row on the same provider; the call ends at its deadline.
  auto g = start(c, "work", "", opts(600ms, /*idempotent=*/true));
  c.advance(200ms);
  EXPECT_EQ(c.client->stats().attempt_timeouts, 1u) << "the first attempt had a third of the budget";
  c.advance(399ms);
  EXPECT_FALSE(done(g));
  EXPECT_EQ(c.client->stats().attempts, 4u);
  c.advance(1ms);
  out = wait(g);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "attempt 3 of 3")) << out.response.error_message;
  EXPECT_EQ(out.took, 600ms);
  ASSERT_TRUE(wait_until([&] { return c.total_held() == 4; }));
  EXPECT_EQ(c.providers[0]->held_count() + c.providers[1]->held_count(), 4u);
  EXPECT_GE(c.providers[0]->held_count(), 2u);
  EXPECT_GE(c.providers[1]->held_count(), 2u);
  const auto s = c.client->stats();
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.attempt_timeouts, 2u);  // the third attempt ran to the call's deadline
}

TEST(Retry, AnIdempotentCallTimingOutOnABlackholedProviderSucceedsOnAnother) {
  // A 30 s heartbeat (manual_client_options): the half-open connection is not
  // detected before the attempt's own timeout ends it.
  Cluster c(ManualTime{}, {Mode::reply, Mode::reply});
  c.connect_all();
  // Round robin starts with p0: black-hole it (a half-open peer).
  ASSERT_FALSE(c.providers[0]->proxy->add_toxic(toxic("hole", Stream::both, wheelrpc::fault::Blackhole{})));
  auto f = start(c, "work", "", opts(900ms, /*idempotent=*/true));
  c.advance(299ms);
  EXPECT_EQ(c.client->stats().attempt_timeouts, 0u);
  c.advance(1ms);
  EXPECT_EQ(c.client->stats().attempt_timeouts, 1u) << "the first attempt had a third of the budget";
  c.advance(10ms);  // the first retry's backoff
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  EXPECT_EQ(out.took, 310ms);
  const auto s = c.client->stats();
  EXPECT_EQ(s.attempt_timeouts, 1u);
  EXPECT_EQ(s.retries, 1u);
}

TEST(Retry, BackoffBetweenAttemptsIsBoundedByTheDeadline) {
  {
    // A 5 s backoff cannot fit in what is left of 400 ms: no retry, and the
    // call ends at once with its error instead of waiting for the deadline.
    auto co = wheelrpc::test::manual_client_options();
    co.retry.backoff.first = 5s;
    co.retry.backoff.initial = 5s;
    co.retry.backoff.max = 5s;
    Cluster c(ManualTime{}, {Mode::hold, Mode::hold}, co);
    c.connect_all();
    auto o = opts(400ms, /*idempotent=*/true);
    o.attempt_timeout = 50ms;
    auto f = start(c, "work", "", o);
    c.advance(49ms);
    EXPECT_FALSE(done(f));
    c.advance(1ms);
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout);
    EXPECT_TRUE(contains(out.response.error_message, "no time left to retry")) << out.response.error_message;
    EXPECT_EQ(out.took, 50ms);
    EXPECT_EQ(c.client->stats().retries, 0u);
    EXPECT_EQ(c.client->stats().attempts, 1u);
    ASSERT_TRUE(wait_until([&] { return c.total_requests() == 1; }));
  }
  {
    // A 150 ms backoff fits: each retry goes out one attempt timeout plus
    // the backoff after the attempt before it.
    auto co = wheelrpc::test::manual_client_options();
    co.retry.backoff.first = 150ms;
    co.retry.backoff.initial = 150ms;
    Cluster c(ManualTime{}, {Mode::hold, Mode::hold}, co);
    c.connect_all();
    auto o = opts(1000ms, /*idempotent=*/true);
    o.attempt_timeout = 100ms;
    auto f = start(c, "work", "", o);
    c.advance(249ms);
    EXPECT_EQ(c.client->stats().attempts, 1u) << "100 ms attempt + 150 ms backoff";
    c.advance(1ms);
    EXPECT_EQ(c.client->stats().attempts, 2u);
    ASSERT_TRUE(wait_until([&] { return c.providers[0]->requests() == 1 && c.providers[1]->requests() == 1; }))
        << "the retry went to the other provider";
    c.advance(249ms);
    EXPECT_EQ(c.client->stats().attempts, 2u);
    c.advance(1ms);
    EXPECT_EQ(c.client->stats().attempts, 3u);
    c.advance(499ms);  // the last attempt runs to the deadline
    EXPECT_FALSE(done(f));
    c.advance(1ms);
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout);
    EXPECT_EQ(out.took, 1000ms);
    EXPECT_EQ(c.client->stats().attempts, 3u);
  }
}

// ---------------------------------------------------------------- budget

TEST(Retry, TheRetryBudgetCapsRetriesWhenEveryProviderFails) {
  auto co = wheelrpc::test::manual_client_options();
  co.retry.budget_ratio = 0.2;
  co.retry.budget_min_per_second = 0;
  Cluster c(ManualTime{}, {Mode::hold, Mode::hold, Mode::hold}, co);
  c.connect_all();
  constexpr int kCalls = 100;
  auto o = opts(5s, /*idempotent=*/true);
  o.attempt_timeout = 50ms;
  std::vector<std::future<Outcome>> fs;
  for (int i = 0; i < kCalls; ++i) fs.push_back(start(c, "work", "", o));
  // Every first attempt times out at 50 ms; the retries the budget allows go
  // out after the 10 ms backoff and time out at 110 ms, where the budget
  // refuses the next.
  c.advance(110ms);
  int refused = 0;
  for (auto& f : fs) {
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout);
    EXPECT_TRUE(out.took == 50ms || out.took == 110ms)
        << "a refused retry ends the call with its error, not at its deadline: "
        << std::chrono::duration_cast<std::chrono::milliseconds>(out.took).count() << " ms";
    if (contains(out.response.error_message, "retry budget")) ++refused;
  }
  const auto s = c.client->stats();
  // Without the budget: 300 attempts. With it: the calls plus 20 % of them.
  EXPECT_LE(s.retries, static_cast<std::uint64_t>(kCalls) / 5);
  EXPECT_GE(s.retries, 1u);
  EXPECT_EQ(s.attempts, static_cast<std::uint64_t>(kCalls) + s.retries);
  EXPECT_EQ(refused, kCalls);
  EXPECT_EQ(s.budget_refusals, static_cast<std::uint64_t>(kCalls));
  ASSERT_TRUE(wait_until([&] { return c.total_held() == s.attempts; }));
}

// ---------------------------------------------------------------- hedging

TEST(Retry, HedgingCutsTailLatencyWhenOneProviderIsSlow) {
  // The hedge delay on the client's manual clock; the slow provider's 5 s is
  // real time, far longer than the test takes to reach the hedge.
  Cluster c(ManualTime{}, {Mode::delay, Mode::reply});
  c.providers[0]->delay = 5s;
  c.connect_all();
  auto o = opts(30s, /*idempotent=*/true);
  o.hedge_delay = 50ms;
  auto f = start(c, "work", "", o);  // round robin: p0, the slow one, first
  c.advance(49ms);
  EXPECT_EQ(c.client->stats().hedges, 0u);
  c.advance(1ms);
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1") << "the hedge on the fast provider wins";
  EXPECT_EQ(out.took, 50ms) << "not the slow provider's 5 s";
  auto s = c.client->stats();
  EXPECT_EQ(s.hedges, 1u);
  EXPECT_EQ(s.attempts, 2u);
  EXPECT_EQ(s.attempts_cancelled, 1u) << "the slow attempt was cancelled";
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->requests() == 1; }));
  // The slow provider was told (CANCEL): when its handler replies, at 5 s,
  // the server drops the reply instead of sending it.
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->server.stats().cancelled == 1; }, 30s));
  EXPECT_EQ(c.providers[0]->server.stats().replies, 0u);
  EXPECT_EQ(c.client->stats().late_replies, 0u);
  EXPECT_EQ(c.client->stats().ok, 1u);
}

TEST(Retry, TheLosingHedgesHandlerSeesItsRequestCancelled) {
  Cluster c({Mode::hold, Mode::reply});
  c.connect_all();
  auto o = opts(3s, /*idempotent=*/true);
  o.hedge_delay = 30ms;
  auto f = start(*c.client, "work", "", o);  // round robin: p0, which holds it
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  // On a loaded machine the hedge can win before p0's handler has the first
  // attempt: its request and the CANCEL after it are on their way.
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  auto& p0 = *c.providers[0];
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(p0.mu);
    return p0.held[0].cancelled();
  })) << "the handler may stop its work";
  std::lock_guard lock(p0.mu);
  EXPECT_FALSE(p0.held[0].reply("too late")) << "the reply of a cancelled request is dropped";
}

TEST(Retry, ACallCancelledByItsCallerIsCancelledOnTheServer) {
  Cluster c({Mode::hold});
  c.connect_all();
  boost::asio::cancellation_signal signal;
  std::promise<error_code> p;
  auto fut = p.get_future();
  c.client->async_call(
      "work", "", opts(5s),
      boost::asio::bind_cancellation_slot(signal.slot(), [&p](error_code ec, Response) { p.set_value(ec); }));
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  signal.emit(boost::asio::cancellation_type::terminal);
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(fut.get(), boost::asio::error::operation_aborted);
  auto& p0 = *c.providers[0];
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(p0.mu);
    return p0.held[0].cancelled();
  }));
}

TEST(Retry, NoHedgeWhenTheFirstReplyComesInTime) {
  // On the manual clock each reply comes before any time passes; the hedge
  // delays that pass afterwards start nothing.
  Cluster c(ManualTime{}, {Mode::reply, Mode::reply});
  c.connect_all();
  auto o = opts(3s, /*idempotent=*/true);
  o.hedge_delay = 500ms;
  for (int i = 0; i < 20; ++i) {
    auto f = start(c, "work", "", o);
    auto out = wait(f);
    ASSERT_FALSE(out.ec) << out.response.error_message;
  }
  c.advance(1s, 10ms);
  EXPECT_EQ(c.client->stats().hedges, 0u);
  EXPECT_EQ(c.client->stats().attempts, 20u);
  EXPECT_EQ(c.total_requests(), 20);
}

}  // namespace
