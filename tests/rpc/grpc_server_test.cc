// The server's gRPC over HTTP/2 (rpc/src/grpc_server_connection.*), seen from
// a raw HTTP/2 client (support/h2_client.h) against a real Server on port 0:
// unary calls, statuses, metadata, deadlines, cancellation, refusals,
// compression, the message size limit, the three kinds of streams, flow
// control, the two-step GOAWAY of a graceful shutdown, and the native
// protocol on the same port.
#include <gtest/gtest.h>

#include <future>

#include <nghttp2/nghttp2.h>
#include <zlib.h>

#include "support/compression_bombs.h"
#include "support/grpc_test_server.h"
#include "support/h2_client.h"
#include "support/h2_frames.h"
#include "support/wait.h"

namespace {

using namespace std::chrono_literals;
using wheelrpc::test::GrpcFixture;
using wheelrpc::test::grpc_frame;
using wheelrpc::test::grpc_request_headers;
using wheelrpc::test::H2Client;
using wheelrpc::test::H2ClientOptions;
using wheelrpc::test::H2Headers;
using wheelrpc::test::kSpecialMessage;

constexpr std::uint32_t kMaxBody = 1u << 20;

wheelrpc::rpc::ServerOptions server_options() {
  wheelrpc::rpc::ServerOptions o;
  o.channel.max_body = kMaxBody;
  return o;
}

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

class GrpcServer : public ::testing::Test {
 protected:
  GrpcFixture f{server_options()};
};

TEST_F(GrpcServer, AUnaryCallGetsStatus200AGrpcContentTypeItsMessageAndTrailersWithStatus0) {
  H2Client c(f.port());
  ASSERT_TRUE(c.connected());
  const auto id = c.grpc_call("/test.Echo/Echo", "hello");
  ASSERT_TRUE(c.wait_closed(id));
  const auto& s = c.stream(id);
  EXPECT_EQ(s.header(":status"), "200");
  EXPECT_EQ(s.header("content-type"), "application/grpc");
  EXPECT_EQ(s.messages(), std::vector<std::string>{"hello"});
  EXPECT_EQ(s.trailer("grpc-status"), "0") << "the status comes in trailers, after the message";
  EXPECT_FALSE(s.reset);
  EXPECT_EQ(s.close_code, NGHTTP2_NO_ERROR);
  // The same connection carries the next call.
  const auto again = c.grpc_call("/test.Echo/Echo", std::string(100000, 'x'));
  ASSERT_TRUE(c.wait_closed(again));
  EXPECT_EQ(c.stream(again).messages(), std::vector<std::string>{std::string(100000, 'x')});
}

TEST_F(GrpcServer, AnErrorStatusComesWithItsMessagePercentEncoded) {
  H2Client c(f.port());
  const auto id = c.grpc_call("/test.Echo/Fail", "x");
  ASSERT_TRUE(c.wait_closed(id));
  const auto& s = c.stream(id);
  EXPECT_EQ(s.header(":status"), "200");
  EXPECT_EQ(s.grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::not_found));
  EXPECT_EQ(s.header("grpc-message"),
            "%09%0Atest with whitespace%0D%0Aand Unicode BMP %E2%98%BA and non-BMP %F0%9F%98%88%09%0A");
  EXPECT_EQ(s.grpc_message(), kSpecialMessage);
  EXPECT_TRUE(s.messages().empty());
}

