// Stream frames a client should not send, on a raw socket: each gets a clear
// END for that stream; the connection and its other calls are undisturbed.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/status.h>
#include <wheelrpc/transport/frame.h>

#include "wire/native/native_stream_frames.h"
#include "support/rpc_fixture.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::Status;
using wheelrpc::rpc::detail::StreamOp;
using wheelrpc::transport::Frame;
using wheelrpc::transport::FrameDecoder;

namespace {

/// A blocking raw socket (5 s receive timeout: no test hangs) that speaks
/// frames: the HELLO (announcing streams), stream frames, and reads frames.
class RawStreamPeer {
 public:
  explicit RawStreamPeer(const asio::ip::tcp::endpoint& ep) : socket_(io_) {
    socket_.connect(ep);
    timeval tv{5, 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    Frame hello;
    hello.header.flags =
        wheelrpc::transport::kFlagEvent | wheelrpc::transport::kFlagRequest | wheelrpc::transport::kFlagTwoWay;
    hello.header.request_id = 1;
    hello.method = "hello";
    hello.attachments = {{"version", "1"}, {"heartbeat_ms", "15000"}, {"stream_window", "65536"}};
    send(hello);
    auto reply = read();
    EXPECT_TRUE(reply && reply->header.is_event());
  }
  void send(const Frame& f) {
    std::string out;
    wheelrpc::transport::encode_frame(f, out);
    asio::write(socket_, asio::buffer(out));
  }
  void send_stream(StreamOp op, std::uint64_t id, std::string payload = {}, std::uint32_t value = 0) {
    auto f = wheelrpc::rpc::detail::make_stream_frame(op, id, true);
    f.payload = std::move(payload);
    f.header.deadline_ms = value;
    send(f);
  }
  /// Opens stream `id` to `method`; true once the server accepted it.
  bool open(std::uint64_t id, const std::string& method) {
    auto f = wheelrpc::rpc::detail::make_stream_frame(StreamOp::open, id, true);
    f.header.flags |= wheelrpc::transport::kFlagTwoWay;
    f.method = method;
    send(f);
    auto answer = read_for(id);
    return answer && answer->header.status == 0 && answer->header.stream_op == 1;
  }
  /// The next frame (heartbeats skipped), or none within 5 s / on close.
  std::optional<Frame> read() {
    for (;;) {
      Frame f;
      std::size_t used = 0;
      const auto r = decoder_.decode(reinterpret_cast<const std::uint8_t*>(buf_.data()), buf_.size(), f, used);
      if (r == FrameDecoder::Result::frame) {
        buf_.erase(0, used);
        if (f.header.is_event() && f.attachments.empty()) continue;
        return f;
      }
      if (r == FrameDecoder::Result::error) return std::nullopt;
      char chunk[4096];
      error_code ec;
      const auto n = socket_.read_some(asio::buffer(chunk), ec);
      if (ec) return std::nullopt;
      buf_.append(chunk, n);
    }
  }
  /// The next frame of `id` (others skipped).
  std::optional<Frame> read_for(std::uint64_t id) {
    for (int i = 0; i < 1000; ++i) {
      auto f = read();
      if (!f || f->header.request_id == id) return f;
    }
    return std::nullopt;
  }
  /// A unary echo on this connection still works.
  bool echo_works(std::uint64_t id) {
    Frame f;
    f.header.flags = wheelrpc::transport::kFlagRequest | wheelrpc::transport::kFlagTwoWay;
    f.header.request_id = id;
    f.method = "echo";
    f.payload = "still here";
    send(f);
    auto reply = read_for(id);
    return reply && reply->header.status == 0 && reply->payload == "still here";
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  FrameDecoder decoder_;
  std::string buf_;
};

struct BadInputFixture : wheelrpc::test::RpcFixture {
  explicit BadInputFixture(ServerOptions so = options())
      : RpcFixture(so, {}, 2, [this](wheelrpc::rpc::Server& s) {
          s.handle_stream("deaf", [this](ServerStream st) {
            std::lock_guard lock(mu);
            held.push_back(std::move(st));
          });
        }) {}
  ~BadInputFixture() {
    std::lock_guard lock(mu);
    held.clear();
  }
  static ServerOptions options() {
    ServerOptions so;
    so.streams.window = 4096;
    so.streams.max_message = 2048;
    return so;
  }
  std::mutex mu;
  std::vector<ServerStream> held;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(StreamBadInput, AMessageForAnUnknownStreamIsAnsweredAndNothingElseIsDisturbed) {
  BadInputFixture fx;
  RawStreamPeer peer(fx.server.local_endpoint());
  ASSERT_TRUE(peer.open(5, "deaf"));
  peer.send_stream(StreamOp::message, 77, "who?");
  auto end = peer.read_for(77);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->header.stream_op, static_cast<std::uint8_t>(StreamOp::end));
  EXPECT_EQ(end->header.status, static_cast<std::uint8_t>(Status::bad_request));
  EXPECT_TRUE(contains(end->payload, "no stream 77")) << end->payload;
  EXPECT_TRUE(peer.echo_works(100));
  EXPECT_EQ(fx.server.stats().unknown_stream_frames, 1u);
  EXPECT_EQ(fx.server.stats().streams.open, 1u) << "the other stream was disturbed";
}

TEST(StreamBadInput, ACreditOverflowEndsThatStream) {
  BadInputFixture fx;
  RawStreamPeer peer(fx.server.local_endpoint());
  ASSERT_TRUE(peer.open(5, "deaf"));
  ASSERT_TRUE(peer.open(6, "deaf"));
  peer.send_stream(StreamOp::credit, 5, {}, 0xffffffffu);
  auto end = peer.read_for(5);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->header.stream_op, static_cast<std::uint8_t>(StreamOp::end));
  EXPECT_NE(end->header.status, 0);
  EXPECT_TRUE(contains(end->payload, "overflows the window")) << end->payload;
  EXPECT_TRUE(peer.echo_works(100));
  EXPECT_EQ(fx.server.stats().streams.ends.protocol, 1u);
  EXPECT_EQ(fx.server.stats().streams.open, 1u);
}

TEST(StreamBadInput, AMessageOverTheLimitEndsThatStream) {
  BadInputFixture fx;
  RawStreamPeer peer(fx.server.local_endpoint());
  ASSERT_TRUE(peer.open(5, "deaf"));
  peer.send_stream(StreamOp::message, 5, std::string(3000, 'x'));
  auto end = peer.read_for(5);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->header.status, static_cast<std::uint8_t>(Status::overloaded));
  EXPECT_TRUE(contains(end->payload, "a message of 3000 bytes exceeds the limit of 2048 bytes")) << end->payload;
  EXPECT_TRUE(peer.echo_works(100));
}

TEST(StreamBadInput, SendingPastTheCreditWindowEndsThatStream) {
  BadInputFixture fx;
  RawStreamPeer peer(fx.server.local_endpoint());
  ASSERT_TRUE(peer.open(5, "deaf"));  // reads nothing: no credit comes back
  for (int i = 0; i < 3; ++i) peer.send_stream(StreamOp::message, 5, std::string(2000, 'x'));
  auto end = peer.read_for(5);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->header.status, static_cast<std::uint8_t>(Status::overloaded));
  EXPECT_TRUE(contains(end->payload, "past its credit window of 4096 bytes")) << end->payload;
  EXPECT_TRUE(peer.echo_works(100));
}

