// How a FaultProxy connection ends, and that `connections_active` counts each
// one down exactly once however it ends: client close or reset, upstream
// close, reset_peer, limit_data, a failed upstream connect, down(), stop(),
// and a blackhole that holds both ends of a connection whose peers have both
// left. All on 127.0.0.1 port 0; every wait is bounded.
//
// Tests that need to play the server themselves (half-close, stay silent)
// put a second proxy in front of a TimedListener.

#include <wheelrpc/fault/control_server.h>
#include <wheelrpc/fault/fault_proxy.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/socket_base.hpp>
#include <gtest/gtest.h>

#include "support/fault_proxy_fixture.h"
#include "support/raw_http.h"
#include "support/timed_client.h"
#include "support/timed_listener.h"
#include "support/wait.h"

namespace {

namespace asio = boost::asio;
namespace fault = wheelrpc::fault;
using namespace std::chrono_literals;
using wheelrpc::test::is_closed_error;
using wheelrpc::test::loopback;
using wheelrpc::test::TimedClient;
using wheelrpc::test::TimedListener;
using wheelrpc::test::wait_until;

const fault::Toxic kHoleBoth{"hole", fault::Stream::both, fault::Blackhole{}};

class ConnectionLifetimeTest : public wheelrpc::test::FaultProxyFixture {
 protected:
  void TearDown() override {
    played_.reset();
    FaultProxyFixture::TearDown();
  }

  /// A proxy in front of `listener_`, where the test plays the server.
  fault::FaultProxy& played_proxy() {
    if (!played_) {
      played_ = std::make_unique<fault::FaultProxy>(io_.get_executor(), loopback(0), listener_.endpoint());
      EXPECT_FALSE(played_->start());
    }
    return *played_;
  }

  /// A client through the played proxy, and the server's end of its upstream
  /// connection; returns once the proxy counts the connection.
  void connect_played(std::unique_ptr<TimedClient>& client, TimedClient& server) {
    auto& proxy = played_proxy();
    const auto before = proxy.stats().connections_accepted;
    client = connect(&proxy);
    ASSERT_FALSE(listener_.accept(server));
    ASSERT_TRUE(wait_until([&] { return proxy.stats().connections_accepted == before + 1; }));
    ASSERT_GE(proxy.stats().connections_active, 1u);
  }

  static bool drains(const fault::FaultProxy& proxy) {
    return wait_until([&] { return proxy.stats().connections_active == 0; }, 10s);
  }

  /// The connection is still open: nothing arrives, no end, within `d`.
  static void expect_held(TimedClient& end, std::chrono::milliseconds d = 300ms) {
    std::string got;
    const auto ec = end.read_some(got, d);
    EXPECT_EQ(ec, asio::error::timed_out) << ec.message();
    EXPECT_TRUE(got.empty());
  }

