// AdminServer against a real Server and Client (through a FaultProxy):
// traffic of every kind (ok, timeouts, an unknown method, a killed
// connection), then /metrics checked by promtool and against what the client
// saw; compressed payloads in /metrics and /status.json; health, readiness
// and QoS over HTTP; the gateway's error mapping; the JSON views; and the
// loopback-only default.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <wheelrpc/admin/admin_server.h>
#include <wheelrpc/admin/exposition.h>
#include <wheelrpc/rpc/bearer_auth_interceptor.h>
#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/transport/compression.h>

#include "support/raw_http.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Response;
using wheelrpc::test::http_exchange;
using wheelrpc::test::http_request_text;
using wheelrpc::test::loopback0;

namespace {

/// The labels a completion with `ec` counts under: `code="..",reason=".."`.
std::string outcome(const error_code& ec) {
  const auto c = wheelrpc::rpc::call_code(ec);
  return "code=\"" + std::string(wheelrpc::rpc::to_string(wheelrpc::rpc::call_status(c))) + "\",reason=\"" +
         std::string(wheelrpc::rpc::call_code_name(c)) + "\"";
}

/// Server <- FaultProxy <- Client, and an AdminServer showing both.
struct AdminFixture {
  /// `more` registers methods of the test's own before the server listens.
  /// `co`: the test client's options.
  explicit AdminFixture(wheelrpc::rpc::ServerOptions so = {}, std::function<void(wheelrpc::rpc::Server&)> more = {},
                        wheelrpc::rpc::ClientOptions co = {})
      : threads(2), server(threads.io.get_executor(), timer, std::move(so)) {
    wheelrpc::test::register_test_methods(server, threads.io);
    if (more) more(server);
    if (auto ec = server.listen(loopback0())) throw boost::system::system_error(ec);
    proxy.emplace(threads.io.get_executor(), loopback0(), server.local_endpoint());
    if (auto ec = proxy->start()) throw boost::system::system_error(ec);
    client.emplace(threads.io.get_executor(), timer, std::vector<asio::ip::tcp::endpoint>{proxy->local_endpoint()}, co);
    admin.emplace(threads.io.get_executor(), timer);
    admin->add_server(server);
    admin->add_client("test", *client);
    if (auto ec = admin->listen(0)) throw boost::system::system_error(ec);
  }
  ~AdminFixture() {
    admin->stop();
    client->close();
    proxy->stop();
    server.stop();
    threads.stop();
  }

  /// Calls and records the outcome as the client saw it.
  error_code call(const std::string& method, const std::string& payload, CallOptions o = {}) {
    std::promise<error_code> p;
    auto f = p.get_future();
    client->async_call(method, payload, std::move(o), [&](error_code ec, Response) {
      std::lock_guard lock(mu);
      ++seen[method + "/" + outcome(ec)];
      p.set_value(ec);
    });
    if (f.wait_for(30s) != std::future_status::ready) return make_error_code(errc::server_error);
    return f.get();
  }

  wheelrpc::test::HttpReply get(const std::string& target) {
    return http_exchange(admin->local_endpoint(), http_request_text("GET", target));
  }
  wheelrpc::test::HttpReply post(const std::string& target, const std::string& body, const std::string& extra = {}) {
    std::string raw = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra +
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    return http_exchange(admin->local_endpoint(), raw);
  }

  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads;
  wheelrpc::rpc::Server server;
  std::optional<wheelrpc::fault::FaultProxy> proxy;
  std::optional<wheelrpc::rpc::Client> client;
  std::optional<wheelrpc::admin::AdminServer> admin;
  std::mutex mu;
  std::map<std::string, std::uint64_t> seen;  // "method/code" -> completions
};

/// "name{labels} value" lines of an exposition: sample -> value.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

std::string promtool_verdict(const std::string& exposition, int& rc) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("wheelrpc-admin-promtool-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(reinterpret_cast<std::uintptr_t>(&exposition)));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "metrics.txt") << exposition;
  const std::string cmd = "/usr/bin/promtool check metrics < " + (dir / "metrics.txt").string() + " > " +
                          (dir / "result.txt").string() + " 2>&1";
  rc = std::system(cmd.c_str());
  std::ifstream in(dir / "result.txt");
  std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  return said;
}

}  // namespace

