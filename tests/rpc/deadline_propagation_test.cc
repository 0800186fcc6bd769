// Deadline propagation: a call made while a request is served inherits that
// request's deadline, through chains of servers and DeadlineScope.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/rpc/server.h>

#include "support/cluster.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"
using wheelrpc::rpc::DeadlineScope;
using wheelrpc::rpc::Request;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::Server;
using wheelrpc::test::IoThreads;

namespace {

// ---------------------------------------------------------------- deadline propagation

TEST(DeadlinePropagation, AChainOfThreeServersSeesTheFirstCallersBudgetMinusElapsed) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  // client -> s1 -> s2 -> s3. s1 works 100 ms (on a timer) before its nested
  // call and hands the request's deadline on with a DeadlineScope; s2 works
  // 100 ms (synchronously, in the handler) and its nested call inherits the
  // deadline by itself. The nested calls have 5 s timeouts of their own,
  // so only the propagated deadline (2 s) can make s3 see less. The margin
  // below is generous: handlers may run late on a busy machine or under a
  // sanitizer.
  CallOptions nested;
  nested.timeout = 5s;
  Server s3(io.io.get_executor(), timer);
  s3.handle("budget", [](Request req, Responder r) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*req.deadline - Clock::now());
    r.reply(std::to_string(left.count()));
  });
  ASSERT_FALSE(s3.listen(wheelrpc::test::loopback0()));
  Client to_s3(io.io.get_executor(), timer, {s3.local_endpoint()});

  auto reply_with = [](Responder r) {
    return [r = std::move(r)](error_code ec, Response resp) mutable {
      if (ec) {
        r.fail(errc::server_error, ec.message() + ": " + resp.error_message);
      } else {
        r.reply(std::move(resp.payload));
      }
    };
  };
  Server s2(io.io.get_executor(), timer);
  s2.handle("chain", [&](Request req, Responder r) {
    std::this_thread::sleep_for(100ms);  // the handler's own work
    to_s3.async_call("budget", std::move(req.payload), nested, reply_with(std::move(r)));
  });
  ASSERT_FALSE(s2.listen(wheelrpc::test::loopback0()));
  Client to_s2(io.io.get_executor(), timer, {s2.local_endpoint()});

  Server s1(io.io.get_executor(), timer);
  s1.handle("chain", [&](Request req, Responder r) {
    auto t = std::make_shared<boost::asio::steady_timer>(io.io, 100ms);
    t->async_wait([&, t, req = std::move(req), r = std::move(r)](const error_code&) mutable {
      DeadlineScope scope(req.deadline);  // continued later, elsewhere: say whose work this is
      to_s2.async_call("chain", std::move(req.payload), nested, reply_with(std::move(r)));
    });
  });
  ASSERT_FALSE(s1.listen(wheelrpc::test::loopback0()));
  Client to_s1(io.io.get_executor(), timer, {s1.local_endpoint()});

  for (Client* c : {&to_s1, &to_s2, &to_s3}) c->connect();
  ASSERT_TRUE(wait_until(
      [&] { return to_s1.providers()[0].ready && to_s2.providers()[0].ready && to_s3.providers()[0].ready; }));

  auto f = start(to_s1, "chain", "", opts(2000ms));
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  const long long seen = std::stoll(out.response.payload);
  EXPECT_LE(seen, 2000 - 200) << "s3 must see the first caller's budget minus the 200 ms spent upstream";
  EXPECT_GE(seen, 2000 - 200 - 1000) << "and not much less";

  to_s1.close();
  to_s2.close();
  to_s3.close();
  s1.stop();
  s2.stop();
  s3.stop();
  io.stop();
}

TEST(DeadlinePropagation, AnExpiredInheritedDeadlineFailsAtOnceWithoutSending) {
  Cluster c(ManualTime{}, {Mode::reply});
  c.connect_all();
  std::future<Outcome> f;
  {
    DeadlineScope scope(c.manual->clock.now() - 5ms);  // on the client's clock
    f = start(c, "work", "", opts(1s));
  }
  auto out = wait(f);  // the clock never moves
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_TRUE(contains(out.response.error_message, "inherited")) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "not sent")) << out.response.error_message;
  EXPECT_EQ(out.took, 0ms) << "at once";
  EXPECT_EQ(c.client->stats().attempts, 0u);
  EXPECT_EQ(c.total_requests(), 0);
}

TEST(DeadlinePropagation, InheritedDeadlineBoundsTheCallAndStaysInForceInItsCompletion) {
  // On the manual clock the servers see exactly the budget they are sent.
  Cluster c(ManualTime{}, {Mode::reply});
  c.connect_all();
  const auto& clock = c.manual->clock;
  const auto outer = clock.now() + 200ms;
  std::promise<std::pair<long long, std::optional<Clock::time_point>>> p;
  auto fut = p.get_future();
  {
    DeadlineScope scope(outer);
    c.client->async_call("budget", "", opts(5s), [&p](error_code ec, Response r) {
      p.set_value({ec ? -2 : std::stoll(r.payload), wheelrpc::rpc::current_deadline()});
    });
  }
  EXPECT_FALSE(wheelrpc::rpc::current_deadline().has_value()) << "the scope restored the previous one";
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  auto [seen, in_force] = fut.get();
  EXPECT_EQ(seen, 200) << "the inherited 200 ms, not the call's own 5 s";
  ASSERT_TRUE(in_force.has_value());
  EXPECT_EQ(*in_force, outer);

  // A call whose own timeout is shorter than the request's deadline: its
  // completion still runs with the request's deadline in force.
  std::promise<std::optional<Clock::time_point>> q;
  auto qf = q.get_future();
  const auto request_deadline = clock.now() + 5s;
  {
    DeadlineScope scope(request_deadline);
    c.client->async_call("work", "", opts(1s),
                         [&q](error_code, Response) { q.set_value(wheelrpc::rpc::current_deadline()); });
  }
  ASSERT_EQ(qf.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(qf.get(), std::optional<Clock::time_point>(request_deadline));

  // Opting out: the call's own 5 s budget.
  std::future<Outcome> f;
  {
    DeadlineScope scope(clock.now() + 200ms);
    auto o = opts(5s);
    o.inherit_deadline = false;
    f = start(c, "budget", "", o);
  }
  auto out = wait(f);
  ASSERT_FALSE(out.ec);
  EXPECT_EQ(std::stoll(out.response.payload), 5000);
}

TEST(DeadlinePropagation, AnInheritedDeadlineThatPassesIsATimeoutNamingIt) {
  Cluster c(ManualTime{}, {Mode::hold});
  c.connect_all();
  std::future<Outcome> f;
  {
    DeadlineScope scope(c.manual->clock.now() + 100ms);
    f = start(c, "work", "", opts(5s));
  }
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  c.advance(99ms);
  EXPECT_FALSE(done(f));
  c.advance(1ms);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_TRUE(contains(out.response.error_message, "inherited")) << out.response.error_message;
  EXPECT_EQ(out.took, 100ms) << "the inherited deadline, not the call's own 5 s";
}

}  // namespace
