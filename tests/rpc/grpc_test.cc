// gRPC over HTTP/2 end to end (docs/grpc.md): a wheelrpc Client with
// ClientOptions::protocol = grpc against a wheelrpc Server, which serves
// gRPC and the native protocol on one port. Unary calls, statuses and
// messages, metadata both ways (binary keys included), deadlines sent as
// grpc-timeout, gzip, the three kinds of streams, cancellation, many calls
// at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/rpc/status_code.h>

#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::Request;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::WireProtocol;
using wheelrpc::test::call_and_wait;
using wheelrpc::test::RpcFixture;

namespace {

ClientOptions grpc_client() {
  ClientOptions o;
  o.protocol = WireProtocol::grpc;
  return o;
}

/// Echoes each message of a stream back; held only by its pending operations.
struct Echo : std::enable_shared_from_this<Echo> {
  explicit Echo(ServerStream s) : stream(std::move(s)) {}
  void read() {
    stream.async_read([self = shared_from_this()](boost::system::error_code ec, std::optional<std::string> m) {
      if (ec) return;
      if (!m) {
        self->stream.add_trailer("x-count", std::to_string(self->n));
        self->stream.finish(StatusCode::ok, "");
        return;
      }
      ++self->n;
      self->stream.async_write(std::move(*m), [self](boost::system::error_code werr) {
        if (!werr) self->read();
      });
    });
  }
  ServerStream stream;
  int n = 0;
};

void register_grpc_methods(wheelrpc::rpc::Server& server, std::atomic<bool>* cancelled_seen = nullptr) {
  server.handle("/test.Echo/Echo", [](Request req, Responder r) { r.reply(std::move(req.payload)); });
  server.handle("/test.Echo/Fail",
                [](Request, Responder r) { r.fail(StatusCode::not_found, "no such thing \xE2\x98\xBA 100%\r\n"); });
  server.handle("/test.Echo/Metadata", [](Request req, Responder r) {
    std::string seen;
    for (const auto& [k, v] : req.attachments) {
      if (k.rfind("x-", 0) == 0) seen += k + "=" + v + ";";
    }
    r.reply(std::move(seen));
  });
  server.handle_stream("/test.Echo/Chat", [](ServerStream s) { std::make_shared<Echo>(std::move(s))->read(); });
  server.handle_stream("/test.Echo/Wait", [cancelled_seen](ServerStream s) {
    // Reads until the client goes away, and says so.
    struct Reader : std::enable_shared_from_this<Reader> {
      ServerStream stream;
      std::atomic<bool>* seen;
      void read() {
        stream.async_read([self = shared_from_this()](boost::system::error_code ec, std::optional<std::string> m) {
          if (ec) {
            if (self->seen) self->seen->store(true);
          } else if (!m) {
            self->stream.finish(StatusCode::ok, "");
          } else {
            self->read();
          }
        });
      }
    };
    auto r = std::make_shared<Reader>();
    r->stream = std::move(s);
    r->seen = cancelled_seen;
    r->read();
  });
}

std::pair<boost::system::error_code, ClientStream> open(wheelrpc::rpc::Client& client, const std::string& method,
                                                        CallOptions o = {}) {
  std::promise<std::pair<boost::system::error_code, ClientStream>> p;
  client.async_open_stream(method, std::move(o), [&p](boost::system::error_code ec, ClientStream s) {
    p.set_value({ec, std::move(s)});
  });
  return p.get_future().get();
}

boost::system::error_code write(ClientStream& s, std::string m) {
  std::promise<boost::system::error_code> p;
  s.async_write(std::move(m), [&p](boost::system::error_code ec) { p.set_value(ec); });
  return p.get_future().get();
}

std::pair<boost::system::error_code, std::optional<std::string>> read(ClientStream& s) {
  std::promise<std::pair<boost::system::error_code, std::optional<std::string>>> p;
  s.async_read([&p](boost::system::error_code ec, std::optional<std::string> m) { p.set_value({ec, std::move(m)}); });
  return p.get_future().get();
}

TEST(GrpcWire, AUnaryCallCarriesItsBytesBothWays) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  CallOptions o;
  o.timeout = 30s;  // 3 MiB each way: no deadline race on a loaded machine under TSan
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{100'000}, std::size_t{3} << 20}) {
    std::string payload(size, '\0');
    for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 131 + 7);
    auto out = call_and_wait(*f.client, "/test.Echo/Echo", payload, o);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, payload) << size;
  }
}

