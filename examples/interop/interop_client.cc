// interop_client: gRPC's interop test cases, run by a wheelrpc Client against
// any grpc.testing.TestService server (interop_server, or another
// implementation's), as gRPC's interop-test-descriptions say. docs/grpc_interop.md.
//
//   interop_client --server_port=N [--server_host=H] [--test_case=NAME|all]
//                  [--use_tls=true|false] [--ca_file=PATH] [--server_host_override=NAME]
//                  [--protocol=native|grpc]
//
// Prints one line per case, "PASS <case>" or "FAIL <case>: <why>", and exits
// 0 only if every case it ran passed (1 otherwise, 2 on a usage error).
// Every wait is bounded: the calls' deadlines, and 30 s per case.
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "grpc/testing/test.wheelrpc.h"
#include "interop_payloads.h"
#include "support/flags.h"
#include "support/logging.h"
#include "support/run_main.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
namespace testing = grpc::testing;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;
using wheelrpc::interop::is_zeros;
using wheelrpc::interop::kEchoInitialKey;
using wheelrpc::interop::kEchoTrailingKey;
using wheelrpc::interop::zero_payload;
using wheelrpc::transport::Attachments;
using wheelrpc::transport::Compression;
using namespace std::chrono_literals;

namespace {

constexpr const char* kUsage =
    "usage: interop_client --server_port=N [--server_host=H] [--test_case=NAME|all] [--use_tls=true|false]\n"
    "                      [--ca_file=PATH] [--server_host_override=NAME] [--protocol=native|grpc]\n"
    "  gRPC's interop test cases against a grpc.testing.TestService server.\n"
    "  --server_host=H           host name or address (default 127.0.0.1)\n"
    "  --server_port=N           port (required)\n"
    "  --test_case=NAME|all      a case, or every case in turn (default large_unary)\n"
    "  --use_tls=BOOL            TLS (default false)\n"
    "  --use_test_ca=BOOL        accepted for gRPC's scripts; the CA is --ca_file's\n"
    "  --ca_file=PATH            CA the server's certificate must chain to (default: the build's test CA)\n"
    "  --server_host_override=N  the name the server's certificate must carry (default: --server_host)\n"
    "  --protocol=native|grpc    the wire protocol: grpc (default, gRPC over HTTP/2) or wheelrpc's native one\n"
    "Prints \"PASS <case>\" or \"FAIL <case>: <why>\" per case; exits 0 only if all passed.\n";

struct Config {
  std::string host = "127.0.0.1";
  int port = -1;
  std::string test_case = "large_unary";
  bool use_tls = false;
  std::string ca_file = WHEELRPC_INTEROP_CA;
  std::string host_override;
  rpc::WireProtocol protocol = rpc::WireProtocol::grpc;
};

const std::string kSpecialMessage = "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP \U0001F608\t\n";
const std::string kTrailingValue("\xab\xab\xab", 3);

/// A check that did not hold: the case fails with its text.
struct Mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void expect(bool ok, const std::string& what) {
  if (!ok) throw Mismatch(what);
}

std::string code_name(const error_code& ec) { return std::string(rpc::to_string(rpc::status_code_of(ec))); }

/// A failure's code is `want`, and its message holds `message` (the native
/// protocol's message adds the method and peer around the server's).
void expect_status(const error_code& ec, rpc::StatusCode want, const std::string& text, const std::string& what,
                   const std::string& message = {}) {
  expect(rpc::status_code_of(ec) == want, what + ": expected " + std::string(rpc::to_string(want)) + ", got " +
                                              code_name(ec) + (text.empty() ? "" : " (" + text + ")"));
  expect(message.empty() || text.find(message) != std::string::npos,
         what + ": the status message does not hold the one sent: '" + text + "'");
}

bool has(const Attachments& all, std::string_view key, const std::string& value) {
  for (const auto& [k, v] : all) {
    if (k == key && v == value) return true;
  }
  return false;
}

using Stub = testing::TestService::Stub;
using Duplex = rpc::TypedClientStream<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse>;

/// One case's tools: the stub and call options with a deadline.
struct Ctx {
  rpc::Client& client;
  Stub stub;
  rpc::CallOptions options() const {
    rpc::CallOptions o;
    o.timeout = 10s;  // a unary call's budget; a stream's opening
    o.wait_for_ready = true;
    return o;
  }
  rpc::CallOptions with_info() const {
    rpc::CallOptions o = options();
    o.reply_info = std::make_shared<rpc::ReplyInfo>();
    return o;
  }
};

testing::SimpleRequest large_request() {
  testing::SimpleRequest req;
  req.set_response_type(testing::COMPRESSABLE);
  req.set_response_size(314159);
  *req.mutable_payload() = zero_payload(271828);
  return req;
}

testing::StreamingOutputCallRequest duplex_request(int response_size, int payload_size) {
  testing::StreamingOutputCallRequest req;
  req.add_response_parameters()->set_size(response_size);
  *req.mutable_payload() = zero_payload(payload_size);
  return req;
}

// ---------------------------------------------------------------- the cases

awaitable<void> empty_unary(Ctx& c) {
  testing::Empty reply = co_await c.stub.async_EmptyCall(testing::Empty(), c.options(), use_awaitable);
  expect(reply.ByteSizeLong() == 0, "the reply is not empty");
}

awaitable<void> large_unary(Ctx& c) {
  auto reply = co_await c.stub.async_UnaryCall(large_request(), c.options(), use_awaitable);
  expect(is_zeros(reply.payload().body(), 314159), "the reply is not 314159 zero bytes");
}

awaitable<void> client_streaming(Ctx& c) {
  auto stream = co_await c.stub.async_StreamingInputCall(c.options(), use_awaitable);
  for (int size : {27182, 8, 1828, 45904}) {
    testing::StreamingInputCallRequest req;
    *req.mutable_payload() = zero_payload(size);
    co_await stream.async_write(req, use_awaitable);
  }
  co_await stream.async_writes_done(use_awaitable);
  auto reply = co_await stream.async_read(use_awaitable);
  co_await stream.async_finish(use_awaitable);
  expect(reply.has_value(), "no response");
  expect(reply->aggregated_payload_size() == 74922,
         "aggregated_payload_size " + std::to_string(reply->aggregated_payload_size()) + ", expected 74922");
}

awaitable<void> server_streaming(Ctx& c) {
  testing::StreamingOutputCallRequest req;
  const std::vector<int> sizes = {31415, 9, 2653, 58979};
  for (int size : sizes) req.add_response_parameters()->set_size(size);
  auto stream = co_await c.stub.async_StreamingOutputCall(req, c.options(), use_awaitable);
  std::size_t n = 0;
  while (auto reply = co_await stream.async_read(use_awaitable)) {
    expect(n < sizes.size(), "more than four responses");
    expect(is_zeros(reply->payload().body(), static_cast<std::size_t>(sizes[n])),
           "response " + std::to_string(n) + " is not " + std::to_string(sizes[n]) + " zero bytes");
    ++n;
  }
  co_await stream.async_finish(use_awaitable);
  expect(n == sizes.size(), std::to_string(n) + " responses, expected 4");
}

awaitable<void> ping_pong(Ctx& c) {
  auto stream = co_await c.stub.async_FullDuplexCall(c.options(), use_awaitable);
  const std::vector<std::pair<int, int>> rounds = {{31415, 27182}, {9, 8}, {2653, 1828}, {58979, 45904}};
  for (const auto& [response_size, payload_size] : rounds) {
    co_await stream.async_write(duplex_request(response_size, payload_size), use_awaitable);
    auto reply = co_await stream.async_read(use_awaitable);
    expect(reply.has_value(), "the stream ended before a response");
    expect(is_zeros(reply->payload().body(), static_cast<std::size_t>(response_size)),
           "a response is not " + std::to_string(response_size) + " zero bytes");
  }
  co_await stream.async_writes_done(use_awaitable);
  expect(!(co_await stream.async_read(use_awaitable)), "a fifth response");
  co_await stream.async_finish(use_awaitable);
}

awaitable<void> empty_stream(Ctx& c) {
  auto stream = co_await c.stub.async_FullDuplexCall(c.options(), use_awaitable);
  co_await stream.async_writes_done(use_awaitable);
  expect(!(co_await stream.async_read(use_awaitable)), "a response to no request");
  co_await stream.async_finish(use_awaitable);
}

awaitable<void> cancel_after_begin(Ctx& c) {
  auto stream = co_await c.stub.async_StreamingInputCall(c.options(), use_awaitable);
  stream.cancel();
  auto [ec] = co_await stream.async_finish(asio::as_tuple(use_awaitable));
  expect_status(ec, rpc::StatusCode::cancelled, stream.error_message(), "the cancelled stream");
}

awaitable<void> cancel_after_first_response(Ctx& c) {
  auto stream = co_await c.stub.async_FullDuplexCall(c.options(), use_awaitable);
  co_await stream.async_write(duplex_request(31415, 27182), use_awaitable);
  auto reply = co_await stream.async_read(use_awaitable);
  expect(reply && reply->payload().body().size() == 31415, "no first response of 31415 bytes");
  stream.cancel();
  auto [ec] = co_await stream.async_finish(asio::as_tuple(use_awaitable));
  expect_status(ec, rpc::StatusCode::cancelled, stream.error_message(), "the cancelled stream");
}

awaitable<void> timeout_on_sleeping_server(Ctx& c) {
  rpc::CallOptions o = c.options();
  o.stream_timeout = 1ms;  // bounds the opening too
  auto [ec, stream] = co_await c.stub.async_FullDuplexCall(o, asio::as_tuple(use_awaitable));
  std::string text = ec ? ec.message() : "";
  if (!ec) {
    testing::StreamingOutputCallRequest req;
    *req.mutable_payload() = zero_payload(27182);
    co_await stream.async_write(req, asio::as_tuple(use_awaitable));  // may fail: the deadline may be past
    auto [finished] = co_await stream.async_finish(asio::as_tuple(use_awaitable));
    ec = finished;
    text = stream.error_message();
  }
  expect_status(ec, rpc::StatusCode::deadline_exceeded, text, "the stream past its 1 ms deadline");
}

awaitable<void> custom_metadata(Ctx& c) {
  const std::string initial_value = "test_initial_metadata_value";
  rpc::CallOptions o = c.with_info();
  o.attachments.emplace_back(std::string(kEchoInitialKey), initial_value);
  o.attachments.emplace_back(std::string(kEchoTrailingKey), kTrailingValue);
  auto reply = co_await c.stub.async_UnaryCall(large_request(), o, use_awaitable);
  expect(reply.payload().body().size() == 314159, "the unary reply is not 314159 bytes");
  expect(has(o.reply_info->metadata, kEchoInitialKey, initial_value), "unary: no echoed initial metadata");
  expect(has(o.reply_info->trailers, kEchoTrailingKey, kTrailingValue), "unary: no echoed trailing metadata");

  rpc::CallOptions so = c.options();
  so.attachments = o.attachments;
  auto stream = co_await c.stub.async_FullDuplexCall(so, use_awaitable);
  co_await stream.async_write(duplex_request(314159, 271828), use_awaitable);
  co_await stream.async_writes_done(use_awaitable);
  auto first = co_await stream.async_read(use_awaitable);
  expect(first && first->payload().body().size() == 314159, "stream: no response of 314159 bytes");
  expect(!(co_await stream.async_read(use_awaitable)), "stream: a second response");
  co_await stream.async_finish(use_awaitable);
  expect(has(stream.initial_metadata(), kEchoInitialKey, initial_value), "stream: no echoed initial metadata");
  expect(has(stream.trailers(), kEchoTrailingKey, kTrailingValue), "stream: no echoed trailing metadata");
}

/// A unary call with response_status {code, message}, and a FullDuplexCall
/// with the same (when `stream`): both end with that status and message.
awaitable<void> echo_status(Ctx& c, int code, const std::string& message, bool stream) {
  testing::SimpleRequest req;
  req.mutable_response_status()->set_code(code);
  req.mutable_response_status()->set_message(message);
  rpc::CallOptions o = c.with_info();
  auto [ec, reply] = co_await c.stub.async_UnaryCall(req, o, asio::as_tuple(use_awaitable));
  expect_status(ec, static_cast<rpc::StatusCode>(code), o.reply_info->error_message, "unary", message);
  if (!stream) co_return;
  auto duplex = co_await c.stub.async_FullDuplexCall(c.options(), use_awaitable);
  testing::StreamingOutputCallRequest sreq;
  *sreq.mutable_response_status() = req.response_status();
  co_await duplex.async_write(sreq, asio::as_tuple(use_awaitable));
  co_await duplex.async_writes_done(asio::as_tuple(use_awaitable));
  auto [fec] = co_await duplex.async_finish(asio::as_tuple(use_awaitable));
  expect_status(fec, static_cast<rpc::StatusCode>(code), duplex.error_message(), "stream", message);
}

awaitable<void> status_code_and_message(Ctx& c) { co_await echo_status(c, 2, "test status message", true); }

awaitable<void> special_status_message(Ctx& c) { co_await echo_status(c, 2, kSpecialMessage, false); }

awaitable<void> unimplemented_method(Ctx& c) {
  rpc::CallOptions o = c.with_info();
  auto [ec, reply] = co_await c.stub.async_UnimplementedCall(testing::Empty(), o, asio::as_tuple(use_awaitable));
  expect_status(ec, rpc::StatusCode::unimplemented, o.reply_info->error_message, "UnimplementedCall");
}

awaitable<void> unimplemented_service(Ctx& c) {
  testing::UnimplementedService::Stub stub(c.client);
  rpc::CallOptions o = c.with_info();
  auto [ec, reply] = co_await stub.async_UnimplementedCall(testing::Empty(), o, asio::as_tuple(use_awaitable));
  expect_status(ec, rpc::StatusCode::unimplemented, o.reply_info->error_message, "UnimplementedService");
}

awaitable<void> client_compressed_unary(Ctx& c) {
  // The probe: expect_compressed, sent uncompressed: INVALID_ARGUMENT.
  testing::SimpleRequest req = large_request();
  req.mutable_expect_compressed()->set_value(true);
  rpc::CallOptions o = c.with_info();
  o.compression = Compression::identity;
  auto [ec, probe] = co_await c.stub.async_UnaryCall(req, o, asio::as_tuple(use_awaitable));
  expect_status(ec, rpc::StatusCode::invalid_argument, o.reply_info->error_message, "the probe");
  // Compressed, as expected. The requests set no response_compressed: the
  // replies must come uncompressed (gRPC's own client asserts it).
  o = c.with_info();
  o.compression = Compression::gzip;
  auto reply = co_await c.stub.async_UnaryCall(req, o, use_awaitable);
  expect(reply.payload().body().size() == 314159, "compressed: the reply is not 314159 bytes");
  expect(!o.reply_info->compressed, "compressed: the reply came compressed, and response_compressed was not set");
  // Uncompressed, as expected.
  req.mutable_expect_compressed()->set_value(false);
  o = c.with_info();
  o.compression = Compression::identity;
  reply = co_await c.stub.async_UnaryCall(req, o, use_awaitable);
  expect(reply.payload().body().size() == 314159, "uncompressed: the reply is not 314159 bytes");
  expect(!o.reply_info->compressed, "uncompressed: the reply came compressed");
}

awaitable<void> server_compressed_unary(Ctx& c) {
  for (bool compressed : {true, false}) {
    testing::SimpleRequest req = large_request();
    req.mutable_response_compressed()->set_value(compressed);
    rpc::CallOptions o = c.with_info();
    auto reply = co_await c.stub.async_UnaryCall(req, o, use_awaitable);
    expect(reply.payload().body().size() == 314159, "the reply is not 314159 bytes");
    expect(o.reply_info->compressed == compressed,
           compressed ? "the reply came uncompressed" : "the reply came compressed");
  }
}

awaitable<void> client_compressed_streaming(Ctx& c) {
  testing::StreamingInputCallRequest first;
  first.mutable_expect_compressed()->set_value(true);
  *first.mutable_payload() = zero_payload(27182);
  {  // The probe: expect_compressed, sent uncompressed: INVALID_ARGUMENT.
    auto probe = co_await c.stub.async_StreamingInputCall(c.options(), use_awaitable);
    co_await probe.async_write(first, rpc::WriteOptions{.no_compression = true}, asio::as_tuple(use_awaitable));
    co_await probe.async_writes_done(asio::as_tuple(use_awaitable));
    auto [ec] = co_await probe.async_finish(asio::as_tuple(use_awaitable));
    expect_status(ec, rpc::StatusCode::invalid_argument, probe.error_message(), "the probe");
  }
  rpc::CallOptions o = c.options();
  o.compression = Compression::gzip;
  auto stream = co_await c.stub.async_StreamingInputCall(o, use_awaitable);
  co_await stream.async_write(first, use_awaitable);
  testing::StreamingInputCallRequest second;
  second.mutable_expect_compressed()->set_value(false);
  *second.mutable_payload() = zero_payload(45904);
  co_await stream.async_write(second, rpc::WriteOptions{.no_compression = true}, use_awaitable);
  co_await stream.async_writes_done(use_awaitable);
  auto reply = co_await stream.async_read(use_awaitable);
  co_await stream.async_finish(use_awaitable);
  expect(reply && reply->aggregated_payload_size() == 73086, "aggregated_payload_size is not 73086");
}

awaitable<void> server_compressed_streaming(Ctx& c) {
  testing::StreamingOutputCallRequest req;
  auto* p = req.add_response_parameters();
  p->mutable_compressed()->set_value(true);
  p->set_size(31415);
  p = req.add_response_parameters();
  p->mutable_compressed()->set_value(false);
  p->set_size(92653);
  auto stream = co_await c.stub.async_StreamingOutputCall(req, c.options(), use_awaitable);
  auto a = co_await stream.async_read(use_awaitable);
  expect(a && a->payload().body().size() == 31415, "the first response is not 31415 bytes");
  expect(stream.last_read_compressed(), "the first response came uncompressed");
  auto b = co_await stream.async_read(use_awaitable);
  expect(b && b->payload().body().size() == 92653, "the second response is not 92653 bytes");
  expect(!stream.last_read_compressed(), "the second response came compressed");
  expect(!(co_await stream.async_read(use_awaitable)), "a third response");
  co_await stream.async_finish(use_awaitable);
}

struct Case {
  const char* name;
  awaitable<void> (*run)(Ctx&);
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"empty_unary", empty_unary},
      {"large_unary", large_unary},
      {"client_streaming", client_streaming},
      {"server_streaming", server_streaming},
      {"ping_pong", ping_pong},
      {"empty_stream", empty_stream},
      {"cancel_after_begin", cancel_after_begin},
      {"cancel_after_first_response", cancel_after_first_response},
      {"timeout_on_sleeping_server", timeout_on_sleeping_server},
      {"custom_metadata", custom_metadata},
      {"status_code_and_message", status_code_and_message},
      {"special_status_message", special_status_message},
      {"unimplemented_method", unimplemented_method},
      {"unimplemented_service", unimplemented_service},
      {"client_compressed_unary", client_compressed_unary},
      {"server_compressed_unary", server_compressed_unary},
      {"client_compressed_streaming", client_compressed_streaming},
      {"server_compressed_streaming", server_compressed_streaming},
  };
  return all;
}

