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
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "support/rpc_fixture.h"

using boost::system::error_code;
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
using TupleResult =
    decltype(std::declval<Client&>().async_call("", "", {}, asio::as_tuple(asio::use_awaitable)));
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

}  // namespace