TEST(StreamBadInput, AHalfCloseTwiceEndsThatStream) {
  BadInputFixture fx;
  RawStreamPeer peer(fx.server.local_endpoint());
  ASSERT_TRUE(peer.open(5, "deaf"));
  peer.send_stream(StreamOp::half_close, 5);
  peer.send_stream(StreamOp::half_close, 5);
  auto end = peer.read_for(5);
  ASSERT_TRUE(end);
  EXPECT_NE(end->header.status, 0);
  EXPECT_TRUE(contains(end->payload, "half-closed twice")) << end->payload;
  EXPECT_TRUE(peer.echo_works(100));
}

TEST(StreamBadInput, AnOpenOfAnIdAlreadyOpenIsRefused) {
  BadInputFixture fx;
  RawStreamPeer peer(fx.server.local_endpoint());
  ASSERT_TRUE(peer.open(5, "deaf"));
  EXPECT_FALSE(peer.open(5, "deaf"));
  EXPECT_TRUE(peer.echo_works(100));
}

TEST(StreamBadInput, AnUnknownStreamOpEndsThatStream) {
  BadInputFixture fx;
  RawStreamPeer peer(fx.server.local_endpoint());
  ASSERT_TRUE(peer.open(5, "deaf"));
  auto f = wheelrpc::rpc::detail::make_stream_frame(StreamOp::message, 5, true);
  f.header.stream_op = 42;
  peer.send(f);
  auto end = peer.read_for(5);
  ASSERT_TRUE(end);
  EXPECT_TRUE(contains(end->payload, "unknown stream frame op 42")) << end->payload;
  EXPECT_TRUE(peer.echo_works(100));
}

}  // namespace