TEST(AdminServer, MetricsPassPromtoolAndCountWhatTheClientSaw) {
  AdminFixture fx;
  for (int i = 0; i < 5; ++i) ASSERT_FALSE(fx.call("echo", "x"));
  CallOptions quick;
  quick.timeout = 50ms;
  quick.retries = 0;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(fx.call("sleep", "3000", quick), errc::timeout);
  EXPECT_EQ(fx.call("nope", ""), errc::method_not_found);
  // A killed connection: a call in flight when the proxy closes every connection.
  CallOptions slow;
  slow.timeout = 20s;
  slow.retries = 0;
  std::promise<error_code> lost;
  auto lost_f = lost.get_future();
  fx.client->async_call("sleep", "5000", slow, [&](error_code ec, Response) {
    std::lock_guard lock(fx.mu);
    ++fx.seen["sleep/" + outcome(ec)];
    lost.set_value(ec);
  });
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] { return fx.client->stats().pending == 1 && fx.server.stats().in_flight >= 1; }, 10s));
  fx.proxy->down();
  ASSERT_EQ(lost_f.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(lost_f.get(), errc::connection_lost);

  const auto reply = fx.get("/metrics");
  ASSERT_EQ(reply.status, 200) << reply.headers;
  EXPECT_NE(reply.headers.find("text/plain; version=0.0.4"), std::string::npos) << reply.headers;
  if (std::filesystem::exists("/usr/bin/promtool")) {
    int rc = 0;
    const auto said = promtool_verdict(reply.body, rc);
    EXPECT_EQ(rc, 0) << said;
    EXPECT_EQ(said.find("lint"), std::string::npos) << said;
  } else {
    ADD_FAILURE() << "no /usr/bin/promtool: scripts/install_deps.sh installs it (Debian's prometheus package)";
  }
  const auto m = samples(reply.body);
  // Connections closed for bad input, every reason present (zeros too).
  for (const char* reason :
       {"bad_magic", "bad_version", "oversize_frame", "malformed_frame", "no_hello", "hello_timeout"}) {
    const std::string sample = std::string("wheelrpc_server_bad_input_total{reason=\"") + reason + "\"}";
    EXPECT_TRUE(m.count(sample)) << sample << "\n" << reply.body;
  }
  // Aged connections: none here (no maximum age), but the families are there.
  EXPECT_EQ(m.count("wheelrpc_server_aged_connections_total"), 1u) << reply.body;
  EXPECT_EQ(m.count("wheelrpc_server_age_grace_closes_total"), 1u) << reply.body;
  std::lock_guard lock(fx.mu);
  for (const auto& [key, n] : fx.seen) {
    const auto slash = key.find('/');
    const std::string sample =
        "wheelrpc_client_handled_total{method=\"" + key.substr(0, slash) + "\"," + key.substr(slash + 1) + "}";
    ASSERT_TRUE(m.count(sample)) << sample << "\n" << reply.body;
    EXPECT_EQ(m.at(sample), static_cast<double>(n)) << sample;
  }
  EXPECT_EQ(fx.seen["echo/code=\"OK\",reason=\"ok\""], 5u);
  EXPECT_EQ(fx.seen["sleep/code=\"DEADLINE_EXCEEDED\",reason=\"timeout\""], 2u);
  EXPECT_EQ(fx.seen["sleep/code=\"UNAVAILABLE\",reason=\"connection_lost\""], 1u);
  // Every (code, reason) pair pre-created at zero for a known method: the
  // framework's and each status an application may choose.
  EXPECT_EQ(m.at("wheelrpc_client_handled_total{method=\"echo\",code=\"UNKNOWN\",reason=\"server_error\"}"), 0);
  EXPECT_EQ(m.at("wheelrpc_client_handled_total{method=\"echo\",code=\"UNAUTHENTICATED\",reason=\"application\"}"), 0);
  EXPECT_EQ(m.at("wheelrpc_server_handled_total{method=\"echo\",code=\"OK\",reason=\"ok\"}"), 5);
  EXPECT_EQ(
      m.at("wheelrpc_server_handled_total{method=\"(unknown)\",code=\"UNIMPLEMENTED\",reason=\"method_not_found\"}"),
      1);
  std::size_t echo_series = 0;
  for (const auto& [sample, value] : m) {
    if (sample.rfind("wheelrpc_server_handled_total{method=\"echo\",", 0) == 0) ++echo_series;
  }
  EXPECT_EQ(echo_series, wheelrpc::rpc::kCallCodes);
  EXPECT_EQ(m.at("wheelrpc_server_shed_total{method=\"echo\"}"), 0);
  EXPECT_EQ(m.at("wheelrpc_server_queued"), 0);
  EXPECT_EQ(m.at("wheelrpc_server_concurrency_limit"), 0);
  EXPECT_EQ(m.at("wheelrpc_client_handling_seconds_count{method=\"echo\"}"), 5);
  EXPECT_EQ(m.at("wheelrpc_client_handling_seconds_bucket{method=\"echo\",le=\"+Inf\"}"), 5);
  EXPECT_GE(m.at("wheelrpc_timer_scheduled_total"), 1);
  EXPECT_TRUE(m.count("wheelrpc_connections{side=\"client\",state=\"ready\"}"));
  EXPECT_TRUE(m.count("wheelrpc_timer_lateness_seconds_count"));
}

