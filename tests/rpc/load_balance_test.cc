// Load balancing as a client sees it: which provider gets each call when one
// is busy or not ready. The policies themselves are unit-tested in
// tests/rpc/load_balancer_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <vector>

#include "support/cluster.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"
using wheelrpc::rpc::LoadBalance;

namespace {

// ---------------------------------------------------------------- load balancing

// Sends `n` calls one after another; p0 holds each call it gets, p1 answers.
// Returns how many p0 holds.
std::size_t held_by_the_busy_provider(LoadBalance lb, int n) {
  auto co = client_options();
  co.load_balance = lb;
  Cluster c({Mode::hold, Mode::reply}, co);
  c.connect_all();
  std::vector<std::future<Outcome>> fs;
  for (int i = 0; i < n; ++i) {
    const auto held_before = c.providers[0]->held_count();
    fs.push_back(start(*c.client, "work", "", opts(10s)));
    auto& f = fs.back();
    EXPECT_TRUE(wait_until(
        [&] { return f.wait_for(0s) == std::future_status::ready || c.providers[0]->held_count() > held_before; }));
  }
  return c.providers[0]->held_count();
}

TEST(LoadBalance, LeastActivePrefersTheIdleProvider) {
  EXPECT_EQ(held_by_the_busy_provider(LoadBalance::round_robin, 20), 10u);  // the contrast
  EXPECT_LE(held_by_the_busy_provider(LoadBalance::least_active, 20), 1u);
}

TEST(LoadBalance, PowerOfTwoChoicesAvoidsTheBusyProvider) {
  EXPECT_LE(held_by_the_busy_provider(LoadBalance::power_of_two, 20), 1u);
}

TEST(LoadBalance, ProvidersWhoseConnectionIsNotReadyAreSkipped) {
  for (auto lb : {LoadBalance::round_robin, LoadBalance::least_active, LoadBalance::power_of_two}) {
    auto co = client_options();
    co.load_balance = lb;
    Cluster c({Mode::reply, Mode::reply, Mode::reply}, co);
    c.providers[1]->proxy->down();
    c.client->connect();
    ASSERT_TRUE(wait_until([&] {
      auto ps = c.client->providers();
      return ps[0].ready && ps[2].ready && !ps[1].last_error.empty();
    }));
    for (int i = 0; i < 30; ++i) {
      auto f = start(*c.client, "work", "", opts(2s));
      auto out = wait(f);
      ASSERT_FALSE(out.ec) << to_string(lb) << ": " << out.response.error_message;
      EXPECT_NE(out.response.payload, "p1");
    }
    EXPECT_EQ(c.client->stats().retries, 0u) << to_string(lb);
    EXPECT_GT(c.providers[0]->requests(), 0) << to_string(lb);
    EXPECT_GT(c.providers[2]->requests(), 0) << to_string(lb);
  }
}

}  // namespace
