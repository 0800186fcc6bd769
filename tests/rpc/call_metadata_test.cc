// A unary call's two kinds of reply metadata and its per-call compression,
// as gRPC's interop cases use them: ServerContext's reply (initial) metadata
// and trailing metadata reach the client split (Response::attachments and
// trailers; the marker never shows), an interceptor's reply metadata stays
// initial, Server::async_invoke splits them too; ServerContext::
// set_compression forces a reply compressed or not, whatever the call
// asked, and request_compressed() and Response::compressed say what came.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <utility>

#include <wheelrpc/rpc/server_context.h>
#include <wheelrpc/rpc/server_interceptor.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/transport/compression.h>

#include "base/metadata_split.h"
#include "support/rpc_fixture.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Request;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::ServerContext;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::test::RpcFixture;
using wheelrpc::transport::Attachments;
using wheelrpc::transport::Compression;

namespace {

/// "meta": initial metadata ("who" = "me"), and trailing metadata
/// ("done" = "yes", "x-bin" = bytes) unless the payload is "no-trailers".
/// "squeeze": replies with 64 KiB of zeros, compressed as the payload says
/// ("gzip", "identity", anything else: the call's), and puts whether the
/// request came compressed in metadata "request-compressed".
void register_methods(wheelrpc::rpc::Server& server) {
  server.handle("meta", [](Request req, Responder r) {
    const bool trailers = req.payload != "no-trailers";
    ServerContext ctx(std::move(req), std::move(r));
    ctx.add_reply_metadata("who", "me");
    if (trailers) {
      ctx.add_trailing_metadata("done", "yes");
      ctx.add_trailing_metadata("x-bin", std::string("\xab\x00\xab", 3));
    }
    ctx.responder().reply("ok", ctx.take_reply_attachments());
  });
  server.handle("refuse", [](Request req, Responder r) {
    const bool initial = req.payload != "trailing-only";
    ServerContext ctx(std::move(req), std::move(r));
    if (initial) ctx.add_reply_metadata("who", "me");
    ctx.add_trailing_metadata("why", "because");
    ctx.add_trailing_metadata("x-details-bin", std::string("\x08\x05\x00", 3));
    ctx.responder().fail(wheelrpc::rpc::StatusCode::not_found, "no such thing", ctx.take_reply_attachments());
  });
  server.handle("squeeze", [](Request req, Responder r) {
    const std::string how = req.payload.substr(0, req.payload.find(' '));
    ServerContext ctx(std::move(req), std::move(r));
    if (how == "gzip") ctx.set_compression(Compression::gzip);
    if (how == "identity") ctx.set_compression(Compression::identity);
    ctx.add_reply_metadata("request-compressed", ctx.request_compressed() ? "true" : "false");
    ctx.responder().reply(std::string(64 * 1024, '\0'), ctx.take_reply_attachments());
  });
}

const std::string* find(const Attachments& all, const std::string& key) {
  for (const auto& [k, v] : all) {
    if (k == key) return &v;
  }
  return nullptr;
}

TEST(MetadataSplit, JoinThenSplitGivesBothBackAndNoTrailersMeansNoMarker) {
  Attachments initial{{"a", "1"}};
  wheelrpc::rpc::detail::join_trailers(initial, {});
  EXPECT_EQ(initial.size(), 1u) << "no trailers: no marker";
  wheelrpc::rpc::detail::join_trailers(initial, {{"t", "2"}, {"u", "3"}});
  ASSERT_EQ(initial.size(), 4u);
  EXPECT_EQ(initial[1].first, wheelrpc::rpc::detail::kTrailersMarker);
  Attachments trailing;
  wheelrpc::rpc::detail::split_trailers(initial, trailing);
  EXPECT_EQ(initial, (Attachments{{"a", "1"}}));
  EXPECT_EQ(trailing, (Attachments{{"t", "2"}, {"u", "3"}}));
}

TEST(CallMetadata, InitialAndTrailingMetadataArriveApartWithoutTheMarker) {
  RpcFixture f({}, {}, 2, register_methods);
  auto out = wheelrpc::test::call_and_wait(*f.client, "meta");
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "ok");
  EXPECT_EQ(out.response.attachments, (Attachments{{"who", "me"}}));
  EXPECT_EQ(out.response.trailers, (Attachments{{"done", "yes"}, {"x-bin", std::string("\xab\x00\xab", 3)}}));

  auto plain = wheelrpc::test::call_and_wait(*f.client, "meta", "no-trailers");
  ASSERT_FALSE(plain.ec) << plain.response.error_message;
  EXPECT_EQ(plain.response.attachments, (Attachments{{"who", "me"}}));
  EXPECT_TRUE(plain.response.trailers.empty());
}

// Metadata a handler fails with (Responder::fail) reaches the failed call,
// split as a reply's, on both wires (on the gRPC wire: the response's
// HEADERS with the initial metadata, then the trailers with the status).
class FailureMetadata : public ::testing::TestWithParam<wheelrpc::rpc::WireProtocol> {};