TEST_F(GrpcServer, BinaryMetadataIsDecodedForTheHandlerAndEncodedBackInBase64) {
  const std::string token("\0\x01\xff\xfe binary \x80", 13);
  H2Client c(f.port());
  // Unpadded base64, as gRPC allows: "AAH//iBiaW5hcnkggA" is the token.
  const auto id = c.grpc_call("/test.Echo/Echo", "m", {{"x-token-bin", "AAH//iBiaW5hcnkggA"}});
  ASSERT_TRUE(c.wait_closed(id));
  ASSERT_EQ(c.stream(id).grpc_status(), 0) << c.stream(id).grpc_message();
  {
    std::lock_guard lock(f.state->mu);
    ASSERT_EQ(f.state->tokens.size(), 1u);
    EXPECT_EQ(f.state->tokens[0], token);
  }
  EXPECT_EQ(c.stream(id).header("x-reply-bin"), "AAH//iBiaW5hcnkggA==");
  // Not base64: the call is refused, the handler never sees it.
  const auto bad = c.grpc_call("/test.Echo/Echo", "m", {{"x-token-bin", "not base64!"}});
  ASSERT_TRUE(c.wait_closed(bad));
  EXPECT_EQ(c.stream(bad).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::invalid_argument));
  std::lock_guard lock(f.state->mu);
  EXPECT_EQ(f.state->tokens.size(), 1u);
}

TEST_F(GrpcServer, AGrpcTimeoutShorterThanTheHandlerEndsTheCallDeadlineExceeded) {
  H2Client c(f.port());
  const auto t0 = std::chrono::steady_clock::now();
  const auto id = c.grpc_call("/test.Echo/Hold", "x", {{"grpc-timeout", "200m"}});
  ASSERT_TRUE(c.wait_closed(id, 30s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);
  EXPECT_EQ(c.stream(id).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::deadline_exceeded));
  EXPECT_EQ(f.state->held_count(), 1u);  // the handler had it and never answered
}

TEST_F(GrpcServer, RstStreamCancelMakesTheHandlersServerContextCancelled) {
  H2Client c(f.port());
  const auto id = c.grpc_call("/test.Echo/Hold", "x");
  ASSERT_TRUE(c.wait([&] { return f.state->held_count() == 1; }));
  const auto ctx = f.state->held_at(0);
  EXPECT_FALSE(ctx->cancelled());
  c.reset(id, NGHTTP2_CANCEL);
  EXPECT_TRUE(c.wait([&] { return ctx->cancelled(); }));
  // The reply is dropped; the connection carries the next call.
  ctx->responder().reply("late");
  const auto next = c.grpc_call("/test.Echo/Echo", "after");
  ASSERT_TRUE(c.wait_closed(next));
  EXPECT_EQ(c.stream(next).messages(), std::vector<std::string>{"after"});
  EXPECT_TRUE(c.stream(id).data.empty());
}

TEST_F(GrpcServer, AWrongContentTypeIsHttp415) {
  H2Client c(f.port());
  H2Headers h = grpc_request_headers("/test.Echo/Echo");
  h[4].second = "application/json";
  const auto id = c.request(h, grpc_frame("x"));
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).header(":status"), "415");
  // "application/grpcfoo" is no gRPC content-type either; "+proto" is.
  h[4].second = "application/grpcfoo";
  const auto foo = c.request(h, grpc_frame("x"));
  h[4].second = "application/grpc+proto";
  const auto proto = c.request(h, grpc_frame("x"));
  ASSERT_TRUE(c.wait_closed(foo));
  ASSERT_TRUE(c.wait_closed(proto));
  EXPECT_EQ(c.stream(foo).header(":status"), "415");
  EXPECT_EQ(c.stream(proto).header(":status"), "200");
  EXPECT_EQ(c.stream(proto).grpc_status(), 0);
  // A client still sending gets the answer too, then RST_STREAM NO_ERROR:
  // it need not send the rest (RFC 9113 8.1).
  h[4].second = "text/plain";
  const auto open = c.request(h, grpc_frame("x"), false);
  ASSERT_TRUE(c.wait_closed(open));
  EXPECT_EQ(c.stream(open).header(":status"), "415");
  EXPECT_TRUE(c.stream(open).reset);
  EXPECT_EQ(c.stream(open).reset_code, NGHTTP2_NO_ERROR);
}

TEST_F(GrpcServer, ARequestOtherThanPostIsHttp405) {
  H2Client c(f.port());
  H2Headers h = grpc_request_headers("/test.Echo/Echo");
  h[0].second = "GET";
  const auto id = c.request(h, {}, true);
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).header(":status"), "405");
}

