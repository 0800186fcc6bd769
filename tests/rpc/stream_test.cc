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
#include <cstdio>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/status_code.h>

#include "stream/stream_core.h"
#include "stream/stream_table.h"
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

std::atomic<int> silent_cancelled{0};
std::mutex deaf_mu;
std::vector<ServerStream> deaf_streams;  // held open, never read

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
  // Writes 4 KiB messages as fast as the client's credit allows, until cancelled.
  server.handle_stream("flood", [](ServerStream s) {
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          for (;;) {
            auto [ec] = co_await s.async_write(std::string(4096, 'f'), asio::as_tuple(use_awaitable));
            if (ec) break;
          }
        },
        asio::detached);
  });
  server.handle_stream("fail", [](ServerStream s) { s.finish(StatusCode::permission_denied, "not for you"); });
  server.handle_stream("deaf", [](ServerStream s) {
    std::lock_guard lock(deaf_mu);
    deaf_streams.push_back(std::move(s));
  });
  // Reads until the stream ends, never writes; notes whether it saw the stream cancelled.
  server.handle_stream("silent", [](ServerStream s) {
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          for (;;) {
            auto [ec, m] = co_await s.async_read(asio::as_tuple(use_awaitable));
            if (ec || !m) break;
          }
          if (s.cancelled()) silent_cancelled.fetch_add(1);
          s.finish();
        },
        asio::detached);
  });
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

/// Opens a stream and waits for it (bounded).
ClientStream open(wheelrpc::rpc::Client& client, const std::string& method, CallOptions o = {}) {
  auto f = client.async_open_stream(method, std::move(o), asio::use_future);
  if (f.wait_for(20s) != std::future_status::ready) throw std::runtime_error("open: no completion in 20 s");
  return f.get();
}

/// The error a stream's end completes with (none on success).
error_code end_of(ClientStream& s) {
  auto p = std::make_shared<std::promise<error_code>>();
  auto f = p->get_future();
  s.async_finish([p](error_code ec) { p->set_value(ec); });
  if (f.wait_for(20s) != std::future_status::ready) return make_error_code(errc::server_error);
  return f.get();
}

/// An open's outcome, whatever it is.
std::future<std::pair<error_code, ClientStream>> try_open(wheelrpc::rpc::Client& client, const std::string& method,
                                                          CallOptions o = {}) {
  auto p = std::make_shared<std::promise<std::pair<error_code, ClientStream>>>();
  auto f = p->get_future();
  client.async_open_stream(method, std::move(o), [p](error_code ec, ClientStream s) {
    p->set_value({ec, std::move(s)});
  });
  return f;
}

/// A read's outcome.
std::future<std::pair<error_code, std::optional<std::string>>> try_read(ClientStream& s) {
  auto p = std::make_shared<std::promise<std::pair<error_code, std::optional<std::string>>>>();
  auto f = p->get_future();
  s.async_read([p](error_code ec, std::optional<std::string> m) { p->set_value({ec, std::move(m)}); });
  return f;
}

TEST(Stream, ExplicitCancelEndsBothSides) {
  silent_cancelled = 0;
  StreamFixture fx;
  auto s = open(*fx.client, "silent");
  auto read = try_read(s);
  s.cancel();
  ASSERT_EQ(read.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(read.get().first, asio::error::operation_aborted);
  EXPECT_EQ(end_of(s), asio::error::operation_aborted);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return silent_cancelled.load() == 1; }, 20s));
  EXPECT_EQ(fx.client->stats().streams.ends.cancelled, 1u);
}

TEST(Stream, TheTokensCancellationSlotCancelsTheStream) {
  silent_cancelled = 0;
  StreamFixture fx;
  auto s = open(*fx.client, "silent");
  asio::cancellation_signal signal;
  std::promise<error_code> got;
  s.async_read(asio::bind_cancellation_slot(signal.slot(),
                                            [&](error_code ec, std::optional<std::string>) { got.set_value(ec); }));
  // Emitted on the stream's executor, as a coroutine's cancellation would be.
  asio::post(fx.ex(), [&] { signal.emit(asio::cancellation_type::terminal); });
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(f.get(), asio::error::operation_aborted);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return silent_cancelled.load() == 1; }, 20s));
}

TEST(Stream, DroppingEveryHandleCancelsTheStream) {
  silent_cancelled = 0;
  StreamFixture fx;
  { auto s = open(*fx.client, "silent"); }
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return silent_cancelled.load() == 1; }, 20s));
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().streams.open == 0; }, 20s));
}