TEST(AdminServer, CompressedPayloadsShowInMetricsAndStatus) {
  AdminFixture fx;
  // 64 KiB of repetitive text, well past the threshold: zstd shrinks it many times over.
  std::string payload;
  while (payload.size() < 64 * 1024) payload += "wheelrpc sends this line again and again. ";
  payload.resize(64 * 1024);
  CallOptions zstd;
  zstd.compression = wheelrpc::transport::Compression::zstd;
  constexpr std::uint64_t kCalls = 3;
  for (std::uint64_t i = 0; i < kCalls; ++i) ASSERT_FALSE(fx.call("echo", payload, zstd));
  // The server counts a reply once it has queued it, which may be just after the client saw it.
  auto server_echo = [&] {
    for (const auto& m : fx.server.method_stats()) {
      if (m.method == "echo") return m;
    }
    return wheelrpc::rpc::MethodStats{};
  };
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return server_echo().sent.messages == kCalls; }, 10s));

  const auto reply = fx.get("/metrics");
  ASSERT_EQ(reply.status, 200);
  if (std::filesystem::exists("/usr/bin/promtool")) {
    int rc = 0;
    const auto said = promtool_verdict(reply.body, rc);
    EXPECT_EQ(rc, 0) << said;
    EXPECT_EQ(said.find("lint"), std::string::npos) << said;
  }
  const auto m = samples(reply.body);
  const double bytes = static_cast<double>(kCalls * payload.size());
  // Each way on each side: the requests (client sent, server received) and the echoed replies.
  for (const char* side : {"client", "server"}) {
    for (const char* direction : {"sent", "received"}) {
      const std::string labels = std::string("{method=\"echo\",direction=\"") + direction + "\"}";
      const std::string name = std::string("wheelrpc_") + side + "_payload_bytes_total" + labels;
      const std::string wire = std::string("wheelrpc_") + side + "_payload_wire_bytes_total" + labels;
      const std::string compressed = std::string("wheelrpc_") + side + "_payloads_compressed_total" + labels;
      ASSERT_TRUE(m.count(name)) << name << "\n" << reply.body;
      EXPECT_EQ(m.at(name), bytes) << name;
      ASSERT_TRUE(m.count(wire)) << wire << "\n" << reply.body;
      ASSERT_TRUE(m.count(compressed)) << compressed << "\n" << reply.body;
      // What compression did: every payload went compressed, in fewer bytes.
      EXPECT_EQ(m.at(compressed), static_cast<double>(kCalls)) << compressed;
      EXPECT_LT(m.at(wire), bytes) << wire;
    }
  }
  EXPECT_EQ(m.at("wheelrpc_server_undecodable_total"), 0);

  // /status.json sums each side's methods: echo's traffic, as /metrics counted it.
  const auto status = json::parse(fx.get("/status.json").body).as_object();
  const std::pair<const char*, const json::value*> sides[] = {{"server", &status.at("server")},
                                                              {"client", &status.at("clients").at(0)}};
  for (const auto& [side, section] : sides) {
    const auto& c = section->at("compression");
    for (const char* direction : {"sent", "received"}) {
      const std::string labels = std::string("{method=\"echo\",direction=\"") + direction + "\"}";
      const auto& t = c.at(direction);
      EXPECT_EQ(t.at("bytes").to_number<double>(), bytes) << side << " " << json::serialize(c);
      EXPECT_EQ(t.at("wire_bytes").to_number<double>(),
                m.at(std::string("wheelrpc_") + side + "_payload_wire_bytes_total" + labels))
          << side << " " << json::serialize(c);
      EXPECT_EQ(t.at("compressed").to_number<double>(),
                m.at(std::string("wheelrpc_") + side + "_payloads_compressed_total" + labels))
          << side << " " << json::serialize(c);
      ASSERT_TRUE(t.at("ratio").is_number()) << side << " " << json::serialize(c);
      // What compression did: bytes / wire_bytes.
      EXPECT_GT(t.at("ratio").to_number<double>(), 1) << side << " " << json::serialize(c);
    }
  }
}