/// Runs one case; its failure as text, or nothing. Never throws.
awaitable<std::optional<std::string>> guarded(Ctx& ctx, const Case& c) {
  try {
    co_await c.run(ctx);
  } catch (const Mismatch& e) {
    co_return std::string(e.what());
  } catch (const rpc::CallError& e) {
    co_return code_name(e.code()) + ": " + e.what();
  } catch (const std::exception& e) {
    co_return std::string(e.what());
  }
  co_return std::nullopt;
}

/// Runs one case within 30 s: the first to finish cancels the other, so a
/// case still waiting then is cancelled (its stream or call with it).
awaitable<std::optional<std::string>> run_case(Ctx& ctx, const Case& c) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer limit(co_await asio::this_coro::executor, 30s);
  auto first = co_await (guarded(ctx, c) || limit.async_wait(use_awaitable));
  if (first.index() == 1) co_return std::string("no outcome within 30 s");
  co_return std::get<0>(std::move(first));
}

awaitable<int> run_cases(rpc::Client& client, std::vector<const Case*> selected) {
  Ctx ctx{client, Stub(client)};
  int failed = 0;
  for (const Case* c : selected) {
    const auto why = co_await run_case(ctx, *c);
    if (why) {
      ++failed;
      std::printf("FAIL %s: %s\n", c->name, why->c_str());
    } else {
      std::printf("PASS %s\n", c->name);
    }
    std::fflush(stdout);
  }
  co_return failed;
}