TEST(Stream, AServerWithoutStreamsAnswersUnimplemented) {
  wheelrpc::rpc::ServerOptions so;
  so.streams.max_per_connection = 0;  // announces no stream window in its HELLO, as a server before streams
  StreamFixture fx(so);
  auto f = try_open(*fx.client, "chat");
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  auto [ec, s] = f.get();
  EXPECT_EQ(ec, StatusCode::unimplemented);
  EXPECT_NE(s.error_message().find("speaks no streams"), std::string::npos) << s.error_message();
}

TEST(Stream, ThePerConnectionLimitRefusesTheNextStream) {
  wheelrpc::rpc::ServerOptions so;
  so.streams.max_per_connection = 2;
  StreamFixture fx(so);
  auto a = open(*fx.client, "silent");
  auto b = open(*fx.client, "silent");
  CallOptions o;
  o.retries = 0;
  auto f = try_open(*fx.client, "silent", o);
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  auto [ec, s] = f.get();
  EXPECT_EQ(ec, errc::resource_exhausted);
  EXPECT_NE(s.error_message().find("max_per_connection"), std::string::npos) << s.error_message();
  EXPECT_EQ(fx.server.stats().streams_refused, 1u);
  a.cancel();
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().streams.open == 1; }, 20s));
  auto c = open(*fx.client, "silent");  // room again
  EXPECT_TRUE(c.valid());
}

TEST(Stream, AnOfflineServerRefusesNewStreams) {
  StreamFixture fx;
  auto open_before = open(*fx.client, "silent");
  fx.server.set_online(false);
  CallOptions o;
  o.retries = 0;
  auto f = try_open(*fx.client, "silent", o);
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  auto [ec, s] = f.get();
  EXPECT_EQ(ec, errc::unavailable);
  EXPECT_NE(s.error_message().find("offline"), std::string::npos) << s.error_message();
  EXPECT_FALSE(open_before.info().ended) << "offline ends no stream already open";
}

TEST(Stream, AGracefulShutdownLetsStreamsRunThenEndsThem) {
  StreamFixture fx;
  auto chat = open(*fx.client, "chat");
  auto silent = open(*fx.client, "silent");
  auto done_p = std::make_shared<std::promise<error_code>>();
  auto done = done_p->get_future();
  fx.server.async_shutdown(300ms, [done_p](error_code ec) { done_p->set_value(ec); });
  // Within the grace, an open stream goes on.
  auto w = chat.async_write("during the grace", asio::use_future);
  ASSERT_EQ(w.wait_for(20s), std::future_status::ready);
  auto r = chat.async_read(asio::use_future);
  ASSERT_EQ(r.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(r.get().value_or(""), "during the grace");
  // Past it, the streams still open end with UNAVAILABLE and a clear message.
  EXPECT_EQ(end_of(silent), errc::unavailable);
  EXPECT_NE(silent.error_message().find("grace"), std::string::npos) << silent.error_message();
  ASSERT_EQ(done.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(done.get(), errc::timeout) << "the drain ended before the streams did";
  EXPECT_GE(fx.server.stats().streams.ends.shutdown, 2u);
}

TEST(Stream, ABusyStreamDoesNotStarveTheCallsOfItsConnection) {
  StreamFixture fx;
  auto s = open(*fx.client, "flood");
  std::atomic<long> read{0};
  std::promise<void> chain_done;  // the last read's handler ran
  std::function<void()> next = [&] {
    s.async_read([&](error_code ec, std::optional<std::string> m) {
      if (ec || !m) return chain_done.set_value();
      read.fetch_add(1);
      next();
    });
  };
  asio::post(fx.ex(), next);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return read.load() > 100; }, 20s));
  // Calls on the same connection, while the stream keeps it busy.
  CallOptions o;
  o.timeout = 10s;
  o.retries = 0;
  for (int i = 0; i < 200; ++i) {
    auto out = wheelrpc::test::call_and_wait(*fx.client, "echo", "call " + std::to_string(i), o);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    ASSERT_EQ(out.response.payload, "call " + std::to_string(i));
  }
  const long during = read.load();
  EXPECT_GT(during, 100);
  EXPECT_EQ(fx.client->connections().size(), 1u) << "the calls and the stream share one connection";
  s.cancel();
  EXPECT_EQ(chain_done.get_future().wait_for(20s), std::future_status::ready);
}

