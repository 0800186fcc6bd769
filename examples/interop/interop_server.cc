// interop_server: gRPC's interop test server (grpc.testing.TestService) on
// wheelrpc, as gRPC's interop-test-descriptions require of a server: payload
// sizes, response_status, metadata echo, compressed requests and responses,
// response intervals. docs/grpc_interop.md.
//
//   interop_server [--port=N] [--use_tls=true|false] [--tls_cert_file=PATH] [--tls_key_file=PATH]
//
// Prints "listening on 127.0.0.1:PORT" once it serves; SIGINT or SIGTERM
// shuts it down gracefully (Server::async_shutdown) and it exits 0.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
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
using wheelrpc::interop::kEchoInitialKey;
using wheelrpc::interop::kEchoTrailingKey;
using wheelrpc::interop::zero_payload;
using wheelrpc::transport::Compression;

namespace {

constexpr const char* kUsage =
    "usage: interop_server [--port=N] [--use_tls=true|false] [--tls_cert_file=PATH] [--tls_key_file=PATH]\n"
    "  gRPC's interop test server (grpc.testing.TestService).\n"
    "  --port=N              port on 127.0.0.1 (0: a free one; default 0)\n"
    "  --use_tls=BOOL        serve TLS (default false)\n"
    "  --tls_cert_file=PATH  server certificate chain (default: the build's test certificate)\n"
    "  --tls_key_file=PATH   its private key (default: the build's test key)\n"
    "Prints \"listening on 127.0.0.1:PORT\" when ready; SIGINT/SIGTERM stop it gracefully.\n";

struct Config {
  int port = 0;
  bool use_tls = false;
  std::string cert_file = WHEELRPC_INTEROP_CERT;
  std::string key_file = WHEELRPC_INTEROP_KEY;
};

using OutputStream = rpc::TypedServerStream<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse>;
using InputStream = rpc::TypedServerStream<testing::StreamingInputCallRequest, testing::StreamingInputCallResponse>;

/// A request's response_status, as the error that ends the call (none for OK).
void check_status(const testing::EchoStatus& status) {
  if (status.code() == 0) return;
  if (status.code() < 0 || status.code() > 16) {
    throw rpc::StatusError(rpc::StatusCode::invalid_argument, "response_status.code must be 0..16");
  }
  throw rpc::StatusError(static_cast<rpc::StatusCode>(status.code()), status.message());
}

/// gRPC's interop server compares a request's compression with its
/// expect_compressed, when it is set.
void check_compression(bool has_expectation, bool expected, bool compressed) {
  if (has_expectation && expected != compressed) {
    throw rpc::StatusError(rpc::StatusCode::invalid_argument,
                           expected ? "the request was expected compressed and came uncompressed"
                                    : "the request was expected uncompressed and came compressed");
  }
}

void check_payload_type(testing::PayloadType type) {
  if (type != testing::COMPRESSABLE) {
    throw rpc::StatusError(rpc::StatusCode::invalid_argument, "only the COMPRESSABLE payload type is supported");
  }
}

/// The messages answering one request's response_parameters: each after its
/// interval (a timer on the stream's executor, not a sleep), compressed when
/// its `compressed` says true (the stream compresses with gzip then; the
/// others, `compressed` false or not set, go with WriteOptions::no_compression),
/// as gRPC's interop server does for server_compressed_streaming.
asio::awaitable<void> answer(const testing::StreamingOutputCallRequest& req, OutputStream& stream) {
  check_payload_type(req.response_type());
  bool any_compressed = false;
  for (const auto& p : req.response_parameters()) any_compressed = any_compressed || p.compressed().value();
  if (any_compressed) stream.set_compression(Compression::gzip);
  asio::steady_timer interval(co_await asio::this_coro::executor);
  for (const auto& p : req.response_parameters()) {
    if (p.interval_us() > 0) {
      interval.expires_after(std::chrono::microseconds(p.interval_us()));
      co_await interval.async_wait(asio::use_awaitable);
    }
    testing::StreamingOutputCallResponse response;
    *response.mutable_payload() = zero_payload(p.size());
    co_await stream.async_write(response, rpc::WriteOptions{.no_compression = !p.compressed().value()},
                                asio::use_awaitable);
  }
}

/// The echo of x-grpc-test-echo-initial and x-grpc-test-echo-trailing-bin:
/// into the stream's initial metadata and its trailers.
void echo_stream_metadata(OutputStream& stream) {
  if (const auto v = stream.find_metadata(kEchoInitialKey)) {
    stream.add_initial_metadata(std::string(kEchoInitialKey), std::string(*v));
  }
  if (const auto v = stream.find_metadata(kEchoTrailingKey)) {
    stream.add_trailer(std::string(kEchoTrailingKey), std::string(*v));
  }
}

class TestServiceImpl : public testing::TestService::Service {
  asio::awaitable<testing::Empty> EmptyCall(rpc::ServerContext&, const testing::Empty&) override {
    co_return testing::Empty();
  }

