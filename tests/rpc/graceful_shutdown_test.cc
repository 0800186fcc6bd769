// A provider shut down gracefully (Server::async_shutdown) while a client
// keeps calling: the calls in flight on it finish, the new ones it refuses
// are retried on the other provider, and no call fails. Bounded waits only.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "support/cluster.h"

#include "support/cluster_preamble.h"

namespace {

TEST(GracefulShutdown, NoCallFailsWhileAProviderDrainsAndStops) {
  Cluster c({Mode::delay, Mode::delay});
  for (auto& p : c.providers) p->delay = 20ms;  // calls are in flight when the shutdown starts
  c.connect_all();
  CallOptions o;
  o.timeout = 10s;
  o.retries = 2;
  auto shut = std::make_shared<std::promise<boost::system::error_code>>();
  auto shut_done = shut->get_future();
  int batches_after = -1;
  int calls = 0;
  for (int batch = 0; batch < 200 && batches_after < 5; ++batch) {
    std::vector<std::future<wheelrpc::test::Outcome>> fs;
    for (int i = 0; i < 8; ++i) fs.push_back(start(c, "work", "", o));
    if (batch == 3) {  // with this batch in flight
      c.providers[0]->server.async_shutdown(10s, [shut](boost::system::error_code ec) { shut->set_value(ec); });
    }
    for (auto& f : fs) {
      auto out = wheelrpc::test::wait(f);
      ++calls;
      EXPECT_FALSE(out.ec) << "call " << calls << ": " << out.response.error_message;
    }
    if (batches_after >= 0) {
      ++batches_after;
    } else if (shut_done.wait_for(0s) == std::future_status::ready) {
      batches_after = 0;  // a few more batches with p0 gone
    }
  }
  ASSERT_EQ(shut_done.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(shut_done.get()) << "p0 drained within its timeout";
  EXPECT_GE(c.providers[0]->requests(), 1);
  EXPECT_EQ(c.providers[0]->server.stats().in_flight, 0u);
  EXPECT_GE(c.providers[1]->requests(), calls / 2) << "the calls moved to p1";
}

}  // namespace
