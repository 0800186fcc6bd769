// The FaultProxy faults once over TLS: Server(TLS) <- FaultProxy <- Client(TLS).
// A black hole, a reset, a stream cut short and the proxy going down: every
// call completes exactly once with a reply or a precise error, and the client
// reconnects (a fresh handshake) by itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <wheelrpc/fault/fault_proxy.h>

#include "support/rpc_fixture.h"
#include "support/toxic.h"
#include "support/wait.h"
#include "tls/tls_fixture.h"

using namespace std::chrono_literals;
using wheelrpc::fault::FaultProxy;
using wheelrpc::fault::Stream;
namespace rpc = wheelrpc::rpc;
namespace test = wheelrpc::test;
using test::toxic;
using test::wait_until;

namespace {

/// Millisecond-scale heartbeats (30 ms: idle timeout 90 ms) as in the
/// plaintext fault tests; the client verifies the proxy's address, 127.0.0.1,
/// which the server's certificate names.
class TlsFault : public test::TlsTest {
 protected:
  void SetUp() override {
    TlsTest::SetUp();
    rpc::ServerOptions so;
    so.keepalive.heartbeat = 30ms;
    so.tls = server_tls();
    server.emplace(io.io.get_executor(), timer, so);
    test::register_test_methods(*server, io.io);
    if (auto ec = server->listen(test::loopback0())) throw boost::system::system_error(ec);
    proxy.emplace(io.io.get_executor(), test::loopback0(), server->local_endpoint());
    if (auto ec = proxy->start()) throw boost::system::system_error(ec);
    rpc::ClientOptions co;
    co.heartbeat = 30ms;
    co.connect_timeout = 300ms;
    co.reconnect.initial = 30ms;
    co.reconnect.max = 200ms;
    co.tls = client_tls();
    client.emplace(io.io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{proxy->local_endpoint()},
                   co);
  }
  void TearDown() override {
    client->close();
    proxy->stop();
    server->stop();
    io.stop();
    TlsTest::TearDown();
  }

  /// `n` calls of `method`; waits for all, checks each completed once (a
  /// std::future throws on a second completion) by its deadline + slack.
  std::vector<test::Outcome> run(int n, const std::string& method, const std::string& payload,
                                 std::chrono::milliseconds timeout, const std::function<void()>& while_in_flight = {}) {
    std::vector<std::future<test::Outcome>> calls;
    rpc::CallOptions o;
    o.timeout = timeout;
    o.retries = 0;
    for (int i = 0; i < n; ++i) calls.push_back(test::start(*client, method, payload, o));
    if (while_in_flight) while_in_flight();
    std::vector<test::Outcome> out;
    for (auto& f : calls) {
      EXPECT_EQ(f.wait_for(15s), std::future_status::ready);
      out.push_back(f.get());
      EXPECT_LE(out.back().took, timeout + 300ms) << out.back().response.error_message;
    }
    return out;
  }

  void expect_recovers() {
    ASSERT_TRUE(wait_until(
        [&] {
          rpc::CallOptions o;
          o.timeout = 1000ms;
          return !test::call_and_wait(*client, "echo", "again", o).ec;
        },
        10s));
  }

  wheelrpc::timer::HashedWheelTimer timer;
  test::IoThreads io;
  std::optional<rpc::Server> server;
  std::optional<FaultProxy> proxy;
  std::optional<rpc::Client> client;
};

}  // namespace

TEST_F(TlsFault, ABlackHoleIsDetectedAndNoCallWaitsPastItsDeadline) {
  ASSERT_EQ(client->call("echo", "up").payload, "up");
  ASSERT_FALSE(proxy->add_toxic(toxic("hole", Stream::both, wheelrpc::fault::Blackhole{})));
  for (const auto& r : run(20, "echo", "x", 200ms)) {
    EXPECT_TRUE(r.ec == rpc::errc::timeout || r.ec == rpc::errc::connection_lost) << r.ec.message();
  }
  // Heartbeats go unanswered: the connection is given up and tried again
  // (the new handshakes time out in the hole too).
  ASSERT_TRUE(wait_until([&] { return proxy->stats().connections_accepted >= 2; }, 10s));
  ASSERT_FALSE(proxy->remove_toxic("hole"));
  expect_recovers();
  EXPECT_GE(server->stats().accepted, 2u) << "a fresh handshake after the hole";
}

TEST_F(TlsFault, AResetFailsPendingCallsAtOnceAndTheClientReconnects) {
  ASSERT_EQ(client->call("echo", "up").payload, "up");
  const auto outcomes = run(20, "sleep", "2000", 5000ms, [&] {
    ASSERT_TRUE(wait_until([&] { return server->stats().requests >= 21; }, 10s));
    ASSERT_FALSE(proxy->add_toxic(toxic("rst", Stream::both, wheelrpc::fault::ResetPeer{0ms})));
  });
  for (const auto& r : outcomes) {
    EXPECT_EQ(r.ec, rpc::errc::connection_lost) << r.response.error_message;
    EXPECT_LT(r.took, 1900ms) << "failed at the reset, not at the deadline";
  }
  ASSERT_FALSE(proxy->remove_toxic("rst"));
  ASSERT_TRUE(wait_until([&] { return client->stats().connects >= 2; }, 10s));
  EXPECT_EQ(client->call("echo", "back").payload, "back");
}

TEST_F(TlsFault, AStreamCutMidRecordFailsCallsCleanly) {
  ASSERT_EQ(client->call("echo", "up").payload, "up");
  // 8 KiB of TLS records pass, then the server -> client stream ends,
  // mid-record: the client's TLS layer sees a truncated stream. The limit
  // outlasts seconds of heartbeat replies (30 ms apart, about 46 bytes
  // each), so however late a loaded machine starts the calls, the cut falls
  // inside their 30 KiB of replies, not before them.
  ASSERT_FALSE(proxy->add_toxic(toxic("cut", Stream::downstream, wheelrpc::fault::LimitData{8192})));
  int ok = 0, lost = 0;
  for (const auto& r : run(30, "echo", std::string(1024, 'x'), 2000ms)) {
    EXPECT_TRUE(!r.ec || r.ec == rpc::errc::connection_lost || r.ec == rpc::errc::timeout) << r.ec.message();
    ok += !r.ec;
    lost += r.ec == rpc::errc::connection_lost;
  }
  EXPECT_GT(lost, 0);
  EXPECT_LT(ok, 30);
  ASSERT_FALSE(proxy->remove_toxic("cut"));
  ASSERT_TRUE(wait_until([&] { return client->stats().connects >= 2; }, 10s));
  EXPECT_EQ(client->call("echo", "back").payload, "back");
}

TEST_F(TlsFault, TheProxyGoingDownAndUpIsSurvived) {
  ASSERT_EQ(client->call("echo", "up").payload, "up");
  const auto outcomes = run(10, "sleep", "1000", 3000ms, [&] {
    ASSERT_TRUE(wait_until([&] { return server->stats().requests >= 11; }, 10s));
    proxy->down();
  });
  for (const auto& r : outcomes) EXPECT_EQ(r.ec, rpc::errc::connection_lost) << r.response.error_message;
  ASSERT_FALSE(proxy->up());
  expect_recovers();
  EXPECT_GE(client->stats().connects, 2u);
}