TEST(AdminServer, StreamsShowInMetricsConnectionsAndTimeouts) {
  // The server never writes on "quiet" and holds the stream open.
  std::mutex held_mu;
  std::vector<wheelrpc::rpc::ServerStream> held;
  AdminFixture fx({}, [&](wheelrpc::rpc::Server& server) {
    server.handle_stream("quiet", [&](wheelrpc::rpc::ServerStream s) {
      std::lock_guard lock(held_mu);
      held.push_back(std::move(s));
    });
  });
  auto open = [&](CallOptions o) {
    auto f = fx.client->async_open_stream("quiet", std::move(o), asio::use_future);
    EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
    return f.get();
  };
  auto kept = open({});
  CallOptions idle;
  idle.message_timeout = 50ms;
  auto timed = open(idle);
  std::promise<error_code> ended;
  timed.async_finish([&](error_code ec) { ended.set_value(ec); });
  auto f = ended.get_future();
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::message_timeout);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().streams.open == 1; }, 20s));

  const auto text = fx.get("/metrics").body;
  if (std::filesystem::exists("/usr/bin/promtool")) {
    int rc = 0;
    const auto said = promtool_verdict(text, rc);
    EXPECT_EQ(rc, 0) << said;
    EXPECT_EQ(said.find("lint"), std::string::npos) << said;
  }
  // By method: open, opened, messages each way, ends by status code and cause.
  const auto m = samples(text);
  EXPECT_EQ(m.at("wheelrpc_server_streams_open{method=\"quiet\"}"), 1) << text;
  EXPECT_EQ(m.at("wheelrpc_server_streams_opened_total{method=\"quiet\"}"), 2);
  EXPECT_EQ(m.at("wheelrpc_client_streams_open{method=\"quiet\"}"), 1);
  EXPECT_EQ(
      m.at("wheelrpc_client_streams_ended_total{method=\"quiet\",code=\"DEADLINE_EXCEEDED\",cause=\"message_idle\"}"),
      1);
  EXPECT_EQ(m.at("wheelrpc_server_streams_ended_total{method=\"quiet\",code=\"CANCELLED\",cause=\"cancelled\"}"), 1);
  // Every cause present at zero with its usual code.
  EXPECT_EQ(m.at("wheelrpc_server_streams_ended_total{method=\"quiet\",code=\"OK\",cause=\"ok\"}"), 0);
  EXPECT_EQ(m.at("wheelrpc_server_streams_ended_total{method=\"quiet\",code=\"UNAVAILABLE\",cause=\"refused\"}"), 0);
  EXPECT_EQ(m.at("wheelrpc_client_streams_messages_total{method=\"quiet\",direction=\"in\"}"), 0);
  // A unary method has no stream series.
  EXPECT_EQ(m.count("wheelrpc_server_streams_open{method=\"echo\"}"), 0u);

  // /status.json: the stream method with its streams, the side's totals.
  const auto status = json::parse(fx.get("/status.json").body).as_object();
  const json::object* quiet = nullptr;
  for (const auto& method : status.at("server").at("methods").as_array()) {
    if (method.at("method") == "quiet") quiet = &method.as_object();
  }
  ASSERT_NE(quiet, nullptr) << json::serialize(status);
  const auto& streams = quiet->at("streams");
  EXPECT_EQ(streams.at("open").to_number<int>(), 1) << json::serialize(streams);
  EXPECT_EQ(streams.at("opened").to_number<int>(), 2) << json::serialize(streams);
  EXPECT_EQ(streams.at("ended").at("cancelled").to_number<int>(), 1) << json::serialize(streams);
  EXPECT_EQ(streams.at("ended_codes").at("cancelled").at("CANCELLED").to_number<int>(), 1) << json::serialize(streams);
  EXPECT_EQ(status.at("server").at("streams").at("open").to_number<int>(), 1);
  const auto& client_methods = status.at("clients").at(0).at("methods").as_array();
  bool client_quiet = false;
  for (const auto& method : client_methods) {
    if (method.at("method") != "quiet") continue;
    client_quiet = true;
    EXPECT_EQ(method.at("streams").at("ended").at("message_idle").to_number<int>(), 1) << json::serialize(method);
    EXPECT_EQ(method.at("streams").at("ended_codes").at("message_idle").at("DEADLINE_EXCEEDED").to_number<int>(), 1)
        << json::serialize(method);
  }
  EXPECT_TRUE(client_quiet) << json::serialize(status);

  auto conns = json::parse(fx.get("/connections.json").body).at("connections").as_array();
  int with_stream = 0;
  for (const auto& c : conns) with_stream += c.at("streams").as_int64() == 1 ? 1 : 0;
  EXPECT_EQ(with_stream, 2) << "the stream on the client's connection and on the server's";

  const auto timeouts = json::parse(fx.get("/timeouts.json").body).at("timeouts").as_array();
  ASSERT_FALSE(timeouts.empty());
  const auto& t = timeouts.at(0).as_object();
  EXPECT_EQ(t.at("phase").as_string(), "streaming");
  EXPECT_EQ(t.at("stream_timer").as_string(), "message-idle");
  EXPECT_EQ(t.at("method").as_string(), "quiet");
  kept.cancel();
  std::lock_guard lock(held_mu);
  held.clear();
}

/// The client's row in /connections.json carries what the provider's health
/// service says (client-side health checking): serving, then not_serving
/// once the server is taken offline; null on the server's own rows.
TEST(AdminServer, ConnectionsShowTheHealthThatClientSideHealthCheckingSees) {
  wheelrpc::rpc::ClientOptions co;
  co.health_check.enabled = true;
  AdminFixture fx({}, {}, co);
  ASSERT_FALSE(fx.call("echo", "x"));
  auto client_health = [&] {
    std::string seen = "(no client row)";
    const auto conns = json::parse(fx.get("/connections.json").body);
    for (const auto& c : conns.at("connections").as_array()) {
      if (c.at("side") == "server") {
        EXPECT_TRUE(c.at("health").is_null()) << json::serialize(c);
        continue;
      }
      seen = c.at("health").is_null() ? "null" : std::string(c.at("health").as_string());
    }
    return seen;
  };
  EXPECT_EQ(client_health(), "serving");
  fx.server.set_online(false);
  std::string last;
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return (last = client_health()) == "not_serving"; }, 30s)) << last;
  fx.server.set_online(true);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return (last = client_health()) == "serving"; }, 30s)) << last;
}