TEST_P(FailureMetadata, AFailedCallGetsTheMetadataItsHandlerFailedWith) {
  wheelrpc::rpc::ClientOptions co;
  co.protocol = GetParam();
  RpcFixture f({}, co, 2, register_methods);
  auto out = wheelrpc::test::call_and_wait(*f.client, "refuse");
  ASSERT_EQ(out.ec, make_error_code(wheelrpc::rpc::StatusCode::not_found)) << out.ec.message();
  EXPECT_NE(out.response.error_message.find("no such thing"), std::string::npos) << out.response.error_message;
  const Attachments trailing{{"why", "because"}, {"x-details-bin", std::string("\x08\x05\x00", 3)}};
  EXPECT_EQ(out.response.attachments, (Attachments{{"who", "me"}}));
  EXPECT_EQ(out.response.trailers, trailing);
  // Trailing metadata alone (on the gRPC wire a trailers-only answer): trailers.
  out = wheelrpc::test::call_and_wait(*f.client, "refuse", "trailing-only");
  ASSERT_EQ(out.ec, make_error_code(wheelrpc::rpc::StatusCode::not_found)) << out.ec.message();
  EXPECT_TRUE(out.response.attachments.empty());
  EXPECT_EQ(out.response.trailers, trailing);
}

INSTANTIATE_TEST_SUITE_P(BothWires, FailureMetadata,
                         ::testing::Values(wheelrpc::rpc::WireProtocol::native, wheelrpc::rpc::WireProtocol::grpc),
                         [](const ::testing::TestParamInfo<wheelrpc::rpc::WireProtocol>& p) {
                           return p.param == wheelrpc::rpc::WireProtocol::native ? "native" : "grpc";
                         });

TEST(CallMetadata, AnInterceptorsReplyMetadataStaysInitialMetadata) {
  struct Stamp : wheelrpc::rpc::ServerInterceptor {
    void intercept(wheelrpc::rpc::ServerCall&, wheelrpc::rpc::InterceptorNext next) override { next.proceed(); }
    void on_complete(wheelrpc::rpc::ServerCall& call, const boost::system::error_code&) override {
      call.reply_metadata().emplace_back("stamped", "1");
    }
  };
  ServerOptions so;
  so.interceptors.push_back(std::make_shared<Stamp>());
  RpcFixture f(so, {}, 2, register_methods);
  auto out = wheelrpc::test::call_and_wait(*f.client, "meta");
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.attachments, (Attachments{{"who", "me"}, {"stamped", "1"}}));
  EXPECT_EQ(out.response.trailers.size(), 2u);
}

TEST(CallMetadata, AnInProcessInvokeSplitsThemToo) {
  RpcFixture f({}, {}, 2, register_methods);
  std::promise<wheelrpc::rpc::Response> done;
  f.server.async_invoke("meta", "", 5s, [&](boost::system::error_code ec, wheelrpc::rpc::Response r) {
    EXPECT_FALSE(ec) << r.error_message;
    done.set_value(std::move(r));
  });
  auto fut = done.get_future();
  ASSERT_EQ(fut.wait_for(20s), std::future_status::ready);
  const auto r = fut.get();
  EXPECT_EQ(r.attachments, (Attachments{{"who", "me"}}));
  EXPECT_EQ(r.trailers.size(), 2u);
}

TEST(CallCompression, TheHandlerForcesItsReplyCompressedOrNotWhateverTheCallAsked) {
  RpcFixture f({}, {}, 2, register_methods);
  // The call asks for none; the handler compresses its reply with gzip.
  auto forced = wheelrpc::test::call_and_wait(*f.client, "squeeze", "gzip");
  ASSERT_FALSE(forced.ec) << forced.response.error_message;
  EXPECT_EQ(forced.response.payload.size(), 64u * 1024);
  EXPECT_TRUE(forced.response.compressed);
  // The call asks for zstd (and its request goes compressed); the handler
  // sends its reply uncompressed.
  CallOptions zstd;
  zstd.compression = Compression::zstd;
  auto plain = wheelrpc::test::call_and_wait(*f.client, "squeeze", "identity " + std::string(8 * 1024, 'x'), zstd);
  ASSERT_FALSE(plain.ec) << plain.response.error_message;
  EXPECT_EQ(plain.response.payload.size(), 64u * 1024);
  EXPECT_FALSE(plain.response.compressed);
  ASSERT_TRUE(find(plain.response.attachments, "request-compressed"));
  EXPECT_EQ(*find(plain.response.attachments, "request-compressed"), "true");
  // Left alone, the reply mirrors the call's algorithm.
  auto mirrored = wheelrpc::test::call_and_wait(*f.client, "squeeze", "mirror", zstd);
  ASSERT_FALSE(mirrored.ec) << mirrored.response.error_message;
  EXPECT_TRUE(mirrored.response.compressed);
  EXPECT_EQ(*find(mirrored.response.attachments, "request-compressed"), "false") << "6 bytes: under the threshold";
}

}  // namespace