TEST_F(GrpcServer, AnUnknownMethodIsUnimplemented) {
  H2Client c(f.port());
  const auto id = c.grpc_call("/test.Echo/Nope", "x");
  const auto malformed = c.grpc_call("/nopath", "x");  // no "/package.Service/Method"
  const auto no_slash = c.grpc_call("nopath", "x");    // no HTTP/2 path at all: nghttp2 resets it
  ASSERT_TRUE(c.wait_closed(id));
  ASSERT_TRUE(c.wait_closed(malformed));
  EXPECT_EQ(c.stream(id).header(":status"), "200");
  EXPECT_EQ(c.stream(id).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::unimplemented));
  EXPECT_EQ(c.stream(malformed).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::unimplemented));
  ASSERT_TRUE(c.wait_closed(no_slash));
  EXPECT_TRUE(c.stream(no_slash).reset);
  EXPECT_EQ(c.stream(no_slash).reset_code, NGHTTP2_PROTOCOL_ERROR);
  const auto next = c.grpc_call("/test.Echo/Echo", "next");
  ASSERT_TRUE(c.wait_closed(next));
  EXPECT_EQ(c.stream(next).grpc_status(), 0);
}

TEST_F(GrpcServer, AGzipRequestIsDecoded) {
  H2Client c(f.port());
  const std::string payload(50000, 'g');
  const auto id =
      c.request(grpc_request_headers("/test.Echo/Echo", {{"grpc-encoding", "gzip"}}), grpc_frame(gzip(payload), true));
  ASSERT_TRUE(c.wait_closed(id));
  ASSERT_EQ(c.stream(id).grpc_status(), 0) << c.stream(id).grpc_message();
  // The client announced no grpc-accept-encoding: the reply is not compressed.
  EXPECT_EQ(c.stream(id).messages(), std::vector<std::string>{payload});
  EXPECT_EQ(c.stream(id).data[0], '\0');
}

TEST_F(GrpcServer, AnUnknownGrpcEncodingIsUnimplemented) {
  H2Client c(f.port());
  const auto id =
      c.request(grpc_request_headers("/test.Echo/Echo", {{"grpc-encoding", "snappy"}}), grpc_frame("xyz", true));
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::unimplemented));
  EXPECT_NE(c.stream(id).header("grpc-accept-encoding").value_or("").find("gzip"), std::string::npos)
      << "UNIMPLEMENTED for an encoding says which ones the server takes";
}

TEST_F(GrpcServer, ACompressedMessageThatInflatesPastMaxBodyIsResourceExhaustedAndTheConnectionGoesOn) {
  const std::string bomb = wheelrpc::test::deflate_bomb(std::size_t{64} << 20);
  ASSERT_LT(bomb.size(), kMaxBody);
  H2Client c(f.port());
  const auto id =
      c.request(grpc_request_headers("/test.Echo/Echo", {{"grpc-encoding", "gzip"}}), grpc_frame(bomb, true));
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::resource_exhausted))
      << c.stream(id).grpc_message();
  const auto next = c.grpc_call("/test.Echo/Echo", "still here");
  ASSERT_TRUE(c.wait_closed(next));
  EXPECT_EQ(c.stream(next).messages(), std::vector<std::string>{"still here"});
  EXPECT_TRUE(c.goaways().empty());
}

