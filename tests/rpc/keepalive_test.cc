// Heartbeats, idle close, half-open detection, reconnects with backoff and
// wait_for_ready, at millisecond scale on loopback. Windows in which something
// must NOT happen are several times the interval at stake.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "support/rpc_fixture.h"
#include "support/scripted_server.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Response;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::test::IoThreads;
using wheelrpc::test::ScriptedServer;
using wheelrpc::test::wait_until;

namespace {

ClientOptions client_options(std::chrono::milliseconds heartbeat) {
  ClientOptions o;
  o.heartbeat = heartbeat;
  o.connect_timeout = 1s;
  o.reconnect.initial = 50ms;
  o.reconnect.max = 400ms;
  return o;
}

ServerOptions server_options(std::chrono::milliseconds heartbeat) {
  ServerOptions o;
  o.keepalive.heartbeat = heartbeat;
  return o;
}

CallOptions timeout(std::chrono::milliseconds t) {
  CallOptions o;
  o.timeout = t;
  return o;
}

error_code call_ec(Client& c, std::chrono::milliseconds t, std::string* message = nullptr) {
  try {
    c.call("echo", "x", timeout(t));
    return {};
  } catch (const wheelrpc::rpc::CallError& e) {
    if (message) *message = e.what();
    return e.code();
  }
}

TEST(KeepAlive, HeartbeatsKeepAnIdleConnectionOpen) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  // Heartbeats every 30 ms; each side closes after 600 ms idle, so a
  // heartbeat late by half a second on a loaded machine still counts.
  ServerOptions so = server_options(30ms);
  so.keepalive.idle_timeout = 600ms;
  Server server(io.io.get_executor(), timer, so);
  wheelrpc::test::register_test_methods(server, io.io);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  ClientOptions co = client_options(30ms);
  co.idle_timeout = 600ms;
  Client client(io.io.get_executor(), timer, {server.local_endpoint()}, co);
  ASSERT_FALSE(call_ec(client, 2s));
  // 30 heartbeats: at least 900 ms without a call, longer than either timeout.
  ASSERT_TRUE(wait_until([&] { return client.stats().heartbeats_sent >= 30; }, 20s));
  EXPECT_EQ(server.stats().connections, 1u);
  EXPECT_EQ(server.stats().idle_closes, 0u);
  EXPECT_EQ(client.stats().connects, 1u) << "never closed, never reconnected";
  EXPECT_FALSE(call_ec(client, 2s));
  client.close();
  server.stop();
}

TEST(KeepAlive, ABusyConnectionSendsNoHeartbeats) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  ScriptedServer scripted(io.io.get_executor(), true,
                          [](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& f) {
                            ch.send(ScriptedServer::reply_to(f, f.payload));
                          });
  // A 1 s heartbeat: a gap between two calls on a loaded machine is far
  // shorter, so the connection is never idle for a heartbeat while busy.
  Client client(io.io.get_executor(), timer, {scripted.endpoint()}, client_options(1s));
  const auto end = Clock::now() + 2500ms;
  while (Clock::now() < end) ASSERT_FALSE(call_ec(client, 2s));  // a call every few microseconds
  EXPECT_EQ(scripted.heartbeats(), 0);
  ASSERT_TRUE(wait_until([&] { return scripted.heartbeats() >= 1; }, 10s)) << "idle now: heartbeats start";
  client.close();
}

TEST(KeepAlive, AgreedIntervalIsTheLargerOfTheTwo) {
  // The server alone would close after 3 x 20 ms; the client only sends a
  // heartbeat every 100 ms. The HELLO exchange makes both use 100 ms.
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  Server server(io.io.get_executor(), timer, server_options(20ms));
  wheelrpc::test::register_test_methods(server, io.io);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  Client client(io.io.get_executor(), timer, {server.local_endpoint()}, client_options(100ms));
  ASSERT_FALSE(call_ec(client, 2s));
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(client.stats().connects, 1u) << "the server must not close a healthy client";
  client.close();
  server.stop();
}

// A raw peer that completes the HELLO and then says nothing.
struct SilentPeer {
  explicit SilentPeer(const asio::ip::tcp::endpoint& ep) : socket(io) {
    socket.connect(ep);
    wheelrpc::transport::Frame hello;
    hello.header.flags =
        wheelrpc::transport::kFlagEvent | wheelrpc::transport::kFlagRequest | wheelrpc::transport::kFlagTwoWay;
    hello.method = "hello";
    hello.attachments = {{"version", "1"}, {"heartbeat_ms", "1"}};
    std::string out;
    wheelrpc::transport::encode_frame(hello, out);
    asio::write(socket, asio::buffer(out));
  }
  /// Blocks until the server closes the connection (bounded by SO_RCVTIMEO).
  bool wait_closed() {
    timeval tv{10, 0};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::array<char, 256> buf{};
    for (;;) {
      error_code ec;
      socket.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::eof || ec == asio::error::connection_reset) return true;
      if (ec) return false;
    }
  }
  asio::io_context io;
  asio::ip::tcp::socket socket;
};