TEST(AdminServer, HealthReadyAndQosOverHttp) {
  AdminFixture fx;
  ASSERT_FALSE(fx.call("echo", "x"));
  auto health = fx.get("/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "OK\n");
  EXPECT_EQ(fx.get("/ready").status, 200);
  EXPECT_EQ(fx.get("/offline").status, 405) << "QoS changes need POST";
  EXPECT_EQ(fx.post("/offline", "").status, 200);
  EXPECT_EQ(fx.get("/health").status, 503);
  EXPECT_EQ(fx.get("/ready").status, 503);
  EXPECT_EQ(fx.call("echo", "x"), errc::unavailable);
  EXPECT_EQ(fx.post("/online", "").status, 200);
  EXPECT_EQ(fx.get("/health").status, 200);
  EXPECT_FALSE(fx.call("echo", "x"));
}

/// An error answer of the gateway: `http`, and a JSON body with `code` (the
/// framework's detail), `status` (the gRPC status name) and a message.
void expect_gateway_error(const wheelrpc::test::HttpReply& r, int http, std::string_view code,
                          std::string_view status) {
  EXPECT_EQ(r.status, http) << r.body;
  EXPECT_NE(r.headers.find("application/json"), std::string::npos) << r.headers;
  const auto body = json::parse(r.body).as_object();
  EXPECT_EQ(body.at("code").as_string(), code) << r.body;
  EXPECT_EQ(body.at("status").as_string(), status) << r.body;
  EXPECT_FALSE(body.at("message").as_string().empty()) << r.body;
}

TEST(AdminServer, GatewayCallsTheServerAndMapsErrorsToHttp) {
  AdminFixture fx;
  auto ok = fx.post("/rpc/echo", "hello");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "hello");
  expect_gateway_error(fx.post("/rpc/nope", ""), 404, "method_not_found", "UNIMPLEMENTED");
  auto slow = fx.post("/rpc/sleep", "2000", "X-Wheelrpc-Timeout-Ms: 50\r\n");
  expect_gateway_error(slow, 504, "server_timeout", "DEADLINE_EXCEEDED");
  const auto body = json::parse(slow.body);
  EXPECT_NE(std::string(body.at("message").as_string()).find("in the handler"), std::string::npos) << slow.body;
  EXPECT_NE(std::string(body.at("message").as_string()).find("of a 50 ms budget"), std::string::npos) << slow.body;
  // The gateway's own refusals carry a status too.
  expect_gateway_error(fx.post("/rpc/echo", "x", "X-Wheelrpc-Timeout-Ms: soon\r\n"), 400, "bad_request",
                       "INVALID_ARGUMENT");
  expect_gateway_error(fx.post("/rpc/", "x"), 400, "bad_request", "INVALID_ARGUMENT");
  EXPECT_EQ(fx.get("/rpc/echo").status, 405);
  fx.server.set_online(false);
  expect_gateway_error(fx.post("/rpc/echo", "x"), 503, "unavailable", "UNAVAILABLE");
}

TEST(AdminServer, GatewayAnswersAStreamMethod501NotNoSuchMethod) {
  AdminFixture fx({}, [](wheelrpc::rpc::Server& server) {
    server.handle_stream("chat", [](wheelrpc::rpc::ServerStream s) { s.finish(); });
  });
  const auto requests = fx.server.stats().requests;
  const auto r = fx.post("/rpc/chat", "hello");
  expect_gateway_error(r, 501, "stream_method", "UNIMPLEMENTED");
  EXPECT_NE(r.body.find("stream method"), std::string::npos) << r.body;
  EXPECT_EQ(fx.server.stats().requests, requests) << "refused by the gateway: no call was made";
  // A name that is neither stays a 404.
  expect_gateway_error(fx.post("/rpc/chatter", ""), 404, "method_not_found", "UNIMPLEMENTED");
}

