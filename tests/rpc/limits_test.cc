// Server limits against greedy and hostile clients: a method's concurrency
// limit (resource_exhausted, retried elsewhere), the connection limit
// (accepted and closed at once), and a client that sends requests but reads
// no replies (closed once its queued replies pass the write queue bound).
// Every time, a well-behaved client goes on being served.
#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <mutex>
#include <string>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/transport/frame.h>

#include "support/held_responders.h"
#include "support/raw_frames.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Responder;
using wheelrpc::test::RpcFixture;

namespace {

wheelrpc::test::Outcome call(wheelrpc::rpc::Client& client, std::string method, CallOptions o = {}) {
  return wheelrpc::test::call_and_wait(client, std::move(method), "", std::move(o));
}

using Held = wheelrpc::test::HeldResponders;

/// A raw connection that says HELLO and then does as the test says.
class RawPeer {
 public:
  explicit RawPeer(const asio::ip::tcp::endpoint& ep) : socket_(io_) {
    socket_.connect(ep);
    timeval tv{10, 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void send(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }
  void hello(const std::string& heartbeat_ms = "15000") {
    send(wheelrpc::test::hello_bytes(heartbeat_ms));
    std::array<char, 512> buf{};
    socket_.read_some(asio::buffer(buf));  // the HELLO reply
  }
  /// True when the server closed the connection (EOF or reset) within 10 s,
  /// reading (and dropping) whatever comes first.
  bool closed_by_server() {
    std::array<char, 65536> buf{};
    for (;;) {
      error_code ec;
      socket_.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::eof || ec == asio::error::connection_reset) return true;
      if (ec) return false;
    }
  }
  /// Reads until `n` responses (not events) have come, within the socket's
  /// 10 s read timeout; returns how many came.
  int read_responses(int n) {
    std::array<std::uint8_t, 65536> buf{};
    int got = 0;
    while (got < n) {
      error_code ec;
      const auto k = socket_.read_some(asio::buffer(buf), ec);
      if (ec) break;
      pending_.append(reinterpret_cast<const char*>(buf.data()), k);
      for (;;) {
        wheelrpc::transport::Frame f;
        std::size_t used = 0;
        const auto r =
            decoder_.decode(reinterpret_cast<const std::uint8_t*>(pending_.data()), pending_.size(), f, used);
        if (r != wheelrpc::transport::FrameDecoder::Result::frame) break;
        pending_.erase(0, used);
        if (!f.header.is_event()) ++got;
      }
    }
    return got;
  }
  asio::ip::tcp::socket& socket() { return socket_; }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  std::string pending_;
  wheelrpc::transport::FrameDecoder decoder_;
};

}  // namespace

TEST(Limits, AMethodAtItsConcurrencyLimitRefusesAtOnceWithResourceExhausted) {
  Held held;
  wheelrpc::rpc::MethodOptions limited;
  limited.max_concurrency = 2;
  RpcFixture fx({}, {}, 2, [&](wheelrpc::rpc::Server& s) {
    s.handle(
        "hold", [&](wheelrpc::rpc::Request, Responder r) { held.add(std::move(r)); }, limited);
  });
  CallOptions o;
  o.timeout = 20s;
  o.retries = 0;
  auto a = wheelrpc::test::start(*fx.client, "hold", "", o);
  auto b = wheelrpc::test::start(*fx.client, "hold", "", o);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 2; }));
  const auto refused = call(*fx.client, "hold", o);
  EXPECT_EQ(refused.ec, errc::resource_exhausted);
  EXPECT_NE(refused.response.error_message.find("limit of 2 calls at once"), std::string::npos)
      << refused.response.error_message;
  EXPECT_EQ(fx.server.stats().refused_overloaded, 1u);
  EXPECT_FALSE(call(*fx.client, "echo").ec) << "other methods are not limited";
  held.release_all();
  EXPECT_FALSE(a.get().ec);
  EXPECT_FALSE(b.get().ec);
  // The slots are back once the handlers let go of their requests.
  auto c = wheelrpc::test::start(*fx.client, "hold", "", o);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 1; }));
  held.release_all();
  EXPECT_FALSE(c.get().ec);
}