std::optional<std::string> parse_bool(const std::string& v, bool& out) {
  if (v == "true" || v == "1") {
    out = true;
  } else if (v == "false" || v == "0") {
    out = false;
  } else {
    return "expected true or false, got '" + v + "'";
  }
  return std::nullopt;
}

std::optional<int> parse(int argc, char** argv, Config& cfg) {
  auto text = [](std::string& field) {
    return [&field](const std::string& v) {
      field = v;
      return std::optional<std::string>();
    };
  };
  bool ignored = false;
  wheelrpc::examples::FlagParser flags("interop_client", kUsage);
  flags.add_value("--server_host", text(cfg.host))
      .add_number("--server_port", 1, 65535, [&](long long v) { cfg.port = static_cast<int>(v); })
      .add_value("--test_case", text(cfg.test_case))
      .add_value("--use_tls", [&](const std::string& v) { return parse_bool(v, cfg.use_tls); })
      .add_value("--use_test_ca", [&](const std::string& v) { return parse_bool(v, ignored); })
      .add_value("--ca_file", text(cfg.ca_file))
      .add_value("--server_host_override", text(cfg.host_override))
      .add_value("--protocol", [&](const std::string& v) -> std::optional<std::string> {
        if (v == "native") {
          cfg.protocol = rpc::WireProtocol::native;
        } else if (v == "grpc") {
          cfg.protocol = rpc::WireProtocol::grpc;
        } else {
          return "expected native or grpc, got '" + v + "'";
        }
        return std::nullopt;
      });
  if (const auto status = flags.parse(argc, argv)) return status;
  if (cfg.port < 0) return flags.usage_error("--server_port is required");
  if (cfg.test_case != "all") {
    bool known = false;
    for (const auto& c : cases()) known = known || cfg.test_case == c.name;
    if (!known) return flags.usage_error("--test_case: unknown case '" + cfg.test_case + "'");
  }
  return std::nullopt;
}