TEST(GrpcWire, AStatusAndItsMessageComeThroughIntact) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  auto out = call_and_wait(*f.client, "/test.Echo/Fail");
  EXPECT_EQ(wheelrpc::rpc::status_code_of(out.ec), StatusCode::not_found) << out.ec.message();
  EXPECT_NE(out.response.error_message.find("no such thing \xE2\x98\xBA 100%\r\n"), std::string::npos)
      << out.response.error_message;
}

TEST(GrpcWire, AnUnknownMethodIsUnimplemented) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  auto out = call_and_wait(*f.client, "/test.Echo/Nope");
  EXPECT_EQ(wheelrpc::rpc::status_code_of(out.ec), StatusCode::unimplemented) << out.ec.message();
}

TEST(GrpcWire, MetadataGoesAsHeadersAndBinaryKeysSurviveBase64) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  CallOptions o;
  o.attachments = {{"x-plain", "hello"}, {"x-raw-bin", std::string("\0\x01\xff", 3)}};
  auto out = call_and_wait(*f.client, "/test.Echo/Metadata", "", o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_NE(out.response.payload.find("x-plain=hello;"), std::string::npos) << out.response.payload;
  EXPECT_NE(out.response.payload.find("x-raw-bin=" + std::string("\0\x01\xff", 3) + ";"), std::string::npos);
}

TEST(GrpcWire, TheDeadlineTravelsAsGrpcTimeoutAndEndsTheCallOnTime) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  CallOptions o;
  o.timeout = 200ms;
  auto out = call_and_wait(*f.client, "sleep", "20000", o);
  // A method without a service ("sleep") goes as the path "/sleep", which the server serves as "sleep".
  EXPECT_EQ(out.ec, wheelrpc::rpc::errc::timeout) << out.ec.message() << " " << out.response.error_message;
  EXPECT_LT(out.took, 10s);
}

TEST(GrpcWire, GzipGoesCompressedOnTheWireAndComesBackWhole) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  CallOptions o;
  o.compression = wheelrpc::transport::Compression::gzip;
  const std::string payload(64 * 1024, 'z');
  auto out = call_and_wait(*f.client, "/test.Echo/Echo", payload, o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, payload);
  std::uint64_t compressed = 0;
  for (const auto& m : f.server.method_stats()) {
    if (m.method == "/test.Echo/Echo") compressed = m.received.compressed;
  }
  EXPECT_EQ(compressed, 1u);
}

TEST(GrpcWire, ABidiStreamEchoesAndEndsWithTrailers) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  auto [ec, stream] = open(*f.client, "/test.Echo/Chat");
  ASSERT_FALSE(ec) << ec.message();
  for (const std::string& m : std::vector<std::string>{"one", "", std::string(200000, 'x'), "four"}) {
    ASSERT_FALSE(write(stream, m));
    auto [rec, got] = read(stream);
    ASSERT_FALSE(rec) << rec.message() << " " << stream.error_message();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, m);
  }
  std::promise<boost::system::error_code> done;
  stream.async_writes_done([&](boost::system::error_code e) { done.set_value(e); });
  EXPECT_FALSE(done.get_future().get());
  auto [rec, end] = read(stream);
  EXPECT_FALSE(rec) << rec.message() << " " << stream.error_message();
  EXPECT_FALSE(end);
}

TEST(GrpcWire, CancellingAStreamResetsItAndTheHandlerSeesIt) {
  std::atomic<bool> cancelled{false};
  RpcFixture f({}, grpc_client(), 2, [&](auto& s) { register_grpc_methods(s, &cancelled); });
  auto [ec, stream] = open(*f.client, "/test.Echo/Wait");
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_FALSE(write(stream, "hello"));  // the server's stream exists once its first read is answered
  stream.cancel();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return cancelled.load(); }, 20s));
}

