// The client's own timing on a manual clock (ClientOptions::clock and a
// ManualTimer): deadlines, retry backoffs, hedges and attempt timeouts happen
// exactly when the clock passes them and not a tick before. The servers are
// real, on the same manual clock: the budgets they are sent never run out
// before the client's own timeouts.
//
// The client's timer only posts to its executor (one thread): after each
// advance, `flush()` waits for what was posted, so "nothing happened yet" is
// checked without sleeping, and "it happened" with a bounded wait.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>

#include "support/cluster.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"
using wheelrpc::test::manual_client_options;

namespace {

TEST(ManualTime, ACallsDeadlineFiresWhenTheClockPassesItAndNotATickBefore) {
  Cluster c(ManualTime{}, {Mode::hold});
  c.connect_all();
  auto f = start(c, "work", "", opts(30s));
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));

  c.advance(30s - 1ms, 1s);
  EXPECT_FALSE(done(f)) << "a tick before its deadline";
  EXPECT_EQ(c.client->stats().pending, 1u);

  c.advance(1ms);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "sent, waiting for the reply")) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "after 30000 ms")) << out.response.error_message;
  EXPECT_EQ(out.took, 30s);
  EXPECT_EQ(c.client->stats().timeouts, 1u);
}

TEST(ManualTime, ARetryIsNotSentBeforeItsBackoffHasPassed) {
  auto co = manual_client_options();
  co.retry.backoff.first = 200ms;
  co.retry.backoff.initial = 500ms;
  co.retry.backoff.multiplier = 2;
  co.retry.backoff.max = 5s;
  Cluster c(ManualTime{}, {Mode::overloaded}, co);  // refuses every attempt unprocessed
  c.connect_all();
  auto& p0 = *c.providers[0];
  auto f = start(c, "work", "", opts(30s));  // not idempotent: refusals are retried anyway

  // The first refusal: the retry waits the first backoff, 200 ms.
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 1; }));
  c.flush();
  EXPECT_EQ(p0.requests(), 1);
  c.advance(199ms);
  EXPECT_EQ(c.client->stats().attempts, 1u) << "retried before its backoff";
  EXPECT_EQ(p0.requests(), 1);
  c.advance(1ms);
  EXPECT_EQ(c.client->stats().attempts, 2u);
  ASSERT_TRUE(wait_until([&] { return p0.requests() == 2; }));

  // The second refusal: the next backoff, 500 ms.
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 2; }));
  c.flush();
  c.advance(499ms);
  EXPECT_EQ(c.client->stats().attempts, 2u) << "retried before its backoff";
  EXPECT_EQ(p0.requests(), 2);
  c.advance(1ms);
  EXPECT_EQ(c.client->stats().attempts, 3u);

  // The third refusal ends the call: no attempt left.
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::resource_exhausted) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "p0 is overloaded")) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "attempt 3 of 3")) << out.response.error_message;
  EXPECT_EQ(p0.requests(), 3);
  EXPECT_EQ(out.took, 700ms) << "both backoffs, no more";
}

TEST(ManualTime, AnUnavailableCallIsRetriedAfterItsBackoffWhenNoProviderCanBeReached) {
  auto co = manual_client_options();
  co.retry.backoff.first = 100ms;
  co.retry.backoff.initial = 300ms;
  Cluster c(ManualTime{}, {Mode::reply}, co);
  c.providers[0]->proxy->down();  // its port refuses connections
  auto o = opts(30s);
  o.wait_for_ready = false;  // the default
  auto f = start(c, "work", "", o);
  // The call waits for the connect it started; refused, the attempt fails.
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 1; }));
  EXPECT_EQ(c.client->stats().attempts, 1u);
  c.advance(99ms);
  EXPECT_EQ(c.client->stats().attempts, 1u) << "retried before its backoff";
  c.advance(1ms);
  // At once, or when the reconnect it started is refused.
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 2; }));
  EXPECT_EQ(c.client->stats().attempts, 2u);
  c.advance(299ms);
  EXPECT_EQ(c.client->stats().attempts, 2u) << "retried before its backoff";
  EXPECT_FALSE(done(f));
  c.advance(1ms);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "attempt 3 of 3")) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "in backoff after a failed connect")) << out.response.error_message;
  EXPECT_EQ(out.took, 400ms);
  EXPECT_EQ(c.client->stats().attempts, 3u);
  EXPECT_EQ(c.providers[0]->requests(), 0);
}