TEST(AdminServer, GatewayPassesAuthorizationAndDocumentedHeadersAsMetadata) {
  // A server whose every method is guarded by a bearer token, and a method
  // that answers the metadata it was called with, "key=value" a line.
  wheelrpc::rpc::ServerOptions so;
  so.interceptors.push_back(std::make_shared<wheelrpc::rpc::BearerAuthInterceptor>(std::vector<std::string>{"T"}));
  AdminFixture fx(so, [](wheelrpc::rpc::Server& server) {
    server.handle("meta", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      std::string out;
      for (const auto& [k, v] : req.attachments) out += k + "=" + v + "\n";
      r.reply(std::move(out));
    });
  });
  expect_gateway_error(fx.post("/rpc/meta", ""), 401, "application", "UNAUTHENTICATED");
  expect_gateway_error(fx.post("/rpc/meta", "", "Authorization: Bearer wrong\r\n"), 401, "application",
                       "UNAUTHENTICATED");
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const auto r = fx.post("/rpc/meta", "",
                         "Authorization: Bearer T\r\n"
                         "X-Tenant: acme\r\n"
                         "Grpc-Metadata-Region: eu\r\n"
                         "Traceparent: " +
                             tp +
                             "\r\n"
                             "X-Wheelrpc-Timeout-Ms: 5000\r\n"
                             "Keep-Alive: timeout=5\r\n"
                             "TE: trailers\r\n"
                             "Upgrade: h2c\r\n"
                             "Proxy-Authorization: Basic eA==\r\n"
                             "Grpc-Metadata-Connection: close\r\n"
                             "Content-Type: text/plain\r\n"
                             "User-Agent: test\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  // In the request's order; Host, Connection and Content-Length (sent by
  // the helper) are dropped with the rest.
  EXPECT_EQ(r.body, "authorization=Bearer T\nx-tenant=acme\nregion=eu\ntraceparent=" + tp + "\n");
  // The guarded untyped methods are reached the same way.
  EXPECT_EQ(fx.post("/rpc/echo", "hi", "Authorization: Bearer T\r\n").body, "hi");
}

TEST(AdminServer, JsonViewsShowMethodsConnectionsAndTimeouts) {
  AdminFixture fx;
  ASSERT_FALSE(fx.call("echo", "x"));
  CallOptions quick;
  quick.timeout = 50ms;
  quick.retries = 0;
  EXPECT_EQ(fx.call("sleep", "3000", quick), errc::timeout);
  auto status = json::parse(fx.get("/status.json").body).as_object();
  // (unknown), echo, sleep, and the health service's Check and Watch (every server serves them).
  EXPECT_EQ(status.at("server").at("methods").as_array().size(), 5u);
  const auto& client_methods = status.at("clients").at(0).at("methods").as_array();
  bool echo_seen = false;
  for (const auto& m : client_methods) {
    if (m.at("method") == "echo") {
      echo_seen = true;
      EXPECT_EQ(m.at("calls").to_number<std::uint64_t>(), 1u);
      EXPECT_EQ(m.at("latency_ms").at("total").at("count").to_number<std::uint64_t>(), 1u);
    }
  }
  EXPECT_TRUE(echo_seen);
  EXPECT_EQ(json::parse(fx.get("/status?format=json").body).at("process"), "wheelrpc");
  auto conns = json::parse(fx.get("/connections.json").body).at("connections").as_array();
  ASSERT_GE(conns.size(), 2u);  // the client's and the server's
  for (const auto& c : conns) {
    // The server sends no heartbeats (ServerOptions::keepalive.send_heartbeats off):
    // null, not a 0 that reads like a fault; the client sends them.
    if (c.at("side") == "server") {
      EXPECT_TRUE(c.at("heartbeats_sent").is_null()) << json::serialize(c);
    } else {
      EXPECT_TRUE(c.at("heartbeats_sent").is_number()) << json::serialize(c);
    }
  }
  const std::string timeouts_text = fx.get("/timeouts.json").body;
  // Numbers as the docs show them: a 50 ms budget is 50, not 5E1.
  EXPECT_NE(timeouts_text.find("\"budget_ms\":50,"), std::string::npos) << timeouts_text;
  EXPECT_EQ(timeouts_text.find("E1"), std::string::npos) << timeouts_text;
  auto timeouts = json::parse(timeouts_text).at("timeouts").as_array();
  ASSERT_GE(timeouts.size(), 1u);
  EXPECT_EQ(timeouts.at(0).at("method"), "sleep");
  // Each row names its peer for what it is: a client's provider, a server's caller.
  for (const auto& t : timeouts) {
    const bool server = t.at("side") == "server";
    EXPECT_EQ(t.at("provider").is_null(), server) << json::serialize(t);
    EXPECT_EQ(t.at("caller").is_null(), !server) << json::serialize(t);
  }
  EXPECT_EQ(timeouts.at(0).at("trace_id").as_string().size(), 32u);
  auto page = fx.get("/status");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("text/html"), std::string::npos);
  EXPECT_EQ(fx.get("/nothing-here").status, 404);
}