TEST(GrpcWire, NativeAndGrpcClientsShareTheServersPort) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  wheelrpc::rpc::Client native(f.threads.io.get_executor(), f.timer,
                               std::vector<boost::asio::ip::tcp::endpoint>{f.server.local_endpoint()});
  auto a = call_and_wait(native, "/test.Echo/Echo", "native");
  auto b = call_and_wait(*f.client, "/test.Echo/Echo", "grpc");
  std::vector<std::string> protocols;
  for (const auto& c : f.server.connections()) protocols.push_back(c.protocol);
  std::sort(protocols.begin(), protocols.end());
  EXPECT_EQ(protocols, (std::vector<std::string>{"grpc", "native"}));
  native.close();
  ASSERT_FALSE(a.ec) << a.response.error_message;
  ASSERT_FALSE(b.ec) << b.response.error_message;
  EXPECT_EQ(a.response.payload, "native");
  EXPECT_EQ(b.response.payload, "grpc");
}

TEST(GrpcWire, ManyCallsAtOnceEachCompleteOnce) {
  RpcFixture f({}, grpc_client(), 2, [](auto& s) { register_grpc_methods(s); });
  std::vector<std::future<wheelrpc::test::Outcome>> calls;
  for (int i = 0; i < 2000; ++i) {
    calls.push_back(wheelrpc::test::start(*f.client, "/test.Echo/Echo", std::to_string(i), {}));
  }
  for (int i = 0; i < 2000; ++i) {
    ASSERT_EQ(calls[i].wait_for(60s), std::future_status::ready);
    auto out = calls[i].get();
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, std::to_string(i));
  }
}

TEST(GrpcWire, PingsOnlyWhileCallsAreOpenAndBackOffWhenTheServerSaysTooManyPings) {
  // A server that allows one PING a minute, a client that pings every 50 ms
  // of silence: with no call open it sends none (the server would count
  // them); with a stream open it pings, is told too_many_pings, and its
  // next connection pings half as often.
  wheelrpc::rpc::ServerOptions so;
  so.grpc.min_ping_interval = std::chrono::minutes(1);
  so.grpc.max_ping_strikes = 1;
  ClientOptions co = grpc_client();
  co.heartbeat = 50ms;
  co.idle_timeout = 10s;
  RpcFixture f(so, co, 2, [](auto& s) { register_grpc_methods(s); });
  ASSERT_FALSE(call_and_wait(*f.client, "/test.Echo/Echo", "x").ec);
  // Idle: no PING in 20 heartbeat intervals.
  const auto quiet = f.client->connections();
  ASSERT_EQ(quiet.size(), 1u);
  boost::asio::steady_timer t(f.threads.io, 1s);
  t.wait();
  auto after = f.client->connections();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].heartbeats_sent, quiet[0].heartbeats_sent) << "a PING without calls";
  EXPECT_EQ(after[0].heartbeat, 50ms);
  // A stream open and silent: PINGs, the server's GOAWAY, a new connection at 100 ms.
  auto [ec, stream] = open(*f.client, "/test.Echo/Wait");
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        auto now = f.client->connections();
        return now.size() == 1 && now[0].heartbeat == 100ms;
      },
      30s));
  stream.cancel();
}

TEST(GrpcWire, CallsFailOverToAnotherProviderWhenOneStops) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads;
  std::vector<std::unique_ptr<wheelrpc::rpc::Server>> servers;
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(std::make_unique<wheelrpc::rpc::Server>(threads.io.get_executor(), timer));
    register_grpc_methods(*servers.back());
    ASSERT_FALSE(servers.back()->listen(wheelrpc::test::loopback0()));
    endpoints.push_back(servers.back()->local_endpoint());
  }
  wheelrpc::rpc::Client client(threads.io.get_executor(), timer, endpoints, grpc_client());
  for (int i = 0; i < 20; ++i) ASSERT_FALSE(call_and_wait(client, "/test.Echo/Echo", "a").ec);
  servers[0]->stop();
  CallOptions o;
  o.idempotent = true;
  o.retries = 2;
  int ok = 0;
  for (int i = 0; i < 50; ++i) {
    auto out = call_and_wait(client, "/test.Echo/Echo", "b", o);
    if (!out.ec) ++ok;
  }
  EXPECT_EQ(ok, 50) << "every call retried onto the provider left";
  client.close();
  servers[1]->stop();
  threads.stop();
}

}  // namespace
