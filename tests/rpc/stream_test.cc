// Streams on loopback (docs/streams.md): the three kinds, half-close and
// final status, flow control, the four timers, cancellation, limits and the
// exactly-once end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/status_code.h>

#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;
using wheelrpc::rpc::CallError;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::StreamTimer;
using wheelrpc::test::RpcFixture;

namespace {

/// Spawns `f` on `ex`; the future is ready when it returns (or throws).
template <class F>
auto spawn(asio::any_io_executor ex, F f) {
  return asio::co_spawn(ex, std::move(f), asio::use_future);
}

/// The streaming methods the tests call.
void register_stream_methods(wheelrpc::rpc::Server& server) {
  // bidi: echoes each message; ends when the client half-closes.
  server.handle_stream("chat", [](ServerStream s) {
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          while (auto m = co_await s.async_read(use_awaitable)) co_await s.async_write(std::move(*m), use_awaitable);
          s.finish();
        },
        asio::detached);
  });
  // server streaming: the request is "N"; answers "0" .. "N-1".
  server.handle_stream("count", [](ServerStream s) {
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          auto req = co_await s.async_read(use_awaitable);
          const int n = req ? std::stoi(*req) : 0;
          for (int i = 0; i < n; ++i) co_await s.async_write(std::to_string(i), use_awaitable);
          s.finish();
        },
        asio::detached);
  });
  // client streaming: adds up what it reads, answers once.
  server.handle_stream("sum", [](ServerStream s) {
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          long long sum = 0;
          while (auto m = co_await s.async_read(use_awaitable)) sum += std::stoll(*m);
          co_await s.async_write(std::to_string(sum), use_awaitable);
          s.add_trailer("count", "done");
          s.finish();
        },
        asio::detached);
  });
  server.handle_stream("fail", [](ServerStream s) { s.finish(StatusCode::permission_denied, "not for you"); });
}

struct StreamFixture : RpcFixture {
  explicit StreamFixture(wheelrpc::rpc::ServerOptions so = {}, wheelrpc::rpc::ClientOptions co = {})
      : RpcFixture(so, co, 2, register_stream_methods) {}
  asio::any_io_executor ex() { return threads.io.get_executor(); }
};

TEST(Stream, BidiEchoesEveryMessage) {
  StreamFixture fx;
  auto f = spawn(fx.ex(), [&]() -> awaitable<std::vector<std::string>> {
    auto s = co_await fx.client->async_open_stream("chat", {}, use_awaitable);
    std::vector<std::string> got;
    for (int i = 0; i < 100; ++i) {
      co_await s.async_write("m" + std::to_string(i), use_awaitable);
      auto m = co_await s.async_read(use_awaitable);
      got.push_back(m.value_or("<end>"));
    }
    co_await s.async_writes_done(use_awaitable);
    auto end = co_await s.async_read(use_awaitable);
    EXPECT_FALSE(end.has_value());
    co_await s.async_finish(use_awaitable);
    EXPECT_EQ(s.info().messages_sent, 100u);
    EXPECT_EQ(s.info().messages_received, 100u);
    co_return got;
  });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  auto got = f.get();
  ASSERT_EQ(got.size(), 100u);
  EXPECT_EQ(got.front(), "m0");
  EXPECT_EQ(got.back(), "m99");
  const auto st = fx.server.stats().streams;
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().streams.ends.ok == 1; }, 10s));
  EXPECT_EQ(st.opened, 1u);
  EXPECT_EQ(fx.client->stats().streams.ends.ok, 1u);
}

TEST(Stream, ServerStreamingSendsAllThenEnds) {
  StreamFixture fx;
  auto f = spawn(fx.ex(), [&]() -> awaitable<int> {
    auto s = co_await fx.client->async_open_stream("count", {}, use_awaitable);
    co_await s.async_write("1000", use_awaitable);
    co_await s.async_writes_done(use_awaitable);
    int n = 0;
    while (auto m = co_await s.async_read(use_awaitable)) {
      EXPECT_EQ(*m, std::to_string(n));
      ++n;
    }
    co_await s.async_finish(use_awaitable);
    co_return n;
  });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(f.get(), 1000);
}

TEST(Stream, ClientStreamingAnswersOnceWithTrailers) {
  StreamFixture fx;
  auto f = spawn(fx.ex(), [&]() -> awaitable<std::string> {
    auto s = co_await fx.client->async_open_stream("sum", {}, use_awaitable);
    for (int i = 1; i <= 100; ++i) co_await s.async_write(std::to_string(i), use_awaitable);
    co_await s.async_writes_done(use_awaitable);
    auto m = co_await s.async_read(use_awaitable);
    co_await s.async_finish(use_awaitable);
    co_return m.value_or("<none>");
  });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(f.get(), "5050");
}

TEST(Stream, ServerErrorReachesFinishAndReads) {
  StreamFixture fx;
  auto f = spawn(fx.ex(), [&]() -> awaitable<std::pair<error_code, std::string>> {
    auto s = co_await fx.client->async_open_stream("fail", {}, use_awaitable);
    auto [ec] = co_await s.async_finish(asio::as_tuple(use_awaitable));
    auto [rec, m] = co_await s.async_read(asio::as_tuple(use_awaitable));
    EXPECT_EQ(rec, ec);
    co_return std::make_pair(ec, s.error_message());
  });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  auto [ec, message] = f.get();
  EXPECT_EQ(ec, StatusCode::permission_denied);
  EXPECT_NE(message.find("not for you"), std::string::npos) << message;
}

TEST(Stream, UnknownMethodFailsTheOpen) {
  StreamFixture fx;
  auto f = spawn(fx.ex(), [&]() -> awaitable<std::pair<error_code, std::string>> {
    auto [ec, s] = co_await fx.client->async_open_stream("nope", {}, asio::as_tuple(use_awaitable));
    co_return std::make_pair(ec, s.error_message());
  });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  auto [ec, message] = f.get();
  EXPECT_EQ(ec, errc::method_not_found);
  EXPECT_NE(message.find("nope"), std::string::npos) << message;
}

TEST(Stream, UseAwaitableThrowsCallErrorWithTheMessage) {
  StreamFixture fx;
  auto f = spawn(fx.ex(), [&]() -> awaitable<std::string> {
    auto s = co_await fx.client->async_open_stream("fail", {}, use_awaitable);
    try {
      co_await s.async_finish(use_awaitable);
    } catch (const CallError& e) {
      co_return std::string(e.what());
    }
    co_return std::string("no throw");
  });
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  EXPECT_NE(f.get().find("not for you"), std::string::npos);
}

}  // namespace