TEST(AdminServer, StatusCodesAreToldApartInMetricsAndOnStatus) {
  AdminFixture fx({}, [](wheelrpc::rpc::Server& server) {
    server.handle("login", [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      r.fail(wheelrpc::rpc::StatusCode::unauthenticated, "no token");
    });
    server.handle("parse", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      if (req.payload == "errc") {
        r.fail(errc::bad_request, "refused");
      } else {
        r.fail(wheelrpc::rpc::StatusCode::invalid_argument, "not a number");
      }
    });
  });
  EXPECT_TRUE(fx.call("login", ""));
  EXPECT_TRUE(fx.call("parse", "x"));
  EXPECT_TRUE(fx.call("parse", "errc"));
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        for (const auto& m : fx.server.method_stats()) {
          if (m.method == "parse") return m.calls() == 2;
        }
        return false;
      },
      10s));
  const auto m = samples(fx.get("/metrics").body);
  for (const char* side : {"server", "client"}) {
    const std::string family = std::string("wheelrpc_") + side + "_handled_total";
    EXPECT_EQ(m.at(family + "{method=\"login\",code=\"UNAUTHENTICATED\",reason=\"application\"}"), 1) << side;
    EXPECT_EQ(m.at(family + "{method=\"login\",code=\"INVALID_ARGUMENT\",reason=\"application\"}"), 0) << side;
    EXPECT_EQ(m.at(family + "{method=\"parse\",code=\"INVALID_ARGUMENT\",reason=\"application\"}"), 1) << side;
    EXPECT_EQ(m.at(family + "{method=\"parse\",code=\"INVALID_ARGUMENT\",reason=\"bad_request\"}"), 1) << side;
    EXPECT_EQ(m.at(family + "{method=\"parse\",code=\"UNKNOWN\",reason=\"other\"}"), 0) << side;
  }
  // /status.json: errors by status, each status by its details.
  const auto status = json::parse(fx.get("/status.json").body).as_object();
  std::map<std::string, json::object> server;
  for (const auto& method : status.at("server").at("methods").as_array()) {
    server[std::string(method.at("method").as_string())] = method.as_object();
  }
  EXPECT_EQ(json::serialize(server.at("login").at("errors")), R"({"UNAUTHENTICATED":1})");
  EXPECT_EQ(json::serialize(server.at("login").at("error_reasons")), R"({"UNAUTHENTICATED":{"application":1}})");
  EXPECT_EQ(json::serialize(server.at("parse").at("errors")), R"({"INVALID_ARGUMENT":2})");
  EXPECT_EQ(json::serialize(server.at("parse").at("error_reasons")),
            R"({"INVALID_ARGUMENT":{"bad_request":1,"application":1}})");
  EXPECT_EQ(server.at("parse").at("ok").to_number<int>(), 0);
}

TEST(AdminServer, PercentilesOnStatusNeverExceedTheMax) {
  AdminFixture fx;
  // A few calls: p50 and p99 fall in the slowest call's bucket, whose upper
  // bound interpolation would report (above every call).
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(fx.call("echo", "x"));
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        for (const auto& m : fx.server.method_stats()) {
          if (m.method == "echo") return m.calls() == 3;
        }
        return false;
      },
      10s));
  const auto status = json::parse(fx.get("/status.json").body).as_object();
  std::vector<const json::value*> methods = {&status.at("server").at("methods"),
                                             &status.at("clients").at(0).at("methods")};
  int checked = 0;
  for (const auto* list : methods) {
    for (const auto& m : list->as_array()) {
      if (m.at("method") != "echo") continue;
      for (const char* window : {"recent", "total"}) {
        const auto& l = m.at("latency_ms").at(window);
        SCOPED_TRACE(json::serialize(l));
        ASSERT_EQ(l.at("count").to_number<int>(), 3);
        const double max = l.at("max").to_number<double>();
        EXPECT_LE(l.at("p50").to_number<double>(), max);
        EXPECT_LE(l.at("p99").to_number<double>(), max);
        // At most 100 calls: p99 is the slowest one's, which is the max.
        EXPECT_EQ(l.at("p99").to_number<double>(), max);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4);
}

TEST(AdminServer, HostileRequestsGetAClearStatusAndTheServerGoesOn) {
  AdminFixture fx;
  const auto ep = fx.admin->local_endpoint();
  // A gateway body over the limit: refused from its Content-Length, before the body.
  auto big = http_exchange(ep, "POST /rpc/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n");
  EXPECT_EQ(big.status, 413) << big.headers;
  // Garbage on the port.
  const std::string tls_hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);  // a TLS ClientHello's start
  auto garbage = http_exchange(ep, tls_hello + " not http\r\n\r\n");
  EXPECT_EQ(garbage.status, 400) << garbage.headers;
  // A wrong verb on a known path, an unknown path, a method name with spaces.
  EXPECT_EQ(http_exchange(ep, http_request_text("DELETE", "/metrics")).status, 405);
  EXPECT_EQ(fx.get("/metrics/../../etc/passwd").status, 404);
  EXPECT_EQ(fx.post("/rpc/no%20such", "").status, 404);
  // Everything still works, and no call was made by any of that.
  EXPECT_EQ(fx.get("/health").status, 200);
  EXPECT_EQ(fx.post("/rpc/echo", "still here").body, "still here");
  EXPECT_EQ(fx.server.stats().requests, 2u);  // the 404 gateway call and the echo
}

