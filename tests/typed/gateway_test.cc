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
  asio::awaitable<EchoReply> Echo(ServerContext&, const EchoRequest& req) override {
    if (req.fail_code() == "NOT_FOUND") throw StatusError(StatusCode::not_found, "no " + req.text());
    EchoReply r;
    r.set_text("echo: " + req.text());
    r.set_blob(req.blob());
    co_return r;
  }
};

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

}  // namespace
