// Compression on the gRPC wire (docs/compression.md, "On the gRPC wire").
// The server, seen from a raw HTTP/2 client (support/h2_client.h): a reply
// or a stream's message is compressed only when the server's option or the
// handler asks, never because the request came compressed (gRPC's interop
// client_compressed_unary checks it), and a message compressed after
// HEADERS that name no algorithm goes uncompressed. The client: a call or a
// stream that chose zstd or lz4 goes gzip-compressed (support/h2_server.h
// shows the headers), and the client warns of it once.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>
#include <vector>

#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/server_stream.h>
#include <zlib.h>

#include "support/grpc_test_server.h"
#include "support/h2_client.h"
#include "support/h2_server.h"
#include "support/log_capture.h"
#include "support/rpc_fixture.h"
#include "wire/grpc/grpc_client_compression.h"

namespace {

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::ServerStream;
using wheelrpc::test::grpc_frame;
using wheelrpc::test::grpc_request_headers;
using wheelrpc::test::H2Client;
using wheelrpc::test::H2Stream;
using wheelrpc::test::RpcFixture;
using wheelrpc::transport::Compression;

/// `bytes` as a gzip member.
std::string gzip(std::string_view bytes) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// The compressed flag of each gRPC message of a stream's DATA.
std::vector<bool> message_flags(const H2Stream& s) {
  std::vector<bool> flags;
  std::size_t pos = 0;
  while (pos + 5 <= s.data.size()) {
    flags.push_back(s.data[pos] == '\1');
    const auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s.data[i])); };
    pos += 5 + (b(pos + 1) << 24 | b(pos + 2) << 16 | b(pos + 3) << 8 | b(pos + 4));
  }
  return flags;
}

const std::string kLarge(50000, 'g');  // compressible, and over the 1 KiB threshold

/// Methods whose handlers ask for compression themselves.
void register_asking_methods(wheelrpc::rpc::Server& server) {
  server.handle("/test.Ask/Gzip", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
    r.set_compression(Compression::gzip);
    r.reply(std::move(req.payload));
  });
  // A small first message (below the threshold: uncompressed, so the HEADERS
  // name no algorithm), then gzip for a large one.
  server.handle_stream("/test.Ask/Late", [](ServerStream s) {
    auto stream = std::make_shared<ServerStream>(std::move(s));
    stream->async_write("hi", [stream](boost::system::error_code ec) {
      if (ec) return;
      stream->set_compression(Compression::gzip);
      stream->async_write(std::string(kLarge), [stream](boost::system::error_code ec2) {
        if (!ec2) stream->finish();
      });
    });
  });
}

ServerOptions replying_with(std::optional<Compression> reply) {
  ServerOptions o;
  o.compression.reply = reply;
  return o;
}

// ---- the server ---------------------------------------------------------------

TEST(GrpcServerCompression, AGzipRequestIsAnsweredUncompressedWhenNothingAsksForCompression) {
  wheelrpc::test::GrpcFixture f;
  H2Client c(f.port());
  // The client decodes gzip and sent gzip: still, nothing asked for a compressed reply.
  const auto id = c.request(
      grpc_request_headers("/test.Echo/Echo", {{"grpc-encoding", "gzip"}, {"grpc-accept-encoding", "identity,gzip"}}),
      grpc_frame(gzip(kLarge), true));
  ASSERT_TRUE(c.wait_closed(id));
  const H2Stream& s = c.stream(id);
  ASSERT_EQ(s.grpc_status(), 0) << s.grpc_message();
  EXPECT_EQ(message_flags(s), std::vector<bool>{false});
  EXPECT_EQ(s.messages(), std::vector<std::string>{kLarge});
  EXPECT_EQ(s.header("grpc-encoding").value_or("identity"), "identity");
}

