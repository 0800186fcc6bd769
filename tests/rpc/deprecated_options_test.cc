// ServerOptions' deprecated top-level fields (options.h) still take effect for
// one version: a value set there applies where its new field is left at its
// default, and the new field wins when both are set. The tests set the
// deprecated fields on purpose, so they silence the deprecation warning.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <stdexcept>
#include <string>

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/rpc/options.h>

#include "server/server_options.h"
#include "server/server_liveness.h"
#include "support/raw_frames.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using wheelrpc::rpc::ConcurrencyLimit;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::detail::resolved;

namespace {

/// A raw connection that says HELLO, then nothing.
class SilentPeer {
 public:
  SilentPeer(const asio::ip::tcp::endpoint& ep, const std::string& heartbeat_ms) : socket_(io_) {
    socket_.connect(ep);
    timeval tv{10, 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    boost::system::error_code ec;  // a server at its limit may close first
    asio::write(socket_, asio::buffer(wheelrpc::test::hello_bytes(heartbeat_ms)), ec);
  }
  /// True when the server closed the connection within 10 s (reading and
  /// dropping the HELLO reply and whatever else comes first).
  bool closed_by_server() {
    std::array<char, 4096> buf{};
    for (;;) {
      boost::system::error_code ec;
      socket_.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::eof || ec == asio::error::connection_reset) return true;
      if (ec) return false;
    }
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
};

}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

TEST(DeprecatedServerOptions, EachDeprecatedFieldSetAppliesToItsNewField) {
  ServerOptions o;
  o.heartbeat = 1s;
  o.hello_timeout = 2s;
  o.close_timeout = 3s;
  o.send_heartbeats = true;
  o.max_connections = 4;
  o.max_requests_per_connection = 5;
  o.deadline_admission = false;
  o.queue_target = 6ms;
  o.queue_interval = 70ms;
  o.max_concurrency = ConcurrencyLimit::fixed(8);
  const ServerOptions r = resolved(o);
  EXPECT_EQ(r.keepalive.heartbeat, 1s);
  EXPECT_EQ(r.keepalive.hello_timeout, 2s);
  EXPECT_EQ(r.keepalive.idle_timeout, 3s);
  EXPECT_TRUE(r.keepalive.send_heartbeats);
  EXPECT_EQ(r.limits.max_connections, 4u);
  EXPECT_EQ(r.limits.max_requests_per_connection, 5u);
  EXPECT_FALSE(r.overload.deadline_admission);
  EXPECT_EQ(r.overload.queue_target, 6ms);
  EXPECT_EQ(r.overload.queue_interval, 70ms);
  EXPECT_EQ(r.overload.max_concurrency.fixed_limit(), 8u);
  EXPECT_NO_THROW(wheelrpc::rpc::validate(o));
}

TEST(DeprecatedServerOptions, TheNewFieldWinsWhenBothAreSet) {
  ServerOptions o;
  o.close_timeout = 3s;
  o.keepalive.idle_timeout = 5s;
  o.max_connections = 4;
  o.limits.max_connections = 9;
  o.queue_target = 6ms;
  o.overload.queue_target = 7ms;
  o.max_concurrency = ConcurrencyLimit::fixed(8);
  o.overload.max_concurrency = ConcurrencyLimit::automatic();
  const ServerOptions r = resolved(o);
  EXPECT_EQ(r.keepalive.idle_timeout, 5s);
  EXPECT_EQ(r.limits.max_connections, 9u);
  EXPECT_EQ(r.overload.queue_target, 7ms);
  EXPECT_EQ(r.overload.max_concurrency.kind(), ConcurrencyLimit::Kind::automatic);
  EXPECT_EQ(resolved(r).keepalive.idle_timeout, 5s) << "idempotent";
}

TEST(DeprecatedServerOptions, UnsetDeprecatedFieldsChangeNothing) {
  ServerOptions o;
  o.keepalive.idle_timeout = 5s;
  o.limits.max_requests_per_connection = 0;
  o.overload.deadline_admission = false;
  const ServerOptions r = resolved(o);
  const ServerOptions d;
  EXPECT_EQ(r.keepalive.heartbeat, d.keepalive.heartbeat);
  EXPECT_EQ(r.keepalive.idle_timeout, 5s);
  EXPECT_EQ(r.limits.max_requests_per_connection, 0u);
  EXPECT_FALSE(r.overload.deadline_admission);
  EXPECT_EQ(r.overload.queue_interval, d.overload.queue_interval);
  EXPECT_EQ(r.overload.max_concurrency.kind(), ConcurrencyLimit::Kind::none);
}

TEST(DeprecatedServerOptions, AnInvalidDeprecatedValueIsRefusedUnderItsNewName) {
  ServerOptions o;
  o.close_timeout = -1ms;
  try {
    wheelrpc::rpc::validate(o);
    ADD_FAILURE() << "not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "ServerOptions::keepalive.idle_timeout must be >= 0");
  }
}

TEST(DeprecatedServerOptions, CloseTimeoutIsTheIdleTimeoutTheServerApplies) {
  ServerOptions o;
  o.keepalive.heartbeat = 30ms;
  o.close_timeout = 600ms;
  EXPECT_EQ(wheelrpc::rpc::detail::ServerLiveness(resolved(o)).idle_timeout_for(30ms), 600ms);
  o.keepalive.idle_timeout = 900ms;
  EXPECT_EQ(wheelrpc::rpc::detail::ServerLiveness(resolved(o)).idle_timeout_for(30ms), 900ms) << "the new one wins";
}

TEST(DeprecatedServerOptions, AServerHonoursADeprecatedCloseTimeout) {
  // Agreed heartbeat 30 ms: without close_timeout the silent peer would be
  // closed after 90 ms; with it, not before 1500 ms.
  ServerOptions so;
  so.keepalive.heartbeat = 30ms;
  so.close_timeout = 1500ms;
  wheelrpc::test::RpcFixture fx(so);
  const auto start = std::chrono::steady_clock::now();
  SilentPeer peer(fx.server.local_endpoint(), "30");
  ASSERT_TRUE(peer.closed_by_server());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1400ms);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().idle_closes == 1; }));
}

TEST(DeprecatedServerOptions, AServerHonoursADeprecatedMaxConnections) {
  ServerOptions so;
  so.max_connections = 1;
  wheelrpc::test::RpcFixture fx(so);  // its client holds no connection until its first call
  SilentPeer first(fx.server.local_endpoint(), "15000");
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().connections == 1; }));
  SilentPeer second(fx.server.local_endpoint(), "15000");
  EXPECT_TRUE(second.closed_by_server());
  EXPECT_EQ(fx.server.stats().refused_connections, 1u);
}

TEST(DeprecatedServerOptions, LimitsMaxConnectionsWinsOverTheDeprecatedOne) {
  ServerOptions so;
  so.max_connections = 1;
  so.limits.max_connections = 2;
  wheelrpc::test::RpcFixture fx(so);
  SilentPeer first(fx.server.local_endpoint(), "15000");
  SilentPeer second(fx.server.local_endpoint(), "15000");
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().connections == 2; }));
  SilentPeer third(fx.server.local_endpoint(), "15000");
  EXPECT_TRUE(third.closed_by_server());
  EXPECT_EQ(fx.server.stats().refused_connections, 1u);
}

#pragma GCC diagnostic pop
