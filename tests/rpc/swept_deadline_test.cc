// A call sent at once keeps its deadline in its connection's pending table,
// which one sweep timeout per connection watches (no wheel entry per call):
// the calls still end exactly at their deadlines, and a call that loses that
// attempt and goes on elsewhere still ends at its own.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <vector>

#include "support/cluster.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"

namespace {

TEST(SweptDeadline, CallsSentAtOnceEndAtTheirDeadlinesWithOneTimeoutPerConnection) {
  Cluster c(ManualTime{}, {Mode::hold});
  c.connect_all();
  // The server holds each request with its deadline on the wheel; the client
  // arms one sweep for the first ten and none for the next ten, due later.
  const auto& timer = c.manual->timer;
  const auto before_first = timer.stats().scheduled;
  std::vector<std::future<Outcome>> first, second;
  for (int i = 0; i < 10; ++i) first.push_back(start(c, "work", "", opts(1s)));
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 10; }));
  // The server arms a held request's deadline after its handler returns,
  // which may come a moment after the handler counted it held.
  ASSERT_TRUE(wait_until([&] { return timer.stats().scheduled - before_first >= 10u + 1u; }));
  EXPECT_EQ(timer.stats().scheduled - before_first, 10u + 1u);
  c.advance(100ms);
  const auto before_second = timer.stats().scheduled;
  for (int i = 0; i < 10; ++i) second.push_back(start(c, "work", "", opts(1s)));
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 20; }));
  ASSERT_TRUE(wait_until([&] { return timer.stats().scheduled - before_second >= 10u; }));
  EXPECT_EQ(timer.stats().scheduled - before_second, 10u);

  c.advance(899ms);  // 999 ms after the first ten
  for (auto& f : first) EXPECT_FALSE(done(f));
  c.advance(1ms);
  for (auto& f : first) {
    const auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
    EXPECT_TRUE(contains(out.response.error_message, "sent, waiting for the reply")) << out.response.error_message;
    EXPECT_EQ(out.took, 1000ms);
  }
  for (auto& f : second) EXPECT_FALSE(done(f));
  c.advance(100ms);
  for (auto& f : second) {
    const auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
    EXPECT_EQ(out.took, 1000ms);
  }
  EXPECT_EQ(c.client->stats().timeouts, 20u);
}

TEST(SweptDeadline, ACallRetriedOnAnotherProviderStillEndsAtItsDeadline) {
  Cluster c(ManualTime{}, {Mode::hold, Mode::hold});
  c.connect_all();
  const auto t0 = c.elapsed();
  auto f = start(c, "work", "", opts(1s));
  ASSERT_TRUE(wait_until([&] { return c.total_held() == 1; }));
  const std::size_t first = c.providers[0]->held_count() == 1 ? 0 : 1;
  c.advance(200ms);
  // Its connection is cut: the attempt fails and the call goes on, after the
  // retry backoff (manual time too), on the other provider, which holds it.
  c.providers[first]->proxy->down();
  for (int i = 0; i < 200 && c.providers[1 - first]->held_count() == 0; ++i) {
    ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 1 || c.providers[1 - first]->held_count(); }));
    c.advance(1ms);
  }
  ASSERT_EQ(c.providers[1 - first]->held_count(), 1u);
  EXPECT_FALSE(done(f));
  const auto spent = c.elapsed() - t0;
  ASSERT_LT(spent, 999ms);
  c.advance(999ms - spent);
  EXPECT_FALSE(done(f));
  c.advance(1ms);
  const auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_EQ(out.took, 1000ms);
  EXPECT_EQ(c.client->stats().attempts, 2u);
}

TEST(SweptDeadline, ACallLeftWithoutAnAttemptStillEndsAtItsDeadline) {
  Cluster c(ManualTime{}, {Mode::hold});
  c.connect_all();
  auto o = opts(1s);
  o.wait_for_ready = true;  // it waits for the lost provider to come back
  auto f = start(c, "work", "", o);
  ASSERT_TRUE(wait_until([&] { return c.total_held() == 1; }));
  c.advance(200ms);
  // The only connection is cut: the call loses its swept attempt and waits,
  // with no table entry left to carry its deadline.
  c.providers[0]->proxy->down();
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 1; }));
  c.advance(799ms);
  EXPECT_FALSE(done(f));
  c.advance(1ms);
  const auto out = wait(f);
  // Its deadline ended it, naming why it could not be sent again.
  EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "before the deadline")) << out.response.error_message;
  EXPECT_EQ(out.took, 1000ms);
}

TEST(SweptDeadline, ACallRetryingAfterAnErrorReplyStillEndsAtItsDeadline) {
  auto co = wheelrpc::test::manual_client_options();
  co.retry.backoff.first = 100ms;  // the retry waits: no table entry meanwhile
  Cluster c(ManualTime{}, {Mode::overloaded}, co);
  c.connect_all();
  auto o = opts(1s);
  o.wait_for_ready = true;
  auto f = start(c, "work", "", o);
  ASSERT_TRUE(wait_until([&] { return c.client->stats().retries == 1; }));
  // Refused (resource_exhausted, retried after 100 ms); then the provider goes
  // away, so the retry finds nothing ready and waits.
  c.providers[0]->proxy->down();
  c.advance(999ms);
  EXPECT_FALSE(done(f));
  c.advance(1ms);
  const auto out = wait(f);
  EXPECT_TRUE(out.ec == errc::unavailable || out.ec == errc::resource_exhausted) << out.response.error_message;
  EXPECT_EQ(out.took, 1000ms);
}

}  // namespace
