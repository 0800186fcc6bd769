// A typed call's trailing metadata and per-call compression: the handler's
// ServerContext::add_trailing_metadata and set_compression reach the caller
// in ReplyInfo (trailers apart from the initial metadata; compressed).
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/use_future.hpp>

#include "probe.wheelrpc.h"
#include "support/rpc_fixture.h"

using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ReplyInfo;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerContext;
using wheelrpc::transport::Attachments;
using wheelrpc::transport::Compression;
namespace asio = boost::asio;
using typedtest::EchoReply;
using typedtest::EchoRequest;
using typedtest::Probe;

namespace {

/// Echo: initial metadata "who", trailing metadata "done"; a reply of 64 KiB
/// compressed with gzip when the request's text is "gzip", else uncompressed
/// (identity) whatever the call asked.
class MetadataProbe : public Probe::Service {
  asio::awaitable<EchoReply> Echo(ServerContext& ctx, const EchoRequest& req) override {
    ctx.add_reply_metadata("who", "me");
    ctx.add_trailing_metadata("done", "yes");
    ctx.set_compression(req.text() == "gzip" ? Compression::gzip : Compression::identity);
    EchoReply reply;
    reply.set_blob(std::string(64 * 1024, '\0'));
    reply.set_text(ctx.request_compressed() ? "request compressed" : "request plain");
    co_return reply;
  }
};

TEST(TypedMetadata, ReplyInfoHasTheTrailersApartAndWhetherTheReplyCameCompressed) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads;
  MetadataProbe impl;
  Server server(threads.io.get_executor(), timer);
  server.add_service(impl);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  Client client(threads.io.get_executor(), timer, std::vector<asio::ip::tcp::endpoint>{server.local_endpoint()});
  Probe::Stub stub(client);

  EchoRequest req;
  req.set_text("gzip");
  CallOptions o;
  o.reply_info = std::make_shared<ReplyInfo>();
  auto f = stub.async_Echo(req, o, asio::use_future);
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EchoReply r = f.get();
  EXPECT_EQ(r.blob().size(), 64u * 1024);
  EXPECT_EQ(r.text(), "request plain");
  EXPECT_EQ(o.reply_info->metadata, (Attachments{{"who", "me"}}));
  EXPECT_EQ(o.reply_info->trailers, (Attachments{{"done", "yes"}}));
  EXPECT_TRUE(o.reply_info->compressed);

  // The call asks for zstd (its 16 KiB request goes compressed); the reply
  // goes uncompressed all the same.
  req.set_text("plain");
  req.set_blob(std::string(16 * 1024, 'x'));
  o.compression = Compression::zstd;
  o.reply_info = std::make_shared<ReplyInfo>();
  auto g = stub.async_Echo(req, o, asio::use_future);
  ASSERT_EQ(g.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  r = g.get();
  EXPECT_EQ(r.text(), "request compressed");
  EXPECT_FALSE(o.reply_info->compressed);
  EXPECT_EQ(o.reply_info->trailers, (Attachments{{"done", "yes"}}));

  client.close();
  server.stop();
  threads.stop();
}

/// Echo: adds metadata of both kinds, then fails with NOT_FOUND.
class FailingProbe : public Probe::Service {
  asio::awaitable<EchoReply> Echo(ServerContext& ctx, const EchoRequest& req) override {
    ctx.add_reply_metadata("who", "me");
    ctx.add_trailing_metadata("why", "no " + req.text());
    throw wheelrpc::rpc::StatusError(wheelrpc::rpc::StatusCode::not_found, "no " + req.text());
    co_return EchoReply{};
  }
};

// A typed handler that throws StatusError sends the metadata it added with
// the failure; the caller's ReplyInfo has it, on both wires.
TEST(TypedMetadata, AFailedCallsReplyInfoHasTheMetadataTheHandlerAddedBeforeItFailed) {
  for (const auto protocol : {wheelrpc::rpc::WireProtocol::native, wheelrpc::rpc::WireProtocol::grpc}) {
    wheelrpc::timer::HashedWheelTimer timer;
    wheelrpc::test::IoThreads threads;
    FailingProbe impl;
    Server server(threads.io.get_executor(), timer);
    server.add_service(impl);
    ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
    wheelrpc::rpc::ClientOptions co;
    co.protocol = protocol;
    Client client(threads.io.get_executor(), timer, std::vector<asio::ip::tcp::endpoint>{server.local_endpoint()}, co);
    Probe::Stub stub(client);
    EchoRequest req;
    req.set_text("cake");
    CallOptions o;
    o.reply_info = std::make_shared<ReplyInfo>();
    std::promise<boost::system::error_code> done;
    stub.async_Echo(req, o, [&done](boost::system::error_code ec, EchoReply) { done.set_value(ec); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_EQ(f.get(), make_error_code(wheelrpc::rpc::StatusCode::not_found));
    EXPECT_NE(o.reply_info->error_message.find("no cake"), std::string::npos) << o.reply_info->error_message;
    EXPECT_EQ(o.reply_info->metadata, (Attachments{{"who", "me"}}));
    EXPECT_EQ(o.reply_info->trailers, (Attachments{{"why", "no cake"}}));
    client.close();
    server.stop();
    threads.stop();
  }
}

}  // namespace