TEST(GrpcServerCompression, TheServersReplyOptionCompressesRepliesTheClientDecodes) {
  wheelrpc::test::GrpcFixture f(replying_with(Compression::gzip));
  H2Client c(f.port());
  const auto id = c.request(grpc_request_headers("/test.Echo/Echo", {{"grpc-accept-encoding", "identity,gzip"}}),
                            grpc_frame(kLarge));
  ASSERT_TRUE(c.wait_closed(id));
  const H2Stream& s = c.stream(id);
  ASSERT_EQ(s.grpc_status(), 0) << s.grpc_message();
  EXPECT_EQ(message_flags(s), std::vector<bool>{true});
  EXPECT_EQ(s.header("grpc-encoding"), "gzip");
  // A client that decodes only identity gets it uncompressed all the same.
  const auto plain =
      c.request(grpc_request_headers("/test.Echo/Echo", {{"grpc-accept-encoding", "identity"}}), grpc_frame(kLarge));
  ASSERT_TRUE(c.wait_closed(plain));
  EXPECT_EQ(message_flags(c.stream(plain)), std::vector<bool>{false});
}

TEST(GrpcServerCompression, AHandlerThatAsksCompressesItsReply) {
  RpcFixture f({}, {}, 2, register_asking_methods);
  H2Client c(f.server.local_endpoint().port());
  const auto id = c.request(grpc_request_headers("/test.Ask/Gzip", {{"grpc-accept-encoding", "identity,gzip"}}),
                            grpc_frame(kLarge));
  ASSERT_TRUE(c.wait_closed(id));
  const H2Stream& s = c.stream(id);
  ASSERT_EQ(s.grpc_status(), 0) << s.grpc_message();
  EXPECT_EQ(message_flags(s), std::vector<bool>{true});
  EXPECT_EQ(s.header("grpc-encoding"), "gzip");
}

TEST(GrpcServerCompression, AStreamOfCompressedMessagesIsAnsweredUncompressedWhenNothingAsks) {
  wheelrpc::test::GrpcFixture f;
  H2Client c(f.port());
  const auto id = c.request(
      grpc_request_headers("/test.Echo/Chat", {{"grpc-encoding", "gzip"}, {"grpc-accept-encoding", "identity,gzip"}}),
      grpc_frame(gzip(kLarge), true) + grpc_frame(gzip(kLarge), true));
  ASSERT_TRUE(c.wait_closed(id));
  const H2Stream& s = c.stream(id);
  ASSERT_EQ(s.grpc_status(), 0) << s.grpc_message();
  EXPECT_EQ(message_flags(s), (std::vector<bool>{false, false}));
  EXPECT_EQ(s.messages(), (std::vector<std::string>{kLarge, kLarge}));
  EXPECT_EQ(s.header("grpc-encoding").value_or("identity"), "identity");
}

TEST(GrpcServerCompression, AMessageCompressedAfterHeadersThatNameNoAlgorithmGoesUncompressed) {
  RpcFixture f({}, {}, 2, register_asking_methods);
  H2Client c(f.server.local_endpoint().port());
  const auto id =
      c.request(grpc_request_headers("/test.Ask/Late", {{"grpc-accept-encoding", "identity,gzip"}}), grpc_frame("go"));
  ASSERT_TRUE(c.wait_closed(id));
  const H2Stream& s = c.stream(id);
  ASSERT_EQ(s.grpc_status(), 0) << s.grpc_message();
  // The HEADERS went with "hi", naming no algorithm: a gRPC client would
  // refuse a message flagged compressed after them.
  EXPECT_EQ(s.header("grpc-encoding").value_or("identity"), "identity");
  EXPECT_EQ(message_flags(s), (std::vector<bool>{false, false}));
  EXPECT_EQ(s.messages(), (std::vector<std::string>{"hi", kLarge}));
}

// ---- the client ---------------------------------------------------------------

TEST(GrpcClientCompression, OnlyGzipAndDeflateAreCarriedAndTheOthersFallBackToGzip) {
  using wheelrpc::rpc::detail::grpc_call_compression;
  EXPECT_EQ(grpc_call_compression(Compression::identity), Compression::identity);
  EXPECT_EQ(grpc_call_compression(Compression::gzip), Compression::gzip);
  EXPECT_EQ(grpc_call_compression(Compression::deflate), Compression::deflate);
  EXPECT_EQ(grpc_call_compression(Compression::zstd), Compression::gzip);
  EXPECT_EQ(grpc_call_compression(Compression::lz4), Compression::gzip);
  // The fallback's level is gzip's own default, not zstd's 19 clamped.
  EXPECT_EQ(wheelrpc::rpc::detail::grpc_call_compression_level(Compression::zstd, Compression::gzip, 19), 0);
  EXPECT_EQ(wheelrpc::rpc::detail::grpc_call_compression_level(Compression::gzip, Compression::gzip, 9), 9);
  // Once per object the client's transports share, for as long as it lives.
  auto one = std::make_shared<int>(1);
  auto two = std::make_shared<int>(2);
  EXPECT_TRUE(wheelrpc::rpc::detail::first_compression_fallback(one));
  EXPECT_FALSE(wheelrpc::rpc::detail::first_compression_fallback(one));
  EXPECT_TRUE(wheelrpc::rpc::detail::first_compression_fallback(two));
  one.reset();
  EXPECT_TRUE(wheelrpc::rpc::detail::first_compression_fallback(std::make_shared<int>(3)));
}