TEST(KeepAlive, ServerClosesIdleConnectionsAfterTheCloseTimeoutAndNotBefore) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  // Heartbeats every 50 ms, idle connections closed after 600 ms: the busy
  // client's heartbeats may be late by half a second on a loaded machine
  // (a sanitizer build among parallel tests) and it still stays.
  ServerOptions so = server_options(50ms);
  so.keepalive.idle_timeout = 600ms;
  Server server(io.io.get_executor(), timer, so);
  wheelrpc::test::register_test_methods(server, io.io);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  // A busy client next to the idle ones: it must stay.
  Client busy(io.io.get_executor(), timer, {server.local_endpoint()}, client_options(50ms));
  ASSERT_FALSE(call_ec(busy, 2s));
  std::vector<std::unique_ptr<SilentPeer>> idle;
  const auto t0 = Clock::now();
  for (int i = 0; i < 5; ++i) idle.push_back(std::make_unique<SilentPeer>(server.local_endpoint()));
  for (auto& p : idle) {
    ASSERT_TRUE(p->wait_closed());
    EXPECT_GE(Clock::now() - t0, 600ms) << "closed before the idle timeout";
  }
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_FALSE(call_ec(busy, 2s));
  EXPECT_EQ(busy.stats().connects, 1u);
  busy.close();
  server.stop();
}

TEST(KeepAlive, HalfOpenPeerIsDetectedWithinTheIdleTimeoutAndReconnected) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  ScriptedServer scripted(io.io.get_executor(), true,
                          [](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& f) {
                            ch.send(ScriptedServer::reply_to(f, f.payload));
                          });
  Client client(io.io.get_executor(), timer, {scripted.endpoint()}, client_options(30ms));  // idle: 90 ms
  const auto before_call = Clock::now();
  ASSERT_FALSE(call_ec(client, 2s));
  scripted.answer_heartbeats(false);  // from now on: heartbeats go unanswered
  const auto t0 = Clock::now();
  ASSERT_TRUE(wait_until([&] { return scripted.accepted() >= 2; }, 10s)) << "no reconnect";
  const auto seen = Clock::now();
  // The idle time counts from the client's last read: the call's reply or a
  // heartbeat answer, each read after it was sent (a loaded machine may
  // delay a heartbeat past its interval, so t0 alone does not bound it).
  const auto last_read_after = std::max(before_call, scripted.last_heartbeat_answer());
  EXPECT_GE(seen - last_read_after, 90ms) << "closed before the idle timeout";
  // Idle timeout (90 ms) + one check interval (10 ms) + the reconnect's TCP
  // handshake, plus slack for a loaded machine or a sanitizer build.
  EXPECT_LT(seen - t0, 90ms + 10ms + 400ms);
  scripted.answer_heartbeats(true);
  ASSERT_TRUE(wait_until([&] { return client.stats().connects >= 2; }, 10s));
  EXPECT_FALSE(call_ec(client, 2s));
  client.close();
}

// The handshake has the connect timeout (30 s here), and a reconnect task
// that checks it then sleeps until that ends; once the HELLO agrees the
// heartbeat, a silent peer is found by the agreed idle timeout (90 ms), not
// at the end of the handshake's budget.
TEST(KeepAlive, AfterTheHelloTheAgreedIdleTimeoutAppliesNotTheConnectTimeout) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  ScriptedServer scripted(io.io.get_executor(), true,
                          [](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& f) {
                            ch.send(ScriptedServer::reply_to(f, f.payload));
                          });
  scripted.hello_delay(300ms);        // the reconnect task (every 30 ms) sees the handshake
  scripted.answer_heartbeats(false);  // answers the HELLO and calls, never a heartbeat
  ClientOptions co = client_options(30ms);
  co.connect_timeout = 30s;
  Client client(io.io.get_executor(), timer, {scripted.endpoint()}, co);
  ASSERT_FALSE(call_ec(client, 2s));
  ASSERT_TRUE(wait_until([&] { return scripted.accepted() >= 2; }, 10s)) << "the silent peer was not found";
  EXPECT_GE(client.stats().idle_closes, 1u);
  client.close();
}

TEST(KeepAlive, ClientReconnectsToARestartedServerOnTheSamePort) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  auto first = std::make_unique<Server>(io.io.get_executor(), timer, server_options(30ms));
  wheelrpc::test::register_test_methods(*first, io.io);
  ASSERT_FALSE(first->listen(wheelrpc::test::loopback0()));
  const auto endpoint = first->local_endpoint();
  Client client(io.io.get_executor(), timer, {endpoint}, client_options(30ms));
  ASSERT_FALSE(call_ec(client, 2s));

  // Calls in flight when the server dies complete with connection_lost.
  std::atomic<int> lost{0}, other{0};
  for (int i = 0; i < 10; ++i) {
    auto o = timeout(10s);
    o.retries = 0;  // one attempt: its connection's loss is the call's outcome
    client.async_call("sleep", "5000", o,
                      [&](error_code ec, Response) { (ec == errc::connection_lost ? lost : other)++; });
  }
  ASSERT_TRUE(wait_until([&] { return first->stats().requests >= 11; }));
  first->stop();
  first.reset();
  ASSERT_TRUE(wait_until([&] { return lost.load() + other.load() == 10; }));
  EXPECT_EQ(lost.load(), 10);

  Server second(io.io.get_executor(), timer, server_options(30ms));
  wheelrpc::test::register_test_methods(second, io.io);
  // Tests run in parallel: until it is bound again, the freed port can serve
  // briefly as the source port of another test's connection. Bounded retry.
  ASSERT_TRUE(wait_until([&] { return !second.listen(endpoint); }, 10s));
  // The ReconnectTimerTask brings the connection back by itself, within the
  // backoff bound (50 ms, 80 ms, 128 ms... at most 400 ms, +- 20 %).
  ASSERT_TRUE(wait_until([&] { return client.stats().connects >= 2; }, 5s));
  EXPECT_FALSE(call_ec(client, 2s));
  client.close();
  second.stop();
}

