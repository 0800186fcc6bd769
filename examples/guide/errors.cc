// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "Errors": what a caller sees for each failure, the message that
// comes with it, which failures are retried, and the exception use_awaitable
// throws.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using guide::check;

asio::awaitable<void> talk(rpc::Client& client) {
  rpc::CallOptions opts;
  opts.timeout = 2s;
  auto expect = [&](const char* method, const rpc::CallOptions& o, rpc::errc expected) -> asio::awaitable<void> {
    auto [ec, r] = co_await client.async_call(method, "", o, asio::as_tuple(asio::use_awaitable));
    std::printf("%-8s -> %s\n", method, r.error_message.c_str());
    check(ec == expected, method);
  };
  co_await expect("refuse", opts, rpc::errc::bad_request);       // the handler's fail()
  co_await expect("crash", opts, rpc::errc::server_error);       // the handler threw
  co_await expect("nope", opts, rpc::errc::method_not_found);    // no such method
  check(client.stats().retries == 0, "application errors are never retried");
  co_await expect("draining", opts, rpc::errc::unavailable);     // retried: 3 attempts
  check(client.stats().retries == 2, "unavailable is retried, `retries` (2) times");

  rpc::CallOptions quick = opts;
  quick.timeout = 100ms;
  co_await expect("hang", quick, rpc::errc::timeout);            // the deadline passed
  rpc::CallOptions invalid = opts;
  invalid.hedge_delay = 50ms;                                    // without idempotent:
  co_await expect("refuse", invalid, rpc::errc::bad_request);    // refused by the client, unsent

  try {  // use_awaitable (and use_future) throw the error as a CallError
    co_await client.async_call("nope", "", opts, asio::use_awaitable);
    check(false, "'nope' throws");
  } catch (const rpc::CallError& e) {
    check(e.code() == rpc::errc::method_not_found, "CallError::code() is the error");
    std::printf("thrown: %s\n", e.what());
  }
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  std::vector<rpc::Responder> hung;  // answered at shutdown
  rpc::Server server(io.get_executor(), timer);
  server.handle("refuse", [](rpc::Request, rpc::Responder r) { r.fail(rpc::errc::bad_request, "age must be > 0"); });
  server.handle("crash", [](rpc::Request, rpc::Responder) { throw std::runtime_error("disk full"); });
  server.handle("draining", [](rpc::Request, rpc::Responder r) { r.fail(rpc::errc::unavailable, "draining"); });
  server.handle("hang", [&](rpc::Request, rpc::Responder r) { hung.push_back(std::move(r)); });
  if (server.listen({asio::ip::make_address("127.0.0.1"), 0})) return 1;

  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  asio::co_spawn(io, talk(client), [&](std::exception_ptr e) {
    guide::check_no_exception(e);
    client.close();
    server.stop();
    hung.clear();
  });
  io.run();
  return guide::status();
}
// clang-format on