TEST(ManualTime, TheHedgeIsSentExactlyAtTheHedgeDelay) {
  Cluster c(ManualTime{}, {Mode::hold, Mode::reply});
  c.connect_all();
  auto o = opts(30s, /*idempotent=*/true);
  o.hedge_delay = 200ms;
  auto f = start(c, "work", "", o);  // round robin: p0, which holds it
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));

  c.advance(199ms);
  EXPECT_EQ(c.client->stats().hedges, 0u) << "hedged early";
  EXPECT_EQ(c.client->stats().attempts, 1u);
  EXPECT_EQ(c.providers[1]->requests(), 0);
  EXPECT_FALSE(done(f));

  c.advance(1ms);
  EXPECT_EQ(c.client->stats().hedges, 1u);
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  EXPECT_EQ(out.took, 200ms);
  EXPECT_EQ(c.providers[1]->requests(), 1);
  auto& p0 = *c.providers[0];
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(p0.mu);
    return p0.held[0].cancelled();
  })) << "the losing attempt is cancelled on its server";
}

TEST(ManualTime, AnAttemptTimeoutMovesAnIdempotentCallToTheOtherProvider) {
  auto co = manual_client_options();
  co.retry.backoff.first = 0ms;  // the retry goes out as the attempt times out
  Cluster c(ManualTime{}, {Mode::hold, Mode::reply}, co);
  c.connect_all();
  auto o = opts(120s, /*idempotent=*/true);
  o.attempt_timeout = 20s;
  auto f = start(c, "work", "", o);  // round robin: p0, which holds it
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));

  c.advance(20s - 1ms, 1s);
  EXPECT_EQ(c.client->stats().attempt_timeouts, 0u) << "timed out early";
  EXPECT_EQ(c.client->stats().attempts, 1u);
  EXPECT_EQ(c.providers[1]->requests(), 0);
  EXPECT_FALSE(done(f));

  c.advance(1ms);
  EXPECT_EQ(c.client->stats().attempt_timeouts, 1u);
  EXPECT_EQ(c.client->stats().attempts, 2u);
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  EXPECT_EQ(c.client->stats().retries, 1u);
  EXPECT_EQ(out.took, 20s);
}

TEST(ManualTime, AHedgeThatRunsAfterTheDeadlinePassedNeverGoesOutWithoutADeadline) {
  Cluster c(ManualTime{}, {Mode::hold, Mode::hold});
  c.connect_all();
  auto o = opts(100ms, /*idempotent=*/true);
  o.hedge_delay = 50ms;
  auto f = start(c, "work", "", o);  // round robin: p0, which holds it
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  // One jump past the hedge and the deadline: the hedge's timeout runs first,
  // with the clock already past the deadline, as when the executor lags
  // behind a real clock.
  c.manual->advance(150ms);
  c.flush();
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  if (c.client->stats().hedges == 0) return;  // not hedging so late is right too
  auto& p1 = *c.providers[1];
  ASSERT_TRUE(wait_until([&] { return p1.held_count() == 1; }));
  std::lock_guard lock(p1.mu);
  EXPECT_TRUE(p1.held[0].deadline().has_value())
      << "the hedge went out with no deadline: its server may work on it forever, and the client, "
         "completing the call by its deadline, does not cancel it";
}

}  // namespace

namespace {

// Reconnects start when their backoff ends, not at the reconnect task's next
// tick (heartbeat / 3: 10 s here, never reached on the manual clock).
TEST(ManualTime, AReconnectStartsWhenItsBackoffEndsNotAtTheNextTick) {
  auto co = wheelrpc::test::manual_client_options();
  co.reconnect.initial = 100ms;
  co.reconnect.jitter = 0;
  Cluster c(ManualTime{}, {Mode::reply}, co);
  auto& proxy = *c.providers[0]->proxy;
  proxy.down();
  c.client->connect();  // attempt 1, at once: refused
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return c.client->stats().connect_failures == 1; }));
  ASSERT_FALSE(proxy.up());
  c.advance(99ms);
  EXPECT_EQ(c.client->stats().connect_failures, 1u) << "reconnected before its backoff";
  EXPECT_EQ(c.client->stats().connects, 0u) << "reconnected before its backoff";
  c.advance(1ms);  // attempt 2 is due
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return c.client->providers()[0].ready; }))
      << "no reconnect when the backoff ended";
  EXPECT_EQ(c.client->stats().connects, 1u);

  // A loss: the first attempt after it is immediate (reconnect.first = 0),
  // with no call waiting and no tick (one tick of the manual wheel: the
  // soonest any timeout runs); the port still refuses it.
  proxy.down();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return !c.client->providers()[0].ready; }));
  c.advance(1ms);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return c.client->stats().connect_failures == 2; }))
      << "no attempt at once after the loss";
  ASSERT_FALSE(proxy.up());
  c.advance(99ms);
  EXPECT_EQ(c.client->stats().connects, 1u) << "reconnected before its backoff";
  c.advance(1ms);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return c.client->stats().connects == 2; }))
      << "no reconnect when the backoff ended";
}

}  // namespace