TEST(KeepAlive, WaitForReadyCallSucceedsWhenTheServerComesUp) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  asio::ip::tcp::endpoint endpoint;
  {
    asio::ip::tcp::acceptor probe(io.io, wheelrpc::test::loopback0());
    endpoint = probe.local_endpoint();
  }
  Client client(io.io.get_executor(), timer, {endpoint}, client_options(30ms));
  std::promise<error_code> result;
  CallOptions o = timeout(5s);
  o.wait_for_ready = true;  // waits through the refused connects
  client.async_call("echo", "late", o, [&](error_code ec, Response) { result.set_value(ec); });
  ASSERT_TRUE(wait_until([&] { return client.stats().connect_failures >= 2; }));
  Server server(io.io.get_executor(), timer, server_options(30ms));
  wheelrpc::test::register_test_methods(server, io.io);
  ASSERT_FALSE(server.listen(endpoint));
  auto f = result.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f.get()) << "the waiting call went out once the server was up";
  client.close();
  server.stop();
}

TEST(KeepAlive, ReconnectAttemptsFollowTheBackoffCurveAndStopWhenClosed) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  // A server that is "down": it accepts and hangs up at once, so every
  // attempt fails (after the TCP handshake, which lets us time it).
  std::mutex mu;
  std::vector<Clock::time_point> attempts;
  asio::ip::tcp::acceptor down(io.io, wheelrpc::test::loopback0());
  std::function<void()> accept_one = [&] {
    down.async_accept([&](error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      {
        std::lock_guard lock(mu);
        attempts.push_back(Clock::now());
      }
      s.close();
      accept_one();
    });
  };
  accept_one();
  ClientOptions co = client_options(15ms);  // checks every 5 ms
  co.reconnect.initial = 60ms;
  co.reconnect.multiplier = 1.6;
  co.reconnect.jitter = 0.2;
  co.reconnect.max = 250ms;
  Client client(io.io.get_executor(), timer, {down.local_endpoint()}, co);
  std::promise<error_code> result;
  CallOptions o = timeout(1500ms);
  o.wait_for_ready = true;  // keeps the client reconnecting until the deadline
  client.async_call("echo", "x", o, [&](error_code ec, Response) { result.set_value(ec); });
  auto f = result.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::unavailable);
  client.close();
  std::size_t at_close;
  {
    std::lock_guard lock(mu);
    at_close = attempts.size();
  }
  std::this_thread::sleep_for(600ms);  // more than two max delays
  std::lock_guard lock(mu);
  EXPECT_EQ(attempts.size(), at_close) << "no attempt after close()";
  ASSERT_GE(attempts.size(), 5u);
  // Delays between attempt starts: 60, 96, 154, 246, 250... ms, each +- 20 %,
  // plus up to one 5 ms check tick and scheduling slack (upper bound only).
  double base = 60;
  for (std::size_t i = 1; i < attempts.size(); ++i) {
    const double gap = std::chrono::duration<double, std::milli>(attempts[i] - attempts[i - 1]).count();
    const double expect = std::min(base, 250.0);
    EXPECT_GE(gap, expect * 0.8 - 1) << "attempt " << i;
    // Not much later than the curve either; the slack covers a loaded
    // machine (CI runs this beside other tests under a sanitizer), where an
    // accept can be seen a scheduling quantum or two late.
    EXPECT_LE(gap, expect * 1.2 + 5 + 200) << "attempt " << i;
    base *= 1.6;
  }
  down.close();
}

}  // namespace

namespace {

TEST(KeepAlive, PeerThatNeverAnswersHelloIsDroppedAfterTheConnectTimeout) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  ScriptedServer mute(io.io.get_executor(), /*answer_hello=*/false, nullptr);
  ClientOptions co = client_options(30ms);
  co.connect_timeout = 100ms;
  Client client(io.io.get_executor(), timer, {mute.endpoint()}, co);
  std::promise<error_code> result;
  client.async_call("echo", "x", timeout(2s), [&](error_code ec, Response) { result.set_value(ec); });
  // The first handshake is dropped after ~100 ms and retried under the backoff.
  ASSERT_TRUE(wait_until([&] { return mute.accepted() >= 2; }, 5s));
  auto f = result.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::unavailable) << "never ready: unavailable at the deadline";
  client.close();
}

}  // namespace