TEST(Stream, ASlowReaderBoundsWhatTheWriterSends) {
  wheelrpc::rpc::ServerOptions so;
  so.streams.window = 16 * 1024;
  StreamFixture fx(so);
  CallOptions o;
  o.stall_timeout = 300ms;               // ends the wait for credit that never comes
  auto s = open(*fx.client, "deaf", o);  // never reads: never grants more credit
  const auto sent_before = fx.client->connections().at(0).bytes_out;
  std::atomic<int> written{0};
  std::promise<error_code> stalled;
  // Writes 4 KiB messages back to back: only what the window allows completes.
  std::function<void()> next = [&] {
    s.async_write(std::string(4096, 'x'), [&](error_code ec) {
      if (ec) return stalled.set_value(ec);
      written.fetch_add(1);
      next();
    });
  };
  asio::post(fx.ex(), next);
  auto f = stalled.get_future();
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::write_stall);
  // 3 x (4096 + 27) fit in 16 KiB, the fourth does not: it waited, unsent.
  EXPECT_EQ(written.load(), 3);
  EXPECT_LE(fx.client->connections().at(0).bytes_out - sent_before, 16u * 1024 + 64);
  std::lock_guard lock(deaf_mu);
  deaf_streams.clear();
}

/// Resident memory of this process (bytes), from /proc/self/statm.
std::size_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%lu %lu", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

TEST(Stream, AWriterToAReaderThatStoppedHoldsAboutTheWindowInMemory) {
  wheelrpc::rpc::ServerOptions so;
  so.streams.window = 1 << 20;  // 1 MiB
  StreamFixture fx(so);
  CallOptions o;
  o.stall_timeout = 300ms;
  auto s = open(*fx.client, "deaf", o);
  // 1 MiB messages, as fast as their writes complete, 64 MiB in all: without
  // flow control every write would complete at once and the connection would
  // queue all of it.
  const std::size_t before = rss_bytes();
  std::atomic<int> written{0};
  std::promise<error_code> stalled;
  std::function<void()> next = [&] {
    if (written.load() == 64) return stalled.set_value({});
    s.async_write(std::string(1 << 20, 'x'), [&](error_code ec) {
      if (ec) return stalled.set_value(ec);
      written.fetch_add(1);
      next();
    });
  };
  asio::post(fx.ex(), next);
  auto f = stalled.get_future();
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::write_stall);
  const std::size_t after = rss_bytes();
  EXPECT_LE(written.load(), 1) << "writes completed past the window";
  // The window, a message waiting, and the reader's buffers: a few MiB, not 64.
  EXPECT_LT(after > before ? after - before : 0, std::size_t{16} << 20)
      << "RSS grew from " << before << " to " << after;
  std::lock_guard lock(deaf_mu);
  deaf_streams.clear();
}
}  // namespace

// What the streams of one side share (stream/stream_side.h): one StreamSide
// per client, or per server connection, pointed to by each stream instead of
// copied into it; the connection's table hands out the live one and keeps
// none itself, so the last stream's end releases it and its owner.
TEST(StreamSide, TheStreamsOfAConnectionShareOneSideReleasedWithTheLastOfThem) {
  namespace detail = wheelrpc::rpc::detail;
  asio::io_context io;
  auto table = std::make_shared<detail::StreamTable>();
  auto owner = std::make_shared<int>(0);
  const std::weak_ptr<int> owner_alive = owner;
  int made = 0;
  auto make = [&] {
    ++made;
    auto side = std::make_shared<detail::StreamSide>();
    side->client = false;
    side->ex = io.get_executor();
    side->owner = owner;
    return std::shared_ptr<const detail::StreamSide>(std::move(side));
  };
  auto open = [&] {
    detail::StreamCore::Settings s;
    s.side = table->side.get(make);
    s.method = "watch";
    return std::make_shared<detail::StreamCore>(std::move(s));
  };
  auto a = open();
  auto b = open();
  EXPECT_EQ(made, 1);
  EXPECT_EQ(a->side().get(), b->side().get());
  EXPECT_EQ(a->executor(), b->executor());
  owner.reset();
  EXPECT_FALSE(owner_alive.expired()) << "the open streams hold their side's owner";
  a.reset();
  EXPECT_NE(table->side.peek(), nullptr);
  b.reset();
  EXPECT_TRUE(owner_alive.expired()) << "neither the table nor a cycle keeps the side once no stream is open";
  EXPECT_EQ(table->side.peek(), nullptr);
  auto c = open();
  EXPECT_EQ(made, 2) << "the next stream makes it again";
}
