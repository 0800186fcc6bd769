// A stream's credit with messages larger than half the window (gRPC's
// interop sizes: 27182 then 45904 bytes on a 64 KiB window): a reader that
// read everything gives its credit back, so a writer waiting to send a
// message larger than the credit it has left does not wait forever; and a
// compressed message read from the reader's buffer gives back the credit it
// cost as it came, not its decoded size (which would let the writer send
// past the window).
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/transport/compression.h>

#include "support/rpc_fixture.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ServerStream;
using wheelrpc::test::RpcFixture;
using wheelrpc::transport::Compression;

namespace {

/// "sizes": writes 27182 then 45904 bytes, as the interop cases do.
awaitable<void> sizes(ServerStream stream) {
  co_await stream.async_write(std::string(27182, 'a'), use_awaitable);
  co_await stream.async_write(std::string(45904, 'b'), use_awaitable);
  stream.finish();
}

/// "squeezed": three 30 KiB messages of zeros gzip-compressed (a few hundred
/// bytes on the wire), then, after the client's "next", two uncompressed
/// 60 KiB ones: together past the 64 KiB window.
awaitable<void> squeezed(ServerStream stream) {
  stream.set_compression(Compression::gzip);
  for (int i = 0; i < 3; ++i) co_await stream.async_write(std::string(30 * 1024, '\0'), use_awaitable);
  co_await stream.async_read(use_awaitable);
  stream.set_compression(Compression::identity);
  for (int i = 0; i < 2; ++i) co_await stream.async_write(std::string(60 * 1024, 'x'), use_awaitable);
  stream.finish();
}

/// Waits (on timers, not blocking the thread) until `pred` holds or `limit` passed.
template <class Pred>
awaitable<bool> eventually(Pred pred, std::chrono::milliseconds limit) {
  asio::steady_timer tick(co_await asio::this_coro::executor);
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) co_return false;
    tick.expires_after(1ms);
    co_await tick.async_wait(use_awaitable);
  }
  co_return true;
}

template <class Handler>
wheelrpc::rpc::StreamHandler spawned(Handler handler) {
  return [handler](ServerStream stream) { asio::co_spawn(stream.get_executor(), handler(stream), asio::detached); };
}

void register_streams(wheelrpc::rpc::Server& server) {
  server.handle_stream("sizes", spawned(sizes));
  server.handle_stream("squeezed", spawned(squeezed));
}

TEST(StreamCredit, AMessageLargerThanTheCreditLeftGoesOnceTheReaderReadEverything) {
  RpcFixture f({}, {}, 2, register_streams);
  auto run = [&]() -> awaitable<void> {
    CallOptions o;
    o.message_timeout = 10s;  // a stuck writer ends the stream instead of the test
    auto stream = co_await f.client->async_open_stream("sizes", o, use_awaitable);
    auto first = co_await stream.async_read(use_awaitable);
    auto second = co_await stream.async_read(use_awaitable);
    EXPECT_EQ(first.value_or("").size(), 27182u);
    EXPECT_EQ(second.value_or("").size(), 45904u);
    EXPECT_FALSE(co_await stream.async_read(use_awaitable));
    co_await stream.async_finish(use_awaitable);
  };
  auto done = asio::co_spawn(f.threads.io, run(), asio::use_future);
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready);
  done.get();
}

TEST(StreamCredit, ACompressedMessageReadFromTheBufferGivesBackWhatItCost) {
  RpcFixture f({}, {}, 2, register_streams);
  auto run = [&]() -> awaitable<void> {
    auto stream = co_await f.client->async_open_stream("squeezed", {}, use_awaitable);
    // The three compressed messages wait in the stream's buffer before we read them.
    EXPECT_TRUE(co_await eventually([&] { return stream.info().messages_received == 3; }, 10s))
        << stream.info().messages_received << " received; " << stream.error_message();
    for (int i = 0; i < 3; ++i) {
      auto m = co_await stream.async_read(use_awaitable);
      EXPECT_EQ(m.value_or("").size(), 30u * 1024);
    }
    co_await stream.async_write("next", use_awaitable);
    // A writer given too much credit would send both 60 KiB messages now,
    // past the window, and the stream would end on it.
    co_await eventually([&] { return stream.info().ended; }, 2s);
    for (int i = 0; i < 2; ++i) {
      auto [ec, m] = co_await stream.async_read(asio::as_tuple(use_awaitable));
      EXPECT_FALSE(ec) << stream.error_message();
      EXPECT_EQ(m.value_or("").size(), 60u * 1024);
    }
    auto [ec] = co_await stream.async_finish(asio::as_tuple(use_awaitable));
    EXPECT_FALSE(ec) << stream.error_message();
  };
  auto done = asio::co_spawn(f.threads.io, run(), asio::use_future);
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready);
  done.get();
}

}  // namespace
