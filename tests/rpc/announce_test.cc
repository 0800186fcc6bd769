// A server with a ServiceAnnouncer: announced once listening, listen fails
// when the announcer does, and a graceful shutdown withdraws first, serves on
// for the unregister grace, then drains. Bounded waits only.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <wheelrpc/rpc/announcer.h>

#include "support/cluster.h"

#include "support/cluster_preamble.h"
using boost::asio::ip::tcp;

namespace {

/// Records what the server asks; answers as told.
class FakeAnnouncer : public wheelrpc::rpc::ServiceAnnouncer {
 public:
  void announce(const tcp::endpoint& ep, Done done) override {
    {
      std::lock_guard lock(mu_);
      events_.push_back("announce " + std::to_string(ep.port()));
    }
    if (fail) {
      done(make_error_code(boost::system::errc::timed_out), "registration of 'svc' not confirmed: etcd is down");
    } else {
      done({}, "");
    }
    if (on_announce) on_announce(ep);
  }
  void withdraw(Done done) override {
    {
      std::lock_guard lock(mu_);
      events_.push_back("withdraw");
    }
    if (on_withdraw) on_withdraw();
    done({}, "");
  }
  std::vector<std::string> events() {
    std::lock_guard lock(mu_);
    return events_;
  }

  bool fail = false;
  std::function<void(const tcp::endpoint&)> on_announce;
  std::function<void()> on_withdraw;

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
};

TEST(Announce, AServerIsAnnouncedOnceListeningAndWithdrawnOnStop) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads io;
  auto announcer = std::make_shared<FakeAnnouncer>();
  wheelrpc::rpc::ServerOptions so;
  so.announcer = announcer;
  wheelrpc::rpc::Server server(io.io.get_executor(), timer, so);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  EXPECT_EQ(announcer->events(),
            std::vector<std::string>{"announce " + std::to_string(server.local_endpoint().port())});
  server.stop();
  EXPECT_EQ(announcer->events().back(), "withdraw");
  server.stop();
  EXPECT_EQ(announcer->events().size(), 2u) << "withdrawn once";
}

TEST(Announce, OfflineWithdrawsTheServerAndOnlineAnnouncesItAgain) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads io;
  auto announcer = std::make_shared<FakeAnnouncer>();
  wheelrpc::rpc::ServerOptions so;
  so.announcer = announcer;
  wheelrpc::rpc::Server server(io.io.get_executor(), timer, so);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  const std::string announced = "announce " + std::to_string(server.local_endpoint().port());
  EXPECT_TRUE(server.state().ready());
  server.set_online(false);
  EXPECT_EQ(announcer->events(), (std::vector<std::string>{announced, "withdraw"}));
  EXPECT_FALSE(server.state().ready());
  EXPECT_FALSE(server.state().announced);
  server.set_online(false);  // idempotent
  EXPECT_EQ(announcer->events().size(), 2u);
  server.set_online(true);
  EXPECT_EQ(announcer->events(), (std::vector<std::string>{announced, "withdraw", announced}));
  EXPECT_TRUE(wait_until([&] { return server.state().ready(); }));
  server.stop();
  EXPECT_EQ(announcer->events().back(), "withdraw");
}

TEST(Announce, ListenFailsWithTheAnnouncersReasonAndStopsListening) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads io;
  auto announcer = std::make_shared<FakeAnnouncer>();
  announcer->fail = true;
  wheelrpc::rpc::ServerOptions so;
  so.announcer = announcer;
  wheelrpc::rpc::Server server(io.io.get_executor(), timer, so);
  std::string message;
  const error_code ec = server.listen(wheelrpc::test::loopback0(), message);
  EXPECT_EQ(ec, boost::system::errc::timed_out);
  EXPECT_EQ(message, "registration of 'svc' not confirmed: etcd is down");
  // The address it announced: nothing accepts there any more (the listening
  // socket is closed on the server's executor, so very soon, not at once).
  const auto events = announcer->events();
  ASSERT_EQ(events.size(), 1u);
  const auto port = static_cast<unsigned short>(std::stoi(events[0].substr(events[0].find(' ') + 1)));
  const tcp::endpoint announced(boost::asio::ip::make_address("127.0.0.1"), port);
  EXPECT_TRUE(wait_until([&] {
    boost::asio::io_context probe;
    tcp::socket s(probe);
    error_code cec;
    s.connect(announced, cec);
    return static_cast<bool>(cec);
  })) << "the listening socket was never closed";
}

TEST(Announce, GracefulShutdownWithdrawsServesThroughTheGraceThenDrains) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads io;
  auto announcer = std::make_shared<FakeAnnouncer>();
  std::promise<void> withdrawn;
  announcer->on_withdraw = [&] { withdrawn.set_value(); };
  wheelrpc::rpc::ServerOptions so;
  so.announcer = announcer;
  // 1 s: a slow test thread still gets a call in before the grace is over.
  so.unregister_grace = 1s;
  wheelrpc::rpc::Server server(io.io.get_executor(), timer, so);
  server.handle("echo", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) { r.reply(req.payload); });
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  wheelrpc::rpc::Client client(io.io.get_executor(), timer, {server.local_endpoint()},
                               wheelrpc::test::client_options());
  ASSERT_EQ(client.call("echo", "before").payload, "before");

  std::promise<error_code> shut;
  const auto t0 = std::chrono::steady_clock::now();
  server.async_shutdown(5s, [&](error_code ec) { shut.set_value(ec); });
  ASSERT_EQ(withdrawn.get_future().wait_for(10s), std::future_status::ready);
  // Within the grace the server still serves (and accepts).
  auto f = shut.get_future();
  int served_in_grace = 0;
  while (f.wait_for(0s) != std::future_status::ready) {
    wheelrpc::rpc::CallOptions o;
    o.timeout = 5s;
    o.retries = 0;
    error_code ec;
    try {
      client.call("echo", "during", o);
      ++served_in_grace;
    } catch (const wheelrpc::rpc::CallError& e) {
      ec = e.code();
    }
    if (ec) {
      // Refused only once the grace is over and the drain began.
      EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s);
      break;
    }
  }
  EXPECT_GE(served_in_grace, 1);
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f.get());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s) << "the grace was served";
  EXPECT_EQ(announcer->events().back(), "withdraw");
  client.close();
}

TEST(Announce, StopDuringTheGraceEndsTheShutdownAborted) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads io;
  auto announcer = std::make_shared<FakeAnnouncer>();
  wheelrpc::rpc::ServerOptions so;
  so.announcer = announcer;
  so.unregister_grace = 30s;
  wheelrpc::rpc::Server server(io.io.get_executor(), timer, so);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  std::promise<error_code> shut;
  server.async_shutdown(5s, [&](error_code ec) { shut.set_value(ec); });
  ASSERT_TRUE(wait_until([&] { return announcer->events().back() == "withdraw"; }));
  server.stop();
  auto f = shut.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), boost::asio::error::operation_aborted);
}

}  // namespace