TEST(AdminServer, ApplicationSectionsAndMetricsAreShown) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads(1);
  wheelrpc::admin::AdminServer admin(threads.io.get_executor(), timer);
  std::atomic<int> reads{0};
  admin.add_section("Registry", [&] {
    ++reads;
    return wheelrpc::admin::AdminServer::Values{{"lease", "7b"}, {"registrations in force", "1"}};
  });
  admin.add_metrics([](wheelrpc::admin::TextExposition& out) {
    out.begin("app_widgets_total", wheelrpc::admin::MetricType::counter, "Widgets made.");
    out.sample({}, 3);
  });
  ASSERT_FALSE(admin.listen(0));
  const auto status = json::parse(http_exchange(admin.local_endpoint(), http_request_text("GET", "/status.json")).body);
  const auto& section = status.at("sections").at(0);
  EXPECT_EQ(section.at("title"), "Registry");
  EXPECT_EQ(section.at("values").at(0).at("name"), "lease");
  EXPECT_EQ(section.at("values").at(0).at("value"), "7b");
  EXPECT_EQ(reads.load(), 1);
  EXPECT_EQ(status.at("server"), nullptr);
  const auto metrics = http_exchange(admin.local_endpoint(), http_request_text("GET", "/metrics")).body;
  EXPECT_NE(metrics.find("# TYPE app_widgets_total counter\napp_widgets_total 3\n"), std::string::npos) << metrics;
  // Without a server, health is the process's own: up while it answers.
  EXPECT_EQ(http_exchange(admin.local_endpoint(), http_request_text("GET", "/health")).status, 200);
  admin.stop();
}

TEST(AdminServer, ConfigEffectiveNamesTheLayerAndTheRuleThatSetEachSetting) {
  auto rules = std::make_shared<wheelrpc::rpc::CallRules>();
  rules->revision = 4712;
  rules->methods["echo"].timeout = wheelrpc::rpc::Overridden<std::chrono::milliseconds>{
      200ms, false, std::make_shared<const std::string>("runtime override /wheelrpc/echo/rules/slow rev 4712")};
  wheelrpc::rpc::ClientOptions co;
  co.call_defaults.retries = 4;
  co.rules = wheelrpc::rpc::static_rules(rules);
  AdminFixture fx({}, {}, co);
  ASSERT_FALSE(fx.call("echo", "x"));
  EXPECT_EQ(fx.client->stats().rule_updates, 1u);

  const auto reply = fx.get("/config/effective.json?method=echo");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto doc = json::parse(reply.body).as_object();
  EXPECT_EQ(doc.at("method").as_string(), "echo");
  const auto& client = doc.at("clients").at(0).as_object();
  EXPECT_EQ(client.at("client").as_string(), "test");
  EXPECT_EQ(client.at("rules_revision").as_int64(), 4712);
  std::map<std::string, json::object> by_name;
  for (const auto& s : client.at("settings").as_array()) by_name[std::string(s.at("name").as_string())] = s.as_object();
  ASSERT_TRUE(by_name.count("timeout_ms")) << reply.body;
  const auto& timeout = by_name["timeout_ms"];
  EXPECT_EQ(timeout.at("value").as_string(), "200");
  EXPECT_EQ(timeout.at("layer").as_string(), "runtime override");
  EXPECT_EQ(timeout.at("origin").as_string(), "runtime override /wheelrpc/echo/rules/slow rev 4712");
  EXPECT_EQ(timeout.at("layers").as_array().size(), 2u) << "the override, then the built-in 1000 ms";
  EXPECT_EQ(by_name["retries"].at("layer").as_string(), "client default");
  EXPECT_EQ(by_name["retries"].at("value").as_string(), "4");
  EXPECT_EQ(by_name["load_balance"].at("value").as_string(), "round_robin");

  // The page, and a clear refusal without a method.
  const auto page = fx.get("/config/effective?method=echo");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<title>wheelrpc effective config</title>"), std::string::npos);
  EXPECT_EQ(fx.get("/config/effective").status, 400);
  const auto metrics = samples(fx.get("/metrics").body);
  EXPECT_EQ(metrics.at("wheelrpc_client_rule_updates_total"), 1);
  EXPECT_EQ(metrics.at("wheelrpc_client_rule_errors_total"), 0);
  // Outlier detection and load reports (docs/load_balancing.md): nothing ejected here.
  EXPECT_EQ(metrics.at("wheelrpc_client_ejections_total"), 0);
  EXPECT_EQ(metrics.at("wheelrpc_client_ejected_providers"), 0);
  EXPECT_EQ(metrics.at("wheelrpc_client_load_reports_total"), 0);
}

TEST(AdminServer, RefusesANonLoopbackAddressUnlessAllowed) {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  wheelrpc::admin::AdminOptions o;
  o.address = "0.0.0.0";
  wheelrpc::admin::AdminServer admin(io.get_executor(), timer, o);
  EXPECT_EQ(admin.listen(0), boost::system::errc::invalid_argument);
  wheelrpc::admin::AdminOptions bad;
  bad.address = "not an address";
  wheelrpc::admin::AdminServer admin2(io.get_executor(), timer, bad);
  EXPECT_TRUE(admin2.listen(0));
}
