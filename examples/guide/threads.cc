// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "What runs on which thread": a handler runs on its connection's strand,
// on a thread running the server's executor, and must not block it: heavy work
// goes to a thread pool, which replies. A coroutine resumes on its own executor.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <exception>
#include <future>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;
using guide::check;

using Strand = asio::strand<asio::io_context::executor_type>;

asio::awaitable<void> talk(rpc::Client& client, Strand strand, std::promise<void>& echoed) {
  rpc::CallOptions opts;
  opts.timeout = 10s;  // generous: the first calls also wait for the connection
  auto echo = [&]() -> asio::awaitable<rpc::Response> {
    auto r = co_await client.async_call("echo", "ping", opts, asio::use_awaitable);
    echoed.set_value();  // lets the digest's work finish
    co_return r;
  };
  // Both calls at once, on the one connection: the echo is answered while the
  // digest's work still runs, because the digest's handler did not block.
  auto [digest, pong] = co_await (client.async_call("digest", "data", opts, asio::use_awaitable) && echo());
  check(pong.payload == "ping" && !digest.payload.empty(), "both calls succeed");
  check(strand.running_in_this_thread(), "the coroutine resumes on its own executor, the strand");
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  asio::thread_pool pool(2);  // for work that would block an I/O thread
  std::promise<void> echoed;
  std::shared_future<void> echo_done = echoed.get_future().share();

  rpc::Server server(io.get_executor(), timer);
  server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  server.handle("digest", [&](rpc::Request req, rpc::Responder r) {
    check(io.get_executor().running_in_this_thread(), "a handler runs on an I/O thread");
    asio::post(pool, [&, req = std::move(req), r = std::move(r)]() mutable {
      check(pool.get_executor().running_in_this_thread(), "heavy work runs on the pool");
      // The heavy work; here it waits (bounded) until the echo was answered.
      check(echo_done.wait_for(10s) == std::future_status::ready, "the echo is answered meanwhile");
      r.reply(std::to_string(std::hash<std::string>{}(req.payload)));  // from the pool thread
    });
  });
  if (server.listen({asio::ip::make_address("127.0.0.1"), 0})) return 1;

  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  // On a strand: with two threads running io, the coroutine's steps never overlap.
  Strand strand = asio::make_strand(io.get_executor());
  asio::co_spawn(strand, talk(client, strand, echoed), [&](std::exception_ptr e) {
    guide::check_no_exception(e);
    client.close();
    server.stop();
  });
  std::thread second([&io] { io.run(); });  // two threads run the executor
  io.run();
  second.join();
  pool.join();
  return guide::status();
}
// clang-format on