TEST(Limits, ResourceExhaustedIsRetriedOnAnotherProvider) {
  Held held;
  wheelrpc::test::IoThreads threads(2);
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::rpc::MethodOptions one;
  one.max_concurrency = 1;
  wheelrpc::rpc::Server busy(threads.io.get_executor(), timer), spare(threads.io.get_executor(), timer);
  busy.handle(
      "work", [&](wheelrpc::rpc::Request, Responder r) { held.add(std::move(r)); }, one);
  spare.handle(
      "work", [](wheelrpc::rpc::Request, Responder r) { r.reply("spare"); }, one);
  ASSERT_FALSE(busy.listen(wheelrpc::test::loopback0()));
  ASSERT_FALSE(spare.listen(wheelrpc::test::loopback0()));
  wheelrpc::rpc::Client only_busy(threads.io.get_executor(), timer, {busy.local_endpoint()});
  wheelrpc::rpc::ClientOptions rr;
  rr.load_balance = wheelrpc::rpc::LoadBalance::round_robin;
  wheelrpc::rpc::Client both(threads.io.get_executor(), timer, {busy.local_endpoint(), spare.local_endpoint()}, rr);
  CallOptions o;
  o.timeout = 20s;
  auto holding = wheelrpc::test::start(only_busy, "work", "", o);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 1; }));
  // Both connections ready first, so round robin sends first attempts to each in turn.
  both.connect();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] {
    const auto ps = both.providers();
    return ps.size() == 2 && ps[0].ready && ps[1].ready;
  }));
  // Whichever provider the first attempt goes to, the call ends on the spare.
  for (int i = 0; i < 4; ++i) {
    const auto out = call(both, "work", o);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "spare");
  }
  EXPECT_GE(busy.stats().refused_overloaded, 1u);
  held.release_all();
  EXPECT_FALSE(holding.get().ec);
  only_busy.close();
  both.close();
  busy.stop();
  spare.stop();
  threads.stop();
}

TEST(Limits, ConnectionsOverTheLimitAreClosedAtOnceAndOthersAreServed) {
  wheelrpc::rpc::ServerOptions so;
  so.limits.max_connections = 2;
  RpcFixture fx(so);  // its client holds no connection until its first call
  RawPeer first(fx.server.local_endpoint());
  first.hello();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().connections == 1; }));
  ASSERT_FALSE(call(*fx.client, "echo").ec);  // the second connection
  RawPeer third(fx.server.local_endpoint());  // accepted by the kernel, then closed by the server
  EXPECT_TRUE(third.closed_by_server());
  EXPECT_EQ(fx.server.stats().refused_connections, 1u);
  EXPECT_FALSE(call(*fx.client, "echo").ec) << "the client within the limit is served on";
  EXPECT_EQ(fx.server.stats().connections, 2u);
}

TEST(Limits, AClientThatReadsNoRepliesIsClosedOnceItsRepliesPassTheQueueBound) {
  wheelrpc::rpc::ServerOptions so;
  so.channel.max_write_queue_bytes = 1 << 20;  // 1 MiB of replies queued at most
  RpcFixture fx(so);
  RawPeer greedy(fx.server.local_endpoint());
  greedy.hello();
  // Tiny requests for 64 KiB replies, and never a read: after the socket
  // buffers fill, the replies queue on the server until the bound.
  const std::string payload(64 * 1024, 'x');
  std::string burst;
  for (std::uint64_t id = 2; id < 2 + 64; ++id) {
    burst += wheelrpc::test::request_bytes(id, "echo", payload);
  }
  error_code ec;
  for (int i = 0; i < 200 && !ec; ++i) asio::write(greedy.socket(), asio::buffer(burst), ec);  // up to 800 MiB asked
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().slow_reader_closes == 1; }, 30s))
      << "replies queued: the server never closed the client that reads none";
  EXPECT_TRUE(greedy.closed_by_server());
  EXPECT_FALSE(call(*fx.client, "echo").ec) << "a well-behaved client is served on";
}

