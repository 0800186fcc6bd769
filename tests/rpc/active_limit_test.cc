// The client's per-provider limit on attempts in flight (Dubbo's `actives`,
// ClientOptions::max_active_per_provider): load balancing skips a provider at
// its limit, and when every ready provider is at it a call waits for a slot
// until its deadline.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <string>

#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Responder;

namespace {

/// A server whose "hold" calls run until the test releases them, one by one.
struct HoldingServer {
  HoldingServer(wheelrpc::test::IoThreads& threads, wheelrpc::timer::Timer& timer, std::string name)
      : server(threads.io.get_executor(), timer) {
    server.handle("hold", [this](wheelrpc::rpc::Request, Responder r) {
      std::lock_guard lock(mu);
      held.push_back(std::move(r));
    });
    server.handle("name", [n = std::move(name)](wheelrpc::rpc::Request, Responder r) { r.reply(n); });
    if (auto ec = server.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
  }
  std::size_t count() {
    std::lock_guard lock(mu);
    return held.size();
  }
  void release_one() {
    Responder r;
    {
      std::lock_guard lock(mu);
      r = std::move(held.front());
      held.pop_front();
    }
    r.reply("released");
  }
  void release_all() {
    while (count() > 0) release_one();
  }
  wheelrpc::rpc::Server server;
  std::mutex mu;
  std::deque<Responder> held;
};

wheelrpc::test::Outcome wait(std::future<wheelrpc::test::Outcome>& f) {
  if (f.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "the call did not complete within 30 s";
    return {};
  }
  return f.get();
}

CallOptions long_call() {
  CallOptions o;
  o.timeout = 20s;
  o.retries = 0;
  return o;
}

/// One HoldingServer and a client limited to `limit` attempts in flight on it.
struct OneProvider {
  explicit OneProvider(std::size_t limit)
      : p(threads, timer, "p0"),
        client(threads.io.get_executor(), timer, {p.server.local_endpoint()}, options(limit)) {}
  ~OneProvider() {
    client.close();
    p.server.stop();
    threads.stop();
  }
  static wheelrpc::rpc::ClientOptions options(std::size_t limit) {
    wheelrpc::rpc::ClientOptions co;
    co.max_active_per_provider = limit;
    return co;
  }
  wheelrpc::test::IoThreads threads{2};
  wheelrpc::timer::HashedWheelTimer timer;
  HoldingServer p;
  wheelrpc::rpc::Client client;
};

}  // namespace

TEST(ActiveLimit, ACallWaitsForASlotAndGoesWhenOneFrees) {
  OneProvider fx(2);
  auto& p = fx.p;
  auto& client = fx.client;
  auto a = wheelrpc::test::start(client, "hold", "", long_call());
  auto b = wheelrpc::test::start(client, "hold", "", long_call());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p.count() == 2; }));
  // The third waits: not sent while two are in flight.
  auto c = wheelrpc::test::start(client, "hold", "", long_call());
  EXPECT_EQ(client.stats().pending, 3u);
  EXPECT_EQ(p.server.stats().requests, 2u) << "the third call is held back by the client";
  EXPECT_EQ(client.providers()[0].active, 2u);
  // One ends: the waiting call takes its slot.
  p.release_one();
  // Held, not only read: the server counts a request before its handler
  // runs, and release_all() below lets go of what is held by then.
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p.server.stats().requests == 3 && p.count() == 2; }));
  // The one released is whichever of the first two reached the server first.
  using wheelrpc::test::done;
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return done(a) || done(b); }));
  auto& released = done(a) ? a : b;
  auto& still_held = done(a) ? b : a;
  EXPECT_FALSE(wait(released).ec);
  EXPECT_EQ(client.providers()[0].active, 2u);
  p.release_all();
  EXPECT_FALSE(wait(still_held).ec);
  EXPECT_FALSE(wait(c).ec);
}

TEST(ActiveLimit, AProviderAtItsLimitIsSkippedByLoadBalancing) {
  wheelrpc::test::IoThreads threads(2);
  wheelrpc::timer::HashedWheelTimer timer;
  HoldingServer p0(threads, timer, "p0"), p1(threads, timer, "p1");
  wheelrpc::rpc::ClientOptions co;
  co.max_active_per_provider = 1;
  wheelrpc::rpc::Client client(threads.io.get_executor(), timer,
                               {p0.server.local_endpoint(), p1.server.local_endpoint()}, co);
  client.connect();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] {
    const auto ps = client.providers();
    return ps.size() == 2 && ps[0].ready && ps[1].ready;
  }));
  auto held = wheelrpc::test::start(client, "hold", "", long_call());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p0.count() + p1.count() == 1; }));
  const std::string busy = p0.count() == 1 ? "p0" : "p1";
  // Round robin would alternate; the busy provider has no slot, so every call goes to the other.
  for (int i = 0; i < 6; ++i) {
    const auto out = wheelrpc::test::call_and_wait(client, "name", "", long_call());
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_NE(out.response.payload, busy);
  }
  p0.release_all();
  p1.release_all();
  EXPECT_FALSE(wait(held).ec);
  client.close();
  p0.server.stop();
  p1.server.stop();
  threads.stop();
}

TEST(ActiveLimit, ACallThatFindsNoSlotBeforeItsDeadlineTimesOutNotSentAndSaysWhy) {
  OneProvider fx(1);
  auto& p = fx.p;
  auto& client = fx.client;
  auto held = wheelrpc::test::start(client, "hold", "", long_call());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p.count() == 1; }));
  CallOptions shortish = long_call();
  shortish.timeout = 300ms;
  const auto out = wheelrpc::test::call_and_wait(client, "hold", "", shortish);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_NE(out.response.error_message.find("not sent: every ready provider has 1 attempts in flight"),
            std::string::npos)
      << out.response.error_message;
  EXPECT_EQ(p.server.stats().requests, 1u) << "never sent";
  const auto timeouts = client.recent_timeouts();
  ASSERT_EQ(timeouts.size(), 1u);
  EXPECT_EQ(timeouts[0].phase, wheelrpc::rpc::TimeoutPhase::waiting_to_send);
  p.release_all();
  EXPECT_FALSE(wait(held).ec);
}

TEST(ActiveLimit, NeverMoreInFlightOnAProviderThanItsLimitUnderConcurrentCalls) {
  OneProvider fx(3);
  auto& p = fx.p;
  auto& client = fx.client;
  std::vector<std::future<wheelrpc::test::Outcome>> calls;
  for (int i = 0; i < 40; ++i) calls.push_back(wheelrpc::test::start(client, "hold", "", long_call()));
  // Released one at a time as they arrive: the server never holds more than three.
  std::size_t released = 0;
  while (released < calls.size()) {
    ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p.count() > 0; })) << released << " released";
    EXPECT_LE(p.count(), 3u);
    p.release_one();
    ++released;
  }
  for (auto& f : calls) EXPECT_FALSE(wait(f).ec);
  EXPECT_EQ(p.server.stats().requests, 40u);
}

TEST(ActiveLimit, ALimitAboveMaxPendingCallsIsRejected) {
  wheelrpc::rpc::ClientOptions co;
  co.max_pending_calls = 10;
  co.max_active_per_provider = 11;
  EXPECT_THROW(wheelrpc::rpc::validate(co), std::invalid_argument);
}