  TimedListener listener_;
  std::unique_ptr<fault::FaultProxy> played_;
};

// ---- a blackhole holding the ends of a connection nobody uses any more --------

TEST_F(ConnectionLifetimeTest, ABlackholeHoldingBothEndsKeepsTheConnectionUntilRemovedThenCountsItDown) {
  auto& proxy = played_proxy();
  ASSERT_FALSE(proxy.add_toxic(kHoleBoth));
  std::unique_ptr<TimedClient> c;
  TimedClient s;
  connect_played(c, s);

  // Both peers end their sending side; the hole holds both ends. No read is
  // pending on either socket of the proxy now, yet the connection is open.
  c->shutdown_send();
  s.shutdown_send();
  expect_held(*c);
  expect_held(s);
  EXPECT_EQ(proxy.stats().connections_active, 1u);

  ASSERT_FALSE(proxy.remove_toxic("hole"));
  std::string got;
  EXPECT_EQ(c->read_until_closed(got), asio::error::eof);
  EXPECT_EQ(s.read_until_closed(got), asio::error::eof);
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(drains(proxy)) << proxy.stats().connections_active;
}

TEST_F(ConnectionLifetimeTest, DownCountsDownAConnectionWhoseClientLeftDuringABlackhole) {
  auto& proxy = played_proxy();
  ASSERT_FALSE(proxy.add_toxic(kHoleBoth));
  std::unique_ptr<TimedClient> c;
  TimedClient s;
  connect_played(c, s);

  c->close();         // the client exits during the hole
  s.shutdown_send();  // and the server gives the connection up (an idle close)
  expect_held(s);

  proxy.down();
  std::string got;
  EXPECT_TRUE(is_closed_error(s.read_until_closed(got)));
  EXPECT_TRUE(drains(proxy)) << proxy.stats().connections_active;
}

TEST_F(ConnectionLifetimeTest, StopCountsDownAConnectionABlackholeHolds) {
  auto& proxy = played_proxy();
  ASSERT_FALSE(proxy.add_toxic(kHoleBoth));
  std::unique_ptr<TimedClient> c;
  TimedClient s;
  connect_played(c, s);

  c->shutdown_send();
  s.shutdown_send();
  expect_held(*c);

  proxy.stop();
  std::string got;
  EXPECT_TRUE(is_closed_error(c->read_until_closed(got)));
  EXPECT_TRUE(is_closed_error(s.read_until_closed(got)));
  EXPECT_TRUE(drains(proxy)) << proxy.stats().connections_active;
}

TEST_F(ConnectionLifetimeTest, AOneWayBlackholeHoldingTheLastEndCountsTheConnectionDownWhenRemoved) {
  auto& proxy = played_proxy();
  ASSERT_FALSE(proxy.add_toxic({"hole", fault::Stream::downstream, fault::Blackhole{}}));
  std::unique_ptr<TimedClient> c;
  TimedClient s;
  connect_played(c, s);

  // The client's end goes through; the server's is held.
  c->shutdown_send();
  std::string got;
  EXPECT_EQ(s.read_until_closed(got), asio::error::eof);
  s.shutdown_send();
  expect_held(*c);
  EXPECT_EQ(proxy.stats().connections_active, 1u);

  ASSERT_FALSE(proxy.remove_toxic("hole"));
  EXPECT_EQ(c->read_until_closed(got), asio::error::eof);
  EXPECT_TRUE(drains(proxy)) << proxy.stats().connections_active;
}

TEST_F(ConnectionLifetimeTest, ALimitDataCloseHeldBehindABlackholeClosesTheConnectionWhenRemoved) {
  auto& proxy = played_proxy();
  // limit_data first, then the hole: the close limit_data asks for waits in the hole.
  ASSERT_FALSE(proxy.add_toxic({"cut", fault::Stream::downstream, fault::LimitData{0}}));
  ASSERT_FALSE(proxy.add_toxic({"hole", fault::Stream::downstream, fault::Blackhole{}}));
  std::unique_ptr<TimedClient> c;
  TimedClient s;
  connect_played(c, s);

  ASSERT_FALSE(s.write("x"));
  ASSERT_TRUE(wait_until([&] { return proxy.stats().bytes_dropped == 1; }));
  c->shutdown_send();
  std::string got;
  EXPECT_EQ(s.read_until_closed(got), asio::error::eof);
  s.shutdown_send();
  expect_held(*c);

  ASSERT_FALSE(proxy.remove_toxic("hole"));
  EXPECT_TRUE(is_closed_error(c->read_until_closed(got)));
  EXPECT_TRUE(drains(proxy)) << proxy.stats().connections_active;
  EXPECT_EQ(proxy.stats().limit_closes, 1u);
}

// The case as a user of the CLI met it: over the HTTP control API, a client
// exits during a blackhole on both, the toxic is deleted, the proxy taken
// down; /stats must then say no connection is left.
TEST_F(ConnectionLifetimeTest, OverTheControlApiNoConnectionIsLeftAfterAHoleAClientLeftDuring) {
  using wheelrpc::test::http_call;
  auto& proxy = played_proxy();
  control_ = std::make_unique<fault::ControlServer>(io_.get_executor(), proxy, 0);
  ASSERT_FALSE(control_->start());
  const auto api = control_->local_endpoint();

  auto r = http_call(api, "POST", "/toxics", R"({"name":"hole","type":"blackhole","stream":"both"})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::unique_ptr<TimedClient> c;
  TimedClient s;
  connect_played(c, s);
  c->close();
  s.shutdown_send();
  expect_held(s);

  EXPECT_EQ(http_call(api, "DELETE", "/toxics/hole").status, 204);
  EXPECT_EQ(http_call(api, "POST", "/down").status, 200);
  std::string body;
  EXPECT_TRUE(wait_until(
      [&] {
        body = http_call(api, "GET", "/stats").body;
        return body.find("\"connections_active\":0,") != std::string::npos;
      },
      10s))
      << body;
}

// ---- every other way a connection ends -------------------------------------

TEST_F(ConnectionLifetimeTest, AClientThatClosesIsCountedDown) {
  auto c = connect();
  expect_echo(*c, "bye");
  c->close();
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;
}

TEST_F(ConnectionLifetimeTest, AClientThatResetsIsCountedDown) {
  auto c = connect();
  expect_echo(*c, "bye");
  boost::system::error_code ignored;
  c->socket().set_option(asio::socket_base::linger(true, 0), ignored);
  c->close();
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;
}

TEST_F(ConnectionLifetimeTest, AConnectionTheUpstreamClosesIsCountedDownOnceTheClientCloses) {
  auto c = connect();
  expect_echo(*c, "hi");
  echo_->stop();  // closes the echo's end
  std::string got;
  EXPECT_EQ(c->read_until_closed(got), asio::error::eof);
  c->close();
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;
}

TEST_F(ConnectionLifetimeTest, ResetPeerCountsTheConnectionDown) {
  auto c = connect();
  expect_echo(*c, "hi");
  ASSERT_FALSE(proxy_->add_toxic({"rst", fault::Stream::both, fault::ResetPeer{0ms}}));
  std::string got;
  EXPECT_TRUE(is_closed_error(c->read_until_closed(got)));
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;
  EXPECT_EQ(proxy_->stats().resets, 1u);
}

TEST_F(ConnectionLifetimeTest, AFailedUpstreamConnectCountsTheConnectionDown) {
  echo_->stop();
  auto c = connect();
  std::string got;
  EXPECT_TRUE(is_closed_error(c->read_until_closed(got)));
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;
  EXPECT_EQ(proxy_->stats().upstream_connect_failures, 1u);
}

TEST_F(ConnectionLifetimeTest, DownAndStopCountEveryConnectionDown) {
  auto a = connect();
  auto b = connect();
  expect_echo(*a, "a");
  expect_echo(*b, "b");
  EXPECT_EQ(proxy_->stats().connections_active, 2u);
  proxy_->down();
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;

  ASSERT_TRUE(wait_until([&] { return !proxy_->up(); }));
  auto c = connect();
  expect_echo(*c, "c");
  EXPECT_EQ(proxy_->stats().connections_active, 1u);  // counted down once each, not more
  proxy_->stop();
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;
  EXPECT_EQ(proxy_->stats().connections_accepted, 3u);
}

// Many connections ending in every way at once, toxics coming and going among
// them: when all is over, the count is back to zero, not above (a leak) nor
// wrapped below (a double count-down).
TEST_F(ConnectionLifetimeTest, ManyConnectionsEndingEveryWayLeaveTheCountAtZero) {
  constexpr int kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    const bool hole = round % 2 == 1;
    if (hole) {
      ASSERT_FALSE(proxy_->add_toxic(kHoleBoth));
    }
    auto closes = connect();
    auto resets = connect();
    auto half = connect();
    auto left = connect();  // still open when the round ends
    if (!hole) expect_echo(*closes, "x");
    closes->close();
    boost::system::error_code ignored;
    resets->socket().set_option(asio::socket_base::linger(true, 0), ignored);
    resets->close();
    half->shutdown_send();
    if (hole) {
      ASSERT_FALSE(proxy_->remove_toxic("hole"));
    }
    std::string got;
    EXPECT_TRUE(is_closed_error(half->read_until_closed(got)));
    left->close();
  }
  EXPECT_TRUE(drains(*proxy_)) << proxy_->stats().connections_active;
  EXPECT_EQ(proxy_->stats().connections_accepted, 4u * kRounds);
  proxy_->down();
  EXPECT_EQ(proxy_->stats().connections_active, 0u);
}

// The proxy and its executor go away without the executor running again: the
// close that stop() posted never runs. The connection must not outlive them
// (kept alive by the proxy's own bookkeeping): it is freed with the posted
// close, its sockets closed. (Under the asan preset a leak would show too.)
TEST(FaultProxyLifetime, AConnectionWhoseCloseNeverRunsIsFreedWithTheExecutor) {
  TimedListener listener;
  auto io = std::make_unique<asio::io_context>();
  auto work = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io->get_executor());
  std::thread runner([&] { io->run(); });
  auto proxy = std::make_unique<fault::FaultProxy>(io->get_executor(), loopback(0), listener.endpoint());
  ASSERT_FALSE(proxy->start());
  TimedClient c, s;
  ASSERT_FALSE(c.connect(proxy->local_endpoint()));
  ASSERT_FALSE(listener.accept(s));
  ASSERT_TRUE(wait_until([&] { return proxy->stats().connections_active == 1; }));

  work.reset();
  io->stop();
  runner.join();
  proxy.reset();  // stop(): posts the close, which will never run
  io.reset();     // destroys it unrun
  std::string got;
  EXPECT_TRUE(is_closed_error(c.read_until_closed(got))) << "the connection outlived its proxy";
  EXPECT_TRUE(is_closed_error(s.read_until_closed(got))) << "the connection outlived its proxy";
}

}  // namespace
