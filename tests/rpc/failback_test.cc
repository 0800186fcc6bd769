// Failback (send_failback): deliveries that failed are sent again by retry
// tasks on the shared timer, capped, given up on errors retrying cannot fix.
// The queue's own timing is unit-tested on a manual clock in
// tests/rpc/failback_queue_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>

#include "support/cluster.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"

namespace {

// ---------------------------------------------------------------- failback

ClientOptions failback_options(std::chrono::milliseconds interval, unsigned retries, std::size_t max_pending) {
  auto co = client_options();
  co.failback.interval = interval;
  co.failback.retries = retries;
  co.failback.max_pending = max_pending;
  return co;
}

CallOptions fire_and_forget() {
  CallOptions o;
  // Long enough for any reply on a loaded machine: a try that timed out after
  // the provider had it would be tried again (and counted twice). A try
  // while the provider is down fails at once (wait_for_ready is off).
  o.timeout = 2s;
  o.wait_for_ready = false;
  return o;
}

TEST(Failback, ARetryTaskDeliversOnceTheProviderIsBack) {
  Cluster c({Mode::reply}, failback_options(50ms, 50, 10));
  c.providers[0]->proxy->down();
  c.client->send_failback("work", "x", fire_and_forget());
  // Between two tries the delivery waits in one retry task.
  ASSERT_TRUE(wait_until([&] {
    const auto s = c.client->stats();
    return s.failback_retries >= 2 && s.failback_pending == 1;
  }));
  EXPECT_EQ(c.client->stats().failback_delivered, 0u);
  // Bounded retry: the freed port may briefly be another test's source port.
  ASSERT_TRUE(wait_until([&] { return !c.providers[0]->proxy->up(); }));
  ASSERT_TRUE(wait_until([&] { return c.client->stats().failback_delivered == 1; }));
  EXPECT_EQ(c.providers[0]->requests(), 1);
  EXPECT_EQ(c.client->stats().failback_pending, 0u);
  EXPECT_EQ(c.client->stats().failback_given_up, 0u);
}

TEST(Failback, ARetryTaskGivesUpAfterItsRetries) {
  Cluster c({Mode::reply}, failback_options(30ms, 3, 10));
  c.providers[0]->proxy->down();
  c.client->send_failback("work", "x", fire_and_forget());
  ASSERT_TRUE(wait_until([&] { return c.client->stats().failback_given_up == 1; }));
  const auto s = c.client->stats();
  EXPECT_EQ(s.failback_retries, 3u);
  EXPECT_EQ(s.failback_pending, 0u);
  EXPECT_EQ(s.failback_delivered, 0u);
}

TEST(Failback, PendingRetryTasksAreCapped) {
  Cluster c({Mode::reply}, failback_options(60s, 3, 2));
  c.providers[0]->proxy->down();
  for (int i = 0; i < 5; ++i) c.client->send_failback("work", "x", fire_and_forget());
  ASSERT_TRUE(wait_until([&] {
    const auto s = c.client->stats();
    return s.failback_pending == 2 && s.failback_dropped == 3;
  }));
  // close() cancels the waiting retry tasks.
  c.client->close();
  EXPECT_EQ(c.client->stats().failback_pending, 0u);
}

TEST(Failback, AnErrorRetryingCannotFixIsNotRetried) {
  Cluster c({Mode::reply}, failback_options(30ms, 3, 10));
  c.connect_all();
  c.client->send_failback("no_such_method", "x", fire_and_forget());
  ASSERT_TRUE(wait_until([&] { return c.client->stats().failback_given_up == 1; }));
  EXPECT_EQ(c.client->stats().failback_retries, 0u);
  EXPECT_EQ(c.providers[0]->requests(), 1);
}

}  // namespace
