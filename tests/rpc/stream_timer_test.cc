// A stream's four timers on a manual clock (ClientOptions::clock,
// ServerOptions::clock and a ManualTimer shared by both): each fires when the
// clock passes its setting and not a tick before, and ends the stream once
// with an error that names it. The servers' and client's I/O is real; their
// executors are flushed after each step, so "nothing happened yet" is
// checked without sleeping.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/status_code.h>

#include "support/cluster.h"
#include "support/manual_timer.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using wheelrpc::rpc::CallError;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::StreamTimer;
using wheelrpc::test::Latch;
using wheelrpc::test::wait_until;

namespace {

/// Server and client on one manual clock; each on its own one-thread executor.
struct ManualStreams {
  explicit ManualStreams(ServerOptions so = {}, ClientOptions co = wheelrpc::test::manual_client_options())
      : server(server_io.io.get_executor(), manual.timer, with_clock(so, manual.clock)) {
    // Reads until the client ends, never writes: what the idle and first-message timers watch.
    server.handle_stream("silent", [](ServerStream s) {
      asio::co_spawn(
          s.get_executor(),
          [s]() mutable -> asio::awaitable<void> {
            try {
              while (co_await s.async_read(asio::use_awaitable)) {
              }
              s.finish();
            } catch (const CallError&) {
            }
          },
          asio::detached);
    });
    // One message at once, then silent (the stream is held open).
    server.handle_stream("hello", [this](ServerStream s) {
      s.async_write("hello", [](boost::system::error_code) {});
      held.push_back(std::move(s));
    });
    // Never reads: what the write-stall timer watches.
    server.handle_stream("deaf", [this](ServerStream s) { held.push_back(std::move(s)); });
    // Reads two messages (their credit goes back), then stops reading.
    server.handle_stream("two", [this](ServerStream s) {
      held.push_back(s);
      s.async_read([s](boost::system::error_code, std::optional<std::string>) mutable {
        s.async_read([](boost::system::error_code, std::optional<std::string>) {});
      });
    });
    if (auto ec = server.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
    co.clock = &manual.clock;
    client.emplace(client_io.io.get_executor(), manual.timer,
                   std::vector<asio::ip::tcp::endpoint>{server.local_endpoint()}, co);
  }
  ~ManualStreams() {
    client->close();
    asio::post(server_io.io, [this] { held.clear(); });
    flush();
    server.stop();
    client_io.stop();
    server_io.stop();
  }
  static ServerOptions with_clock(ServerOptions so, const wheelrpc::timer::Clock& clock) {
    so.clock = &clock;
    return so;
  }
  /// Waits for what both executors have queued (a few rounds: posts post).
  void flush() {
    for (int round = 0; round < 4; ++round) {
      for (auto* io : {&client_io.io, &server_io.io}) {
        Latch done(1);
        asio::post(*io, [&] { done.count_down(); });
        ASSERT_TRUE(done.wait_for(20s)) << "an executor is stuck";
      }
    }
  }
  void advance(std::chrono::milliseconds d) {
    flush();
    for (auto left = d; left.count() > 0; left -= 1ms) {
      manual.advance(1ms);
      flush();
    }
  }
  ClientStream open(const std::string& method, CallOptions o) {
    auto f = client->async_open_stream(method, o, asio::use_future);
    EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
    return f.get();
  }

  wheelrpc::test::ManualTimer manual;  // first: it outlives the executors
  wheelrpc::test::IoThreads server_io{1};
  wheelrpc::test::IoThreads client_io{1};
  wheelrpc::rpc::Server server;
  std::optional<wheelrpc::rpc::Client> client;
  std::vector<ServerStream> held;  // server_io only
};

bool ready(std::future<void>& f) { return f.wait_for(0s) == std::future_status::ready; }

/// The error the future ends with (the code and the message), or none.
std::pair<boost::system::error_code, std::string> outcome(std::future<void>& f) {
  if (f.wait_for(20s) != std::future_status::ready) return {make_error_code(errc::server_error), "no end in 20 s"};
  try {
    f.get();
    return {};
  } catch (const CallError& e) {
    return {e.code(), e.what()};
  }
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(StreamTimers, MessageIdleFiresAtItsSettingAndNotATickBefore) {
  ManualStreams fx;
  CallOptions o;
  o.message_timeout = 200ms;
  auto s = fx.open("silent", o);
  auto end = s.async_finish(asio::use_future);
  fx.advance(199ms);
  EXPECT_FALSE(ready(end)) << "a tick before its setting";
  fx.advance(1ms);
  auto [ec, message] = outcome(end);
  EXPECT_EQ(ec, errc::message_timeout) << message;
  EXPECT_EQ(wheelrpc::rpc::status_code_of(ec), StatusCode::deadline_exceeded);
  EXPECT_TRUE(contains(message, "message-idle timeout after 200 ms")) << message;
  EXPECT_TRUE(contains(message, "'silent'")) << message;
  EXPECT_TRUE(contains(message, fx.server.local_endpoint().address().to_string())) << message;
  EXPECT_TRUE(contains(message, "0 messages sent, 0 received")) << message;
  const auto info = s.info();
  EXPECT_EQ(info.timer, StreamTimer::message_idle);
  EXPECT_EQ(info.timer_elapsed, 200ms);
  // The server's handler sees the stream end (the client's RESET).
  EXPECT_TRUE(wait_until([&] { return fx.server.stats().streams.ends.cancelled == 1; }, 20s));
  EXPECT_EQ(fx.client->stats().streams.ends.message_idle, 1u);
}

TEST(StreamTimers, AMessageRestartsTheIdleWait) {
  ManualStreams fx;
  CallOptions o;
  o.message_timeout = 100ms;
  auto s = fx.open("hello", o);  // the message arrives at once, at t = 0
  auto first = s.async_read(asio::use_future);
  ASSERT_EQ(first.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(first.get().value_or(""), "hello");
  fx.advance(60ms);
  auto end = s.async_finish(asio::use_future);
  fx.advance(39ms);
  EXPECT_FALSE(ready(end));
  fx.advance(1ms);
  auto [ec, message] = outcome(end);
  EXPECT_EQ(ec, errc::message_timeout) << message;
  EXPECT_TRUE(contains(message, "0 messages sent, 1 received")) << message;
}

TEST(StreamTimers, FirstMessageFiresWhenNothingCame) {
  ManualStreams fx;
  CallOptions o;
  o.first_message_timeout = 100ms;
  auto s = fx.open("silent", o);
  auto end = s.async_finish(asio::use_future);
  fx.advance(99ms);
  EXPECT_FALSE(ready(end));
  fx.advance(1ms);
  auto [ec, message] = outcome(end);
  EXPECT_EQ(ec, errc::first_message_timeout) << message;
  EXPECT_TRUE(contains(message, "first-message timeout after 100 ms")) << message;
  EXPECT_EQ(s.info().timer, StreamTimer::first_message);
}

TEST(StreamTimers, AFirstMessageInTimeDisarmsIt) {
  ManualStreams fx;
  CallOptions o;
  o.first_message_timeout = 100ms;
  auto s = fx.open("hello", o);
  auto first = s.async_read(asio::use_future);
  ASSERT_EQ(first.wait_for(20s), std::future_status::ready);
  auto end = s.async_finish(asio::use_future);
  fx.advance(300ms);
  EXPECT_FALSE(ready(end));
  s.cancel();
  EXPECT_EQ(outcome(end).first, asio::error::operation_aborted);
}

TEST(StreamTimers, TheStreamDeadlineEndsBothSides) {
  ManualStreams fx;
  CallOptions o;
  o.stream_timeout = 300ms;
  auto s = fx.open("silent", o);
  auto end = s.async_finish(asio::use_future);
  fx.advance(299ms);
  EXPECT_FALSE(ready(end));
  fx.advance(1ms);
  auto [ec, message] = outcome(end);
  // The client's own timer, or the server's (propagated) whose END came
  // first: either way the client's deadline, errc::timeout.
  EXPECT_EQ(ec, errc::timeout) << message;
  EXPECT_TRUE(contains(message, "deadline timeout after 300 ms")) << message;
  EXPECT_TRUE(wait_until([&] { return fx.server.stats().streams.open == 0; }, 20s));
  const auto ends = fx.server.stats().streams.ends;
  EXPECT_EQ(ends.deadline + ends.cancelled, 1u);
}

TEST(StreamTimers, WriteStallFiresWhenThePeerGrantsNoCredit) {
  ServerOptions so;
  so.streams.window = 1024;  // the smallest: the second 1000-byte message waits
  ManualStreams fx(so);
  CallOptions o;
  o.stall_timeout = 100ms;
  auto s = fx.open("deaf", o);
  auto w1 = s.async_write(std::string(1000, 'a'), asio::use_future);
  ASSERT_EQ(w1.wait_for(20s), std::future_status::ready);
  w1.get();
  auto w2 = s.async_write(std::string(1000, 'b'), asio::use_future);
  fx.advance(99ms);
  EXPECT_FALSE(ready(w2)) << "a write completed without credit, or the timer fired early";
  fx.advance(1ms);
  auto [ec, message] = outcome(w2);
  EXPECT_EQ(ec, errc::write_stall) << message;
  EXPECT_TRUE(contains(message, "write-stall timeout after 100 ms")) << message;
  EXPECT_TRUE(contains(message, "1 messages sent")) << message;
  EXPECT_TRUE(contains(message, "none came since the stream opened (the peer reads nothing)")) << message;
  EXPECT_EQ(s.info().timer, StreamTimer::write_stall);
}

TEST(StreamTimers, WriteStallSaysWhenThePeerWasReadingOnlySlowerThanTheTimer) {
  ServerOptions so;
  so.streams.window = 4096;
  ManualStreams fx(so);
  CallOptions o;
  o.stall_timeout = 100ms;
  auto s = fx.open("two", o);
  // Each message costs 1027 of the 4096 window: three go, the fourth waits
  // until the server read two (their 2054 bytes of credit come back), the
  // fifth goes too, and the sixth waits for credit that never comes.
  for (int i = 0; i < 5; ++i) {
    auto w = s.async_write(std::string(1000, 'a'), asio::use_future);
    ASSERT_EQ(w.wait_for(30s), std::future_status::ready) << "write " << i;
    w.get();
  }
  auto waiting = s.async_write(std::string(1000, 'a'), asio::use_future);
  fx.advance(100ms);
  auto [ec, message] = outcome(waiting);
  EXPECT_EQ(ec, errc::write_stall) << message;
  EXPECT_TRUE(contains(message, "the last credit came")) << message;
  EXPECT_TRUE(contains(message, "slower than this timer allows, or stopped reading")) << message;
}

TEST(StreamTimers, ServerMessageIdleFreesWhatAnIdleClientHolds) {
  ServerOptions so;
  so.streams.message_timeout = 200ms;
  ManualStreams fx(so);
  auto s = fx.open("silent", {});
  auto end = s.async_finish(asio::use_future);
  fx.advance(199ms);
  EXPECT_FALSE(ready(end));
  fx.advance(1ms);
  auto [ec, message] = outcome(end);
  EXPECT_EQ(ec, StatusCode::deadline_exceeded) << message;
  EXPECT_TRUE(contains(message, "message-idle timeout after 200 ms")) << message;
  EXPECT_EQ(fx.server.stats().streams.ends.message_idle, 1u);
}

}  // namespace