TEST_F(GrpcServer, APrefixClaimingMoreThanTheLimitIsRefusedBeforeTheMessageIsSent) {
  H2Client c(f.port());
  // Only the prefix, claiming 4 GiB - 16 bytes; the stream stays open.
  std::string prefix = grpc_frame("");
  prefix[1] = prefix[2] = prefix[3] = '\xff';
  prefix[4] = '\xf0';
  const auto id = c.request(grpc_request_headers("/test.Echo/Echo"), prefix, false);
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::resource_exhausted));
  EXPECT_NE(c.stream(id).grpc_message().find("exceeds"), std::string::npos) << c.stream(id).grpc_message();
  EXPECT_TRUE(c.stream(id).reset) << "the rest need not be sent";
  EXPECT_EQ(c.stream(id).reset_code, NGHTTP2_NO_ERROR);
  // One byte over max_body, prefix and a first piece: refused too.
  std::string over = grpc_frame(std::string(100, 'x'));
  const std::uint32_t n = kMaxBody + 1;
  over[1] = static_cast<char>(n >> 24);
  over[2] = static_cast<char>(n >> 16 & 0xff);
  over[3] = static_cast<char>(n >> 8 & 0xff);
  over[4] = static_cast<char>(n & 0xff);
  const auto id2 = c.request(grpc_request_headers("/test.Echo/Echo"), over, false);
  ASSERT_TRUE(c.wait_closed(id2));
  EXPECT_EQ(c.stream(id2).grpc_status(), static_cast<int>(wheelrpc::rpc::StatusCode::resource_exhausted));
  const auto next = c.grpc_call("/test.Echo/Echo", "fine");
  ASSERT_TRUE(c.wait_closed(next));
  EXPECT_EQ(c.stream(next).messages(), std::vector<std::string>{"fine"});
}

TEST_F(GrpcServer, ServerStreaming) {
  H2Client c(f.port());
  const auto id = c.grpc_call("/test.Echo/Count", "5 3");
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).messages(), (std::vector<std::string>{"aaa", "bbb", "ccc", "ddd", "eee"}));
  EXPECT_EQ(c.stream(id).trailer("grpc-status"), "0");
}

TEST_F(GrpcServer, ClientStreaming) {
  H2Client c(f.port());
  const auto id = c.request(grpc_request_headers("/test.Echo/Sum"), grpc_frame("one"), false);
  c.send(id, grpc_frame("two") + grpc_frame(""));
  c.send(id, grpc_frame(std::string(70000, 'x')), true);
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).messages(), std::vector<std::string>{"4 70006"});
  EXPECT_EQ(c.stream(id).trailer("grpc-status"), "0");
}

TEST_F(GrpcServer, BidiStreamingEchoesEachMessageAsItComes) {
  H2Client c(f.port());
  const auto id = c.request(grpc_request_headers("/test.Echo/Chat"), grpc_frame("ping 1"), false);
  ASSERT_TRUE(c.wait([&] { return c.stream(id).messages().size() == 1; }));
  EXPECT_FALSE(c.stream(id).closed);
  c.send(id, grpc_frame("ping 2"));
  ASSERT_TRUE(c.wait([&] { return c.stream(id).messages().size() == 2; }));
  c.send(id, {}, true);
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).messages(), (std::vector<std::string>{"ping 1", "ping 2"}));
  EXPECT_EQ(c.stream(id).trailer("grpc-status"), "0");
}

TEST_F(GrpcServer, AServerWritingToAClientThatNeverOpensItsWindowWaitsUntilItDoes) {
  H2ClientOptions o;
  o.stream_window = 65535;
  o.connection_window = 65535;
  o.auto_window_update = false;
  H2Client c(f.port(), o);
  constexpr int kMessages = 64;  // 1 MiB in all
  const auto id = c.grpc_call("/test.Echo/Count", std::to_string(kMessages) + " 16384");
  // The window's 64 KiB arrive, then nothing more.
  ASSERT_TRUE(c.wait([&] { return c.stream(id).data.size() == 65535; }));
  EXPECT_FALSE(c.wait([&] { return c.stream(id).data.size() > 65535 || c.stream(id).closed; }, 500ms));
  const int stalled = f.state->count_writes.load();
  EXPECT_LT(stalled, 16) << "the handler's writes wait for the client's window: what the server holds is bounded";
  // Opening the window lets it go on to the end.
  std::size_t consumed = 0;
  while (!c.stream(id).closed) {
    const std::size_t have = c.stream(id).data.size();
    if (have > consumed) {
      c.consume(id, have - consumed);
      consumed = have;
    }
    ASSERT_TRUE(c.wait([&] { return c.stream(id).data.size() > consumed || c.stream(id).closed; }))
        << consumed << " bytes so far";
  }
  EXPECT_EQ(c.stream(id).messages().size(), static_cast<std::size_t>(kMessages));
  EXPECT_EQ(c.stream(id).grpc_status(), 0);
  EXPECT_EQ(f.state->count_writes.load(), kMessages);
}