  asio::awaitable<testing::SimpleResponse> UnaryCall(rpc::ServerContext& ctx,
                                                     const testing::SimpleRequest& req) override {
    // The echoed metadata first: gRPC's servers send it with a failure too.
    if (const std::string* v = ctx.find_metadata(kEchoInitialKey)) {
      ctx.add_reply_metadata(std::string(kEchoInitialKey), *v);
    }
    if (const std::string* v = ctx.find_metadata(kEchoTrailingKey)) {
      ctx.add_trailing_metadata(std::string(kEchoTrailingKey), *v);
    }
    check_compression(req.has_expect_compressed(), req.expect_compressed().value(), ctx.request_compressed());
    check_status(req.response_status());
    check_payload_type(req.response_type());
    // As gRPC's interop server: gzip when response_compressed says true,
    // uncompressed otherwise (false, or not set: client_compressed_unary's
    // compressed requests do not ask for a compressed reply, and gRPC's
    // client fails the case on one), on either wire.
    ctx.set_compression(req.response_compressed().value() ? Compression::gzip : Compression::identity);
    testing::SimpleResponse response;
    *response.mutable_payload() = zero_payload(req.response_size());
    co_return response;
  }

  asio::awaitable<testing::SimpleResponse> CacheableUnaryCall(rpc::ServerContext& ctx,
                                                              const testing::SimpleRequest&) override {
    // The time in ns as decimal text, and headers a caching proxy honours.
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch());
    ctx.add_reply_metadata("cache-control", "max-age=60, public");
    testing::SimpleResponse response;
    response.mutable_payload()->set_type(testing::COMPRESSABLE);
    response.mutable_payload()->set_body(std::to_string(ns.count()));
    co_return response;
  }

  asio::awaitable<void> StreamingOutputCall(const testing::StreamingOutputCallRequest& req,
                                            OutputStream& stream) override {
    check_status(req.response_status());
    co_await answer(req, stream);
  }

  asio::awaitable<testing::StreamingInputCallResponse> StreamingInputCall(InputStream& stream) override {
    // Its one response asks for no compression (client_compressed_streaming).
    stream.set_compression(Compression::identity);
    int total = 0;
    while (auto req = co_await stream.async_read(asio::use_awaitable)) {
      check_compression(req->has_expect_compressed(), req->expect_compressed().value(), stream.last_read_compressed());
      total += static_cast<int>(req->payload().body().size());
    }
    testing::StreamingInputCallResponse response;
    response.set_aggregated_payload_size(total);
    co_return response;
  }

  asio::awaitable<void> FullDuplexCall(OutputStream& stream) override {
    echo_stream_metadata(stream);
    while (auto req = co_await stream.async_read(asio::use_awaitable)) {
      check_status(req->response_status());
      co_await answer(*req, stream);
    }
  }

  asio::awaitable<void> HalfDuplexCall(OutputStream& stream) override {
    echo_stream_metadata(stream);
    std::vector<testing::StreamingOutputCallRequest> requests;
    while (auto req = co_await stream.async_read(asio::use_awaitable)) {
      check_status(req->response_status());
      requests.push_back(std::move(*req));
    }
    for (const auto& req : requests) co_await answer(req, stream);
  }
  // UnimplementedCall is left to the base: UNIMPLEMENTED.
};

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
  wheelrpc::examples::FlagParser flags("interop_server", kUsage);
  flags.add_number("--port", 0, 65535, [&](long long v) { cfg.port = static_cast<int>(v); })
      .add_value("--use_tls", [&](const std::string& v) { return parse_bool(v, cfg.use_tls); })
      .add_value("--tls_cert_file",
                 [&](const std::string& v) {
                   cfg.cert_file = v;
                   return std::optional<std::string>();
                 })
      .add_value("--tls_key_file", [&](const std::string& v) {
        cfg.key_file = v;
        return std::optional<std::string>();
      });
  return flags.parse(argc, argv);
}

int run(const Config& cfg) {
  wheelrpc::examples::install_loggers({"wheelrpc.rpc", "wheelrpc.transport", "wheelrpc.timer"});
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  rpc::ServerOptions options;
  if (cfg.use_tls) {
    options.tls.enabled = true;
    options.tls.cert_file = cfg.cert_file;
    options.tls.key_file = cfg.key_file;
  }
  TestServiceImpl service;
  rpc::Server server(io.get_executor(), timer, options);
  server.add_service(service);
  std::string why;
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(cfg.port));
  if (const auto ec = server.listen(endpoint, why)) {
    std::fprintf(stderr, "interop_server: cannot listen on 127.0.0.1:%d: %s\n", cfg.port,
                 why.empty() ? ec.message().c_str() : why.c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(server.local_endpoint().port()));
  std::fflush(stdout);

  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    std::fprintf(stderr, "interop_server: signal %d, shutting down\n", signo);
    // Calls and streams in flight get 2 s; the io_context then runs out of work.
    server.async_shutdown(std::chrono::seconds(2), [](const boost::system::error_code&) {});
  });
  io.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return wheelrpc::examples::run_main<Config>("interop_server", argc, argv, parse, run);
}