TEST(Limits, AConnectionAtItsRequestLimitIsNotReadUntilAReplyGoesOut) {
  Held held;
  wheelrpc::rpc::ServerOptions so;
  so.limits.max_requests_per_connection = 3;
  RpcFixture fx(so, {}, 2, [&](wheelrpc::rpc::Server& s) {
    s.handle("hold", [&](wheelrpc::rpc::Request, Responder r) { held.add(std::move(r)); });
  });
  RawPeer greedy(fx.server.local_endpoint());
  greedy.hello();
  std::string burst;
  for (std::uint64_t id = 2; id < 2 + 10; ++id) {
    burst += wheelrpc::test::request_bytes(id, "hold", "");
  }
  greedy.send(burst);  // ten requests in one write: the server reads them in one go
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().read_pauses >= 1; }));
  EXPECT_EQ(held.size(), 3u);
  EXPECT_EQ(fx.server.stats().requests, 3u) << "the rest wait unread";
  EXPECT_FALSE(call(*fx.client, "echo").ec) << "another connection is served meanwhile";
  // Each reply lets one more request in, never more than three at once.
  for (int answered = 0; answered < 10; ++answered) {
    ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == std::min<std::size_t>(3, 10 - answered); }))
        << answered << " answered";
    EXPECT_EQ(fx.server.stats().requests, std::min<std::uint64_t>(10, 3 + answered) + 1)  // + the echo
        << answered << " answered";
    held.release_one();
  }
  EXPECT_EQ(greedy.read_responses(10), 10);
  EXPECT_GE(fx.server.stats().read_pauses, 7u);
}

TEST(Limits, AConnectionPausedAtItsRequestLimitIsNotClosedAsIdle) {
  Held held;
  wheelrpc::rpc::ServerOptions so;
  so.limits.max_requests_per_connection = 1;
  so.keepalive.heartbeat = 100ms;  // idle connections closed after 300 ms
  RpcFixture fx(so, {}, 2, [&](wheelrpc::rpc::Server& s) {
    s.handle("hold", [&](wheelrpc::rpc::Request, Responder r) { held.add(std::move(r)); });
  });
  RawPeer busy(fx.server.local_endpoint());
  busy.hello("100");
  busy.send(wheelrpc::test::request_bytes(2, "hold", "") + wheelrpc::test::request_bytes(3, "hold", ""));
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().read_pauses == 1 && held.size() == 1; }));
  // A connection made later, and idle: once the CloseTimerTask closes it,
  // it has looked past the paused one's idle time too.
  RawPeer idle(fx.server.local_endpoint());
  idle.hello("100");
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().idle_closes >= 1; }, 30s));
  EXPECT_TRUE(idle.closed_by_server());
  EXPECT_EQ(fx.server.stats().idle_closes, 1u) << "the paused connection is busy, not idle";
  held.release_all();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 1; })) << "the second request is read";
  held.release_all();
  EXPECT_EQ(busy.read_responses(2), 2);
}

TEST(Limits, MemoryFreedByClosedConnectionsIsGivenBackOnceAfterAClose) {
  RpcFixture fx;
  ASSERT_FALSE(call(*fx.client, "echo").ec);
  EXPECT_EQ(fx.server.stats().memory_returns, 0u) << "nothing closed yet";
  {
    RawPeer a(fx.server.local_endpoint()), b(fx.server.local_endpoint());
    a.hello();
    b.hello();
  }  // both close: one trim, about a second later, covers the two
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().memory_returns == 1; }, 30s));
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().connections == 1; }));
  EXPECT_EQ(fx.server.stats().memory_returns, 1u);
}

TEST(Limits, ReturnMemoryOffTrimsNothing) {
  wheelrpc::rpc::ServerOptions off;
  off.return_memory = false;
  RpcFixture quiet(off), witness;
  {
    RawPeer a(quiet.server.local_endpoint()), b(witness.server.local_endpoint());
    a.hello();
    b.hello();
  }
  // The witness trims about a second after its close: by then the other
  // would have too.
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return witness.server.stats().memory_returns == 1; }, 30s));
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return quiet.server.stats().connections == 0; }));
  EXPECT_EQ(quiet.server.stats().memory_returns, 0u);
}