int run(const Config& cfg) {
  wheelrpc::examples::install_loggers({"wheelrpc.rpc", "wheelrpc.transport", "wheelrpc.timer"});
  asio::io_context io;
  // The server's addresses (a name such as "localhost" is resolved once).
  asio::ip::tcp::resolver resolver(io);
  std::vector<asio::ip::tcp::endpoint> servers;
  for (const auto& entry : resolver.resolve(cfg.host, std::to_string(cfg.port))) {
    if (entry.endpoint().address().is_v4()) servers.push_back(entry.endpoint());
  }
  if (servers.empty()) throw std::runtime_error("no IPv4 address for --server_host '" + cfg.host + "'");
  servers.resize(1);

  rpc::ClientOptions options;
  options.protocol = cfg.protocol;
  if (cfg.use_tls) {
    options.tls.enabled = true;
    options.tls.ca_file = cfg.ca_file;
    options.tls.server_name = cfg.host_override.empty() ? cfg.host : cfg.host_override;
  }
  wheelrpc::timer::HashedWheelTimer timer;
  rpc::Client client(io.get_executor(), timer, servers, options);
  std::vector<const Case*> selected;
  for (const auto& c : cases()) {
    if (cfg.test_case == "all" || cfg.test_case == c.name) selected.push_back(&c);
  }
  int failed = -1;
  asio::co_spawn(io, run_cases(client, std::move(selected)), [&](std::exception_ptr e, int n) {
    failed = e ? 1 : n;
    client.close();  // then the io_context runs out of work
  });
  io.run();
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return wheelrpc::examples::run_main<Config>("interop_client", argc, argv, parse, run);
}