TEST(GrpcClientCompression, ACallThatChoseZstdOrLz4GoesGzipAndTheClientWarnsOnce) {
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  wheelrpc::test::H2Server peer;  // records the request headers
  ASSERT_NE(peer.port(), 0);
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads(1);
  ClientOptions co;
  co.protocol = wheelrpc::rpc::WireProtocol::grpc;
  co.call_defaults.compression = Compression::zstd;
  {
    wheelrpc::rpc::Client client(threads.io.get_executor(), timer,
                                 {{boost::asio::ip::make_address("127.0.0.1"), peer.port()}}, co);
    for (const auto c : {Compression::zstd, Compression::lz4, Compression::zstd}) {
      CallOptions o;
      o.compression = c;
      o.compression_level = 19;
      // The peer echoes the message as it came, flagged compressed, with no
      // grpc-encoding: the call itself may fail; its headers are what counts.
      wheelrpc::test::call_and_wait(client, "/test.Echo/Echo", kLarge, o, 10s);
    }
    client.close();
  }
  const auto requests = peer.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& fields : requests) {
    std::optional<std::string> encoding;
    for (const auto& field : fields) {
      if (field.name == "grpc-encoding") encoding = field.value;
    }
    EXPECT_EQ(encoding, "gzip");
  }
  EXPECT_EQ(log.count("is not gRPC's"), 1u);
  threads.stop();
}

TEST(GrpcClientCompression, CallsAndStreamsThatChoseZstdArriveGzipCompressedAtAWheelrpcServer) {
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  ClientOptions co;
  co.protocol = wheelrpc::rpc::WireProtocol::grpc;
  co.call_defaults.compression = Compression::zstd;
  auto state = std::make_shared<wheelrpc::test::GrpcTestState>();
  RpcFixture f({}, co, 2, [state](wheelrpc::rpc::Server& s) { wheelrpc::test::register_grpc_test_methods(s, state); });
  for (int i = 0; i < 3; ++i) {
    const auto out = wheelrpc::test::call_and_wait(*f.client, "/test.Echo/Echo", kLarge);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, kLarge);
  }
  // A stream: its messages too (the stream was made for zstd).
  std::promise<std::pair<boost::system::error_code, ClientStream>> opened;
  f.client->async_open_stream("/test.Echo/Chat", CallOptions{}, [&](boost::system::error_code ec, ClientStream s) {
    opened.set_value({ec, std::move(s)});
  });
  auto [ec, stream] = opened.get_future().get();
  ASSERT_FALSE(ec) << ec.message();
  std::promise<boost::system::error_code> wrote;
  stream.async_write(std::string(kLarge), [&](boost::system::error_code e) { wrote.set_value(e); });
  ASSERT_FALSE(wrote.get_future().get());
  std::promise<std::optional<std::string>> got;
  stream.async_read([&](boost::system::error_code, std::optional<std::string> m) { got.set_value(std::move(m)); });
  EXPECT_EQ(got.get_future().get(), kLarge);
  stream.cancel();
  std::uint64_t unary = 0, messages = 0;
  for (const auto& m : f.server.method_stats()) {
    if (m.method == "/test.Echo/Echo") unary = m.received.compressed;
    if (m.method == "/test.Echo/Chat") messages = m.received.compressed;
  }
  EXPECT_EQ(unary, 3u) << "the server decodes gzip and deflate only on this wire: these came as one of them";
  EXPECT_EQ(messages, 1u);
  EXPECT_EQ(log.count("is not gRPC's"), 1u);
  state->release_all();
}

}  // namespace
