// async_call works with every kind of completion token.
#include <gtest/gtest.h>

#include <future>
#include <tuple>
#include <type_traits>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "support/rpc_fixture.h"
#include "support/wait.h"

using boost::system::error_code;
using wheelrpc::rpc::CallError;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Response;
using wheelrpc::test::RpcFixture;
namespace asio = boost::asio;

namespace {

// Compile-time: what each token makes async_call return.
using FutureResult = decltype(std::declval<Client&>().async_call("", "", {}, asio::use_future));
static_assert(std::is_same_v<FutureResult, std::future<Response>>);
using AwaitResult = decltype(std::declval<Client&>().async_call("", "", {}, asio::use_awaitable));
static_assert(std::is_same_v<AwaitResult, asio::awaitable<Response>>);
using TupleResult = decltype(std::declval<Client&>().async_call("", "", {}, asio::as_tuple(asio::use_awaitable)));
static_assert(std::is_same_v<TupleResult, asio::awaitable<std::tuple<error_code, Response>>>);
using CallbackResult = decltype(std::declval<Client&>().async_call("", "", {}, [](error_code, Response) {}));
static_assert(std::is_void_v<CallbackResult>);

TEST(Tokens, UseFuture) {
  RpcFixture fx;
  auto f = fx.client->async_call("echo", "future", {}, asio::use_future);
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get().payload, "future");
  auto bad = fx.client->async_call("missing", "", {}, asio::use_future);
  ASSERT_EQ(bad.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  try {
    bad.get();
    FAIL() << "expected an exception";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), errc::method_not_found);
  }
}

TEST(Tokens, UseAwaitableAndAsTuple) {
  RpcFixture fx;
  std::promise<std::tuple<std::string, error_code, std::string>> p;
  asio::co_spawn(
      fx.threads.io,
      [&]() -> asio::awaitable<void> {
        Response r = co_await fx.client->async_call("echo", "awaited", {}, asio::use_awaitable);
        auto [ec, r2] = co_await fx.client->async_call("missing", "", {}, asio::as_tuple(asio::use_awaitable));
        std::string thrown;
        try {
          co_await fx.client->async_call("missing", "", {}, asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
          thrown = e.code().message();
        }
        p.set_value({r.payload, ec, thrown});
      },
      asio::detached);
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto [payload, ec, thrown] = f.get();
  EXPECT_EQ(payload, "awaited");
  EXPECT_EQ(ec, errc::method_not_found);
  EXPECT_EQ(thrown, make_error_code(errc::method_not_found).message());
}

TEST(Tokens, Deferred) {
  RpcFixture fx;
  auto op = fx.client->async_call("echo", "deferred", {}, asio::deferred);
  EXPECT_EQ(fx.server.stats().requests, 0u) << "nothing happens until the operation is started";
  std::promise<std::string> p;
  std::move(op)([&p](error_code, Response r) { p.set_value(r.payload); });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get(), "deferred");
}

// use_awaitable and use_future throw CallError: the code, and the whole
// message as_tuple users read from Response::error_message.
TEST(Tokens, UseAwaitableThrowsCallErrorWithTheFullMessage) {
  RpcFixture fx;
  std::promise<std::tuple<error_code, std::string, bool>> p;
  asio::co_spawn(
      fx.threads.io,
      [&]() -> asio::awaitable<void> {
        CallOptions o;
        o.timeout = std::chrono::seconds(30);
        // First a call that connects: the one that times out is then sent
        // however slowly this machine connects.
        co_await fx.client->async_call("echo", "", o, asio::use_awaitable);
        o.timeout = std::chrono::milliseconds(50);
        try {
          co_await fx.client->async_call("sleep", "10000", o, asio::use_awaitable);
          p.set_value({});
        } catch (const boost::system::system_error& e) {  // catch sites for the base keep working
          p.set_value({e.code(), e.what(), dynamic_cast<const CallError*>(&e) != nullptr});
        }
      },
      asio::detached);
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto [ec, what, is_call_error] = f.get();
  EXPECT_EQ(ec, errc::timeout);
  EXPECT_TRUE(is_call_error);
  // "...; the server timed out too)" when the server's deadline answered at
  // the same instant.
  EXPECT_EQ(what.rfind("timeout (sent, waiting for the reply", 0), 0u) << what;
  EXPECT_NE(what.find(" ms calling 'sleep' on 127.0.0.1:"), std::string::npos) << what;
}

TEST(Tokens, UseFutureThrowsCallErrorWithTheFullMessage) {
  RpcFixture fx;
  auto f = fx.client->async_call("missing", "", {}, asio::use_future);
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  try {
    f.get();
    FAIL() << "expected an exception";
  } catch (const CallError& e) {
    EXPECT_EQ(e.code(), errc::method_not_found);
    EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:"), std::string::npos) << e.what();
  }
}

// The exception-carrying handler keeps the coroutine's cancellation slot: a
// call that loses a race is cancelled (and freed) at once.
TEST(Tokens, UseAwaitableCancellationStillReachesTheCall) {
  using namespace asio::experimental::awaitable_operators;
  RpcFixture fx;
  std::promise<std::pair<std::size_t, error_code>> p;
  asio::co_spawn(
      fx.threads.io,
      [&]() -> asio::awaitable<void> {
        CallOptions o;
        o.timeout = std::chrono::seconds(30);
        asio::steady_timer t(fx.threads.io, std::chrono::milliseconds(20));
        error_code call_ec;
        std::size_t winner = 9;
        try {
          auto r = co_await (fx.client->async_call("sleep", "20000", o, asio::use_awaitable) ||
                             t.async_wait(asio::use_awaitable));
          winner = r.index();
        } catch (const boost::system::system_error& e) {
          call_ec = e.code();
        }
        p.set_value({winner, call_ec});
      },
      asio::detached);
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "the call was not cancelled";
  auto [winner, ec] = f.get();
  EXPECT_EQ(winner, 1u) << ec.message();
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.client->stats().pending == 0; }));
}

// A blocking call on a thread that runs the client's executor would wait for
// itself: it fails at once instead, nothing sent.
TEST(Tokens, BlockingCallOnTheExecutorsThreadFailsAtOnce) {
  RpcFixture fx;
  std::promise<std::pair<error_code, std::string>> p;
  asio::post(fx.threads.io, [&] {
    try {
      fx.client->call("echo", "x");
      p.set_value({});
    } catch (const CallError& e) {
      p.set_value({e.code(), e.what()});
    }
  });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "the blocking call hung";
  auto [ec, what] = f.get();
  EXPECT_EQ(ec, errc::bad_request);
  EXPECT_NE(what.find("would wait for itself"), std::string::npos) << what;
  EXPECT_EQ(fx.server.stats().requests, 0u);
  // From any other thread it works.
  EXPECT_EQ(fx.client->call("echo", "y").payload, "y");
}

}  // namespace
