// The admin gateway transcodes JSON for typed methods (protobuf's JSON
// mapping); untyped methods keep raw bodies.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <wheelrpc/admin/admin_server.h>

#include "probe.wheelrpc.h"
#include "support/raw_http.h"
#include "support/rpc_fixture.h"

namespace asio = boost::asio;
using wheelrpc::rpc::ServerContext;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::StatusError;
using wheelrpc::test::http_call;
using typedtest::EchoReply;
using typedtest::EchoRequest;

namespace {

class GatewayProbe : public typedtest::Probe::Service {
 public:
  asio::awaitable<EchoReply> Echo(ServerContext& ctx, const EchoRequest& req) override {
    if (req.fail_code() == "NOT_FOUND") throw StatusError(StatusCode::not_found, "no " + req.text());
    EchoReply r;
    r.set_remaining_ms(ctx.remaining().count());
    r.set_text("echo: " + req.text());
    r.set_blob(req.blob());
    co_return r;
  }
  // The deadline it runs under, and its metadata ("key=value").
  asio::awaitable<EchoReply> Budgeted(ServerContext& ctx, const EchoRequest&) override {
    EchoReply r;
    r.set_remaining_ms(ctx.remaining().count());
    for (const auto& [k, v] : ctx.metadata()) r.add_metadata(k + "=" + v);
    co_return r;
  }
};

/// POST with extra header lines ("Name: value\r\n" each).
wheelrpc::test::HttpReply post_with(const asio::ip::tcp::endpoint& ep, const std::string& target,
                                    const std::string& body, const std::string& headers) {
  return wheelrpc::test::http_exchange(ep, "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                                               headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                                               body);
}

/// The remaining_ms of a JSON EchoReply (an int64: a string in protobuf's JSON), or -1.
long long remaining_ms(const std::string& body) {
  const auto at = body.find("\"remainingMs\":\"");
  if (at == std::string::npos) return -1;
  return std::stoll(body.substr(at + 15));
}

struct GatewayFixture {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the io_context
  wheelrpc::test::IoThreads threads;
  GatewayProbe impl;
  wheelrpc::rpc::Server server{threads.io.get_executor(), timer};
  wheelrpc::admin::AdminServer admin{threads.io.get_executor(), timer};
  GatewayFixture() {
    server.add_service(impl);
    server.handle("raw", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) { r.reply(req.payload); });
    EXPECT_FALSE(server.listen({asio::ip::make_address("127.0.0.1"), 0}));
    admin.add_server(server);
    EXPECT_FALSE(admin.listen(0));
  }
  ~GatewayFixture() {
    admin.stop();
    server.stop();
    threads.stop();
  }
};

TEST(TypedGateway, JsonInJsonOut) {
  GatewayFixture fx;
  auto r =
      http_call(fx.admin.local_endpoint(), "POST", "/rpc/typedtest.Probe/Echo", R"({"text": "hi", "blob": "AAE="})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("application/json"), std::string::npos) << r.headers;
  EXPECT_NE(r.body.find(R"("text":"echo: hi")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("blob":"AAE=")"), std::string::npos) << r.body;
}

TEST(TypedGateway, ABodyThatDoesNotParseIsA400NamingTheField) {
  GatewayFixture fx;
  auto r = http_call(fx.admin.local_endpoint(), "POST", "/rpc/typedtest.Probe/Echo", R"({"txet": "hi"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("txet"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("typedtest.EchoRequest"), std::string::npos) << r.body;
  auto wrong_type = http_call(fx.admin.local_endpoint(), "POST", "/rpc/typedtest.Probe/Echo", R"({"sleep_ms": "x"})");
  EXPECT_EQ(wrong_type.status, 400) << wrong_type.body;
}

TEST(TypedGateway, AHandlersStatusBecomesItsHttpStatus) {
  GatewayFixture fx;
  auto r = http_call(fx.admin.local_endpoint(), "POST", "/rpc/typedtest.Probe/Echo",
                     R"({"text": "user 7", "failCode": "NOT_FOUND"})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find(R"("status":"NOT_FOUND")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("no user 7"), std::string::npos) << r.body;
  auto missing = http_call(fx.admin.local_endpoint(), "POST", "/rpc/typedtest.Probe/Missing", "{}");
  EXPECT_EQ(missing.status, 501) << missing.body;
}

TEST(TypedGateway, UntypedMethodsKeepRawBodies) {
  GatewayFixture fx;
  auto r = http_call(fx.admin.local_endpoint(), "POST", "/rpc/raw", "not json");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "not json");
}

TEST(TypedGateway, AMethodsIdlTimeoutIsNotCutToTheGatewaysDefault) {
  GatewayFixture fx;
  // Budgeted's IDL timeout_ms is 3000: with no X-Wheelrpc-Timeout-Ms the
  // gateway sends no deadline of its own (the server applies the method's),
  // so the handler is not held to AdminOptions::gateway_timeout (1000 ms).
  auto idl = http_call(fx.admin.local_endpoint(), "POST", "/rpc/typedtest.Probe/Budgeted", "{}");
  ASSERT_EQ(idl.status, 200) << idl.body;
  EXPECT_GT(remaining_ms(idl.body), 1000) << idl.body;
  // A method with no timeout of its own gets the gateway's default.
  auto plain = http_call(fx.admin.local_endpoint(), "POST", "/rpc/typedtest.Probe/Echo", "{}");
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_LE(remaining_ms(plain.body), 1000) << plain.body;
  EXPECT_GT(remaining_ms(plain.body), 0) << plain.body;
  // The header binds both: the server keeps the smaller of it and the method's.
  auto asked =
      post_with(fx.admin.local_endpoint(), "/rpc/typedtest.Probe/Budgeted", "{}", "X-Wheelrpc-Timeout-Ms: 500\r\n");
  ASSERT_EQ(asked.status, 200) << asked.body;
  EXPECT_LE(remaining_ms(asked.body), 500) << asked.body;
  EXPECT_GT(remaining_ms(asked.body), 0) << asked.body;
}

TEST(TypedGateway, HeadersReachATypedHandlerAsMetadata) {
  GatewayFixture fx;
  auto r = post_with(fx.admin.local_endpoint(), "/rpc/typedtest.Probe/Budgeted", "{}",
                     "Authorization: Bearer T\r\nX-Tenant: acme\r\nGrpc-Metadata-Region: eu\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"authorization=Bearer T\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"x-tenant=acme\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"region=eu\""), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("host="), std::string::npos) << r.body;
}

}  // namespace
