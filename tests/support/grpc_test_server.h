#pragma once
// A real wheelrpc Server on 127.0.0.1 (port 0) with methods under gRPC
// paths, for tests that call it over HTTP/2 (support/h2_client.h) beside
// its native clients (the fixture's `echo` and `sleep`, support/rpc_fixture.h):
//   /test.Echo/Echo   unary: replies with the request; the request's
//                     x-token-bin metadata comes back as x-reply-bin
//   /test.Echo/Fail   unary: fails with NOT_FOUND and kSpecialMessage
//   /test.Echo/Hold   unary: held (as a ServerContext) until the test replies
//   /test.Echo/Count  server streaming: request "N SIZE", N messages of SIZE bytes
//   /test.Echo/Sum    client streaming: replies "MESSAGES BYTES" after the half-close
//   /test.Echo/Chat   bidi: echoes each message, ends after the half-close

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <wheelrpc/rpc/server_context.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/rpc/status_code.h>

#include "support/rpc_fixture.h"

namespace wheelrpc::test {

/// gRPC's interop "special status message".
inline constexpr std::string_view kSpecialMessage =
    "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP \U0001F608\t\n";

/// What the methods saw; thread-safe.
struct GrpcTestState {
  std::mutex mu;
  std::vector<std::shared_ptr<rpc::ServerContext>> held;  // /test.Echo/Hold
  std::vector<std::string> tokens;                        // x-token-bin values /test.Echo/Echo saw
  std::atomic<int> count_writes{0};                       // /test.Echo/Count: writes completed

  std::size_t held_count() {
    std::lock_guard lock(mu);
    return held.size();
  }
  std::shared_ptr<rpc::ServerContext> held_at(std::size_t i) {
    std::lock_guard lock(mu);
    return i < held.size() ? held[i] : nullptr;
  }
  /// Replies `payload` to every held call.
  void release_all(const std::string& payload = "done") {
    std::vector<std::shared_ptr<rpc::ServerContext>> all;
    {
      std::lock_guard lock(mu);
      all.swap(held);
    }
    for (auto& c : all) c->responder().reply(payload);
  }
};

namespace grpc_methods {

namespace asio = boost::asio;
inline constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

inline asio::awaitable<void> count(rpc::ServerStream s, std::shared_ptr<GrpcTestState> state) {
  auto [ec, request] = co_await s.async_read(kTuple);
  if (ec || !request) co_return;
  const auto space = request->find(' ');
  const int n = std::stoi(request->substr(0, space));
  const std::size_t size = std::stoul(request->substr(space + 1));
  for (int i = 0; i < n; ++i) {
    std::string m(size, static_cast<char>('a' + i % 26));
    auto [write_ec] = co_await s.async_write(std::move(m), kTuple);
    if (write_ec) co_return;
    state->count_writes.fetch_add(1);
  }
  s.finish();
}

inline asio::awaitable<void> sum(rpc::ServerStream s) {
  std::size_t messages = 0, bytes = 0;
  for (;;) {
    auto [ec, m] = co_await s.async_read(kTuple);
    if (ec) co_return;
    if (!m) break;
    ++messages;
    bytes += m->size();
  }
  auto [write_ec] = co_await s.async_write(std::to_string(messages) + " " + std::to_string(bytes), kTuple);
  if (!write_ec) s.finish();
}

inline asio::awaitable<void> chat(rpc::ServerStream s) {
  for (;;) {
    auto [ec, m] = co_await s.async_read(kTuple);
    if (ec) co_return;
    if (!m) break;
    auto [write_ec] = co_await s.async_write(std::move(*m), kTuple);
    if (write_ec) co_return;
  }
  s.finish();
}

}  // namespace grpc_methods

/// Registers the methods above on `server`.
inline void register_grpc_test_methods(rpc::Server& server, const std::shared_ptr<GrpcTestState>& state) {
  namespace asio = boost::asio;
  server.handle("/test.Echo/Echo", [state](rpc::Request req, rpc::Responder r) {
    transport::Attachments reply;
    for (const auto& [k, v] : req.attachments) {
      if (k == "x-token-bin") {
        std::lock_guard lock(state->mu);
        state->tokens.push_back(v);
        reply.emplace_back("x-reply-bin", v);
      }
    }
    r.reply(std::move(req.payload), std::move(reply));
  });
  server.handle("/test.Echo/Fail", [](rpc::Request, rpc::Responder r) {
    r.fail(rpc::StatusCode::not_found, std::string(kSpecialMessage));
  });
  server.handle("/test.Echo/Hold", [state](rpc::Request req, rpc::Responder r) {
    auto ctx = std::make_shared<rpc::ServerContext>(std::move(req), std::move(r));
    std::lock_guard lock(state->mu);
    state->held.push_back(std::move(ctx));
  });
  server.handle_stream("/test.Echo/Count", [state](rpc::ServerStream s) {
    auto ex = s.get_executor();
    asio::co_spawn(ex, grpc_methods::count(std::move(s), state), asio::detached);
  });
  server.handle_stream("/test.Echo/Sum", [](rpc::ServerStream s) {
    auto ex = s.get_executor();
    asio::co_spawn(ex, grpc_methods::sum(std::move(s)), asio::detached);
  });
  server.handle_stream("/test.Echo/Chat", [](rpc::ServerStream s) {
    auto ex = s.get_executor();
    asio::co_spawn(ex, grpc_methods::chat(std::move(s)), asio::detached);
  });
}

/// An RpcFixture (native `echo` and `sleep`, a native client) with the
/// methods above. The held calls are answered before the server stops.
struct GrpcFixture {
  explicit GrpcFixture(rpc::ServerOptions options = {})
      : state(std::make_shared<GrpcTestState>()),
        rpc(std::move(options), {}, 2, [s = state](rpc::Server& server) { register_grpc_test_methods(server, s); }) {}
  ~GrpcFixture() { state->release_all(); }
  std::uint16_t port() const { return rpc.server.local_endpoint().port(); }

  std::shared_ptr<GrpcTestState> state;
  RpcFixture rpc;
};

}  // namespace wheelrpc::test