TEST(GrpcServerSlowReader, AClientThatOpensHugeWindowsAndReadsNothingIsClosedAtTheWriteQueueBound) {
  auto options = server_options();
  options.channel.max_write_queue_bytes = 256u << 10;
  GrpcFixture f(options);
  namespace h2 = wheelrpc::test::h2;
  h2::RawConnection c(f.port());
  c.set_receive_buffer(4096);
  // Windows of 2^31 - 1 bytes, then 16 MiB asked for, and nothing read.
  ASSERT_TRUE(c.send(std::string(h2::kPreface) + h2::settings({{4 /* INITIAL_WINDOW_SIZE */, 0x7fffffff}}) +
                     h2::window_update(0, 0x7fffffff - 65535)));
  ASSERT_TRUE(c.read_until([](const h2::Frame& x) { return x.type == h2::kSettings && (x.flags & h2::kAck) == 0; }));
  ASSERT_TRUE(c.send(h2::headers(1, grpc_request_headers("/test.Echo/Count"), false) +
                     h2::data(1, grpc_frame("256 65536"), true)));
  // Cut off, not left with a hole in its HTTP/2 stream where bytes were refused.
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return f.rpc.server.stats().slow_reader_closes == 1; }, 30s))
      << f.state->count_writes.load() << " writes of 64 KiB done";
  EXPECT_LT(f.state->count_writes.load(), 256);
}

TEST_F(GrpcServer, GracefulShutdownSendsTheTwoStepGoawayAndAnInFlightCallCompletes) {
  H2Client c(f.port());
  const auto id = c.grpc_call("/test.Echo/Hold", "x");
  ASSERT_TRUE(c.wait([&] { return f.state->held_count() == 1; }));
  auto done = std::make_shared<std::promise<boost::system::error_code>>();
  auto shut = done->get_future();
  f.rpc.server.async_shutdown(20s, [done](boost::system::error_code ec) { done->set_value(ec); });
  // First: the last stream id 2^31-1 (every stream already on its way is
  // taken); then, once the client answered the PING, the real one.
  ASSERT_TRUE(c.wait([&] { return c.goaways().size() >= 2; })) << c.goaways().size() << " GOAWAY";
  EXPECT_EQ(c.goaways()[0].last_stream_id, 0x7fffffff);
  EXPECT_EQ(c.goaways()[0].error_code, NGHTTP2_NO_ERROR);
  EXPECT_EQ(c.goaways()[1].last_stream_id, id);
  EXPECT_EQ(c.goaways()[1].error_code, NGHTTP2_NO_ERROR);
  EXPECT_FALSE(c.stream(id).closed);
  f.state->release_all("finished");
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).messages(), std::vector<std::string>{"finished"});
  EXPECT_EQ(c.stream(id).grpc_status(), 0);
  ASSERT_EQ(shut.wait_for(20s), std::future_status::ready);
  EXPECT_FALSE(shut.get()) << "every call in flight was answered";
}

TEST_F(GrpcServer, TheNativeProtocolAndGrpcShareThePort) {
  H2Client c(f.port());
  const auto id = c.grpc_call("/test.Echo/Echo", "over gRPC");
  const auto native = wheelrpc::test::call_and_wait(*f.rpc.client, "echo", "native");
  ASSERT_FALSE(native.ec) << native.ec.message();
  EXPECT_EQ(native.response.payload, "native");
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.stream(id).messages(), std::vector<std::string>{"over gRPC"});
  // The native client reaches the gRPC-path methods too.
  const auto typed = wheelrpc::test::call_and_wait(*f.rpc.client, "/test.Echo/Echo", "same handler");
  ASSERT_FALSE(typed.ec) << typed.ec.message();
  EXPECT_EQ(typed.response.payload, "same handler");
}

}  // namespace
