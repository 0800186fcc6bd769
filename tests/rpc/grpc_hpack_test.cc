// What a wheelrpc Client on the gRPC wire puts in HPACK, seen by a plain
// nghttp2 server (support/h2_server.h): the fields whose values change with
// every call (grpc-timeout, traceparent) are never indexed after the first
// of the connection, so neither end's dynamic table fills with values that
// never come again (each would evict a field that does).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "support/h2_server.h"
#include "support/rpc_fixture.h"

using namespace std::chrono_literals;
using wheelrpc::test::H2Field;

namespace {

const H2Field* field(const std::vector<H2Field>& fields, std::string_view name) {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(GrpcClientHpack, PerCallFieldsAreNeverIndexedAfterTheFirstAndTheServersTableStopsGrowing) {
  wheelrpc::test::H2Server server;
  ASSERT_NE(server.port(), 0);
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads(1);
  wheelrpc::rpc::ClientOptions co;
  co.protocol = wheelrpc::rpc::WireProtocol::grpc;
  wheelrpc::rpc::Client client(threads.io.get_executor(), timer,
                               {{boost::asio::ip::make_address("127.0.0.1"), server.port()}}, co);
  constexpr int kCalls = 40;
  for (int i = 0; i < kCalls; ++i) {
    wheelrpc::rpc::CallOptions o;
    o.timeout = std::chrono::milliseconds(30000 + i);  // a grpc-timeout of its own for each call
    const auto r = wheelrpc::test::call_and_wait(client, "/test.Echo/Echo", "call " + std::to_string(i), o);
    ASSERT_FALSE(r.ec) << i << ": " << r.ec.message();
    EXPECT_EQ(r.response.payload, "call " + std::to_string(i));
  }
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), static_cast<std::size_t>(kCalls));
  for (std::size_t i = 0; i < requests.size(); ++i) {
    for (const char* name : {"grpc-timeout", "traceparent"}) {
      const H2Field* f = field(requests[i], name);
      ASSERT_TRUE(f) << "call " << i << " without " << name;
      EXPECT_EQ(f->never_indexed, i > 0) << "call " << i << ": " << name;
    }
    const H2Field* path = field(requests[i], ":path");
    ASSERT_TRUE(path);
    EXPECT_FALSE(path->never_indexed);
  }
  // The fields that repeat, and one grpc-timeout and one traceparent: well
  // under HPACK's 4096 bytes, which 40 indexed traceparents alone would fill.
  EXPECT_LT(server.inflate_table_bytes(), 1024u);
  client.close();
  threads.stop();
}

}  // namespace
