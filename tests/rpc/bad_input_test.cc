// Garbage on the port: the server closes that connection (counted, logged) and
// goes on serving everyone else. Never a crash, a hang or an allocation from
// an unchecked length.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/frame.h>

#include "support/log_capture.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;
using wheelrpc::test::RpcFixture;
using wheelrpc::transport::Frame;

namespace {

// A blocking raw socket with a receive timeout, so no test can hang.
class RawPeer {
 public:
  explicit RawPeer(const asio::ip::tcp::endpoint& ep) : socket_(io_) {
    socket_.connect(ep);
    timeval tv{5, 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void send(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }
  /// "127.0.0.1:PORT": this end, as the server sees its peer.
  std::string local_text() const {
    const auto ep = socket_.local_endpoint();
    return ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  void send_hello() {
    Frame hello;
    hello.header.flags =
        wheelrpc::transport::kFlagEvent | wheelrpc::transport::kFlagRequest | wheelrpc::transport::kFlagTwoWay;
    hello.header.request_id = 1;
    hello.method = "hello";
    hello.attachments = {{"version", "1"}, {"heartbeat_ms", "15000"}};
    std::string out;
    wheelrpc::transport::encode_frame(hello, out);
    send(out);
    std::array<char, 512> buf{};
    socket_.read_some(asio::buffer(buf));  // the HELLO reply
  }
  /// True when the server closed the connection (EOF or reset) within 5 s.
  bool closed_by_server() {
    std::array<char, 4096> buf{};
    for (;;) {
      error_code ec;
      socket_.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::eof || ec == asio::error::connection_reset) return true;
      if (ec) return false;  // timeout (EAGAIN) or another error: not closed
    }
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
};

std::string header(std::uint16_t magic, std::uint8_t version, std::uint32_t body_len) {
  std::string h(wheelrpc::transport::kHeaderSize, '\0');
  h[0] = static_cast<char>(magic >> 8);
  h[1] = static_cast<char>(magic & 0xff);
  h[2] = static_cast<char>(version);
  h[3] = 0x03;  // request, two-way
  for (int i = 0; i < 4; ++i) h[20 + static_cast<std::size_t>(i)] = static_cast<char>(body_len >> (24 - 8 * i));
  return h;
}

using Stats = wheelrpc::rpc::ServerStats;

// Sends `bytes` on a raw connection and checks: the server closes it, counts
// it under its reason (`counter`, and in protocol_errors), logs one warning
// on "wheelrpc.rpc" naming the peer, the reason's name and `expect_log`, and
// goes on serving.
void expect_closed_and_server_healthy(RpcFixture& fx, const std::string& bytes, bool hello_first,
                                      const std::string& expect_log, std::uint64_t Stats::*counter,
                                      const char* reason_name) {
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  const auto before = wheelrpc::transport::channel_counters();
  RawPeer peer(fx.server.local_endpoint());
  const std::string peer_text = "peer=" + peer.local_text();
  if (hello_first) peer.send_hello();
  peer.send(bytes);
  EXPECT_TRUE(peer.closed_by_server());
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().*counter == 1; }))
      << "not counted under " << reason_name;
  EXPECT_EQ(fx.server.stats().protocol_errors, 1u);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] {
    for (const auto& line : log.lines()) {
      if (line.find("[warning]") != std::string::npos && line.find(peer_text) != std::string::npos &&
          line.find(std::string("(") + reason_name + ")") != std::string::npos &&
          line.find(expect_log) != std::string::npos)
        return true;
    }
    return false;
  })) << "expected a warning naming "
      << peer_text << ", (" << reason_name << ") and '" << expect_log << "'";
  EXPECT_TRUE(
      wheelrpc::test::wait_until([&] { return wheelrpc::transport::channel_counters().closed >= before.closed + 1; }));
  EXPECT_EQ(fx.client->call("echo", "still serving").payload, "still serving");
}

TEST(BadInput, WrongMagic) {
  RpcFixture fx;
  expect_closed_and_server_healthy(fx, header(0xcafe, 1, 0), true, "magic", &Stats::bad_magic, "bad_magic");
}

TEST(BadInput, UnknownVersion) {
  RpcFixture fx;
  expect_closed_and_server_healthy(fx, header(wheelrpc::transport::kMagic, 9, 0), true, "version", &Stats::bad_version,
                                   "bad_version");
}

TEST(BadInput, OversizeBodyIsRejectedFromTheHeaderAlone) {
  RpcFixture fx;
  // 4 GiB - 1 announced, nothing sent after: rejected before any allocation.
  expect_closed_and_server_healthy(fx, header(wheelrpc::transport::kMagic, 1, 0xffffffffu), true, "exceeds",
                                   &Stats::oversize_frames, "oversize_frame");
}

TEST(BadInput, MalformedBody) {
  RpcFixture fx;
  std::string bytes = header(wheelrpc::transport::kMagic, 1, 3);
  bytes += std::string("\xff\x00\x00", 3);  // method length 255 in a 3-byte body
  expect_closed_and_server_healthy(fx, bytes, true, "", &Stats::malformed_frames, "malformed_frame");
  EXPECT_TRUE(wheelrpc::test::wait_until([] { return wheelrpc::transport::channel_counters().bad_input >= 1; }));
}

TEST(BadInput, GarbageInsteadOfHello) {
  RpcFixture fx;
  std::string garbage;
  for (int i = 0; i < 1000; ++i) garbage.push_back(static_cast<char>((i * 131) ^ 0x5a));
  expect_closed_and_server_healthy(fx, garbage, false, "", &Stats::bad_magic, "bad_magic");
}

TEST(BadInput, RequestBeforeHelloIsAProtocolError) {
  RpcFixture fx;
  Frame req;
  req.header.flags = wheelrpc::transport::kFlagRequest | wheelrpc::transport::kFlagTwoWay;
  req.method = "echo";
  std::string bytes;
  wheelrpc::transport::encode_frame(req, bytes);
  expect_closed_and_server_healthy(fx, bytes, false, "HELLO", &Stats::no_hello, "no_hello");
}

TEST(BadInput, TruncatedFrameThenCloseIsHandled) {
  RpcFixture fx;
  const auto before = fx.server.stats();
  {
    RawPeer peer(fx.server.local_endpoint());
    peer.send_hello();
    peer.send(header(wheelrpc::transport::kMagic, 1, 100) + "only part of the body");
  }  // closes mid-frame
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().connections <= before.connections; }));
  EXPECT_EQ(fx.client->call("echo", "fine").payload, "fine");
}

TEST(BadInput, SilentConnectionIsClosedAfterTheHelloTimeout) {
  wheelrpc::rpc::ServerOptions so;
  so.keepalive.hello_timeout = 100ms;
  RpcFixture fx(so);
  // Read before the connect: the server's timeout starts at its accept, which
  // may come before this thread gets to run again after connecting.
  const auto t0 = std::chrono::steady_clock::now();
  RawPeer peer(fx.server.local_endpoint());
  EXPECT_TRUE(peer.closed_by_server());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().hello_timeouts == 1; }));
  EXPECT_EQ(fx.server.stats().protocol_errors, 1u);
}

TEST(BadInput, WarningsAreRateLimitedButEveryConnectionIsCounted) {
  RpcFixture fx;
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    RawPeer peer(fx.server.local_endpoint());
    peer.send(header(0xcafe, 1, 0));
    EXPECT_TRUE(peer.closed_by_server());
  }
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().bad_magic == 20; }));
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count();
  // One line a second at most, however fast or slow the machine is.
  EXPECT_GE(log.count("closed for bad input"), 1u);
  EXPECT_LE(log.count("closed for bad input"), static_cast<std::size_t>(seconds) + 1);
  EXPECT_LT(log.count("closed for bad input"), 20u);
}

}  // namespace
