// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// docs/streams.md: the three kinds of streams (server, client and
// bidirectional), a stream's end and its status, and a message-idle timeout.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using asio::awaitable;
using asio::use_awaitable;
using guide::check;

// ---- the server's side: one handler per method, each a coroutine on the stream's executor

// Server streaming: one request ("how many"), then that many messages.
awaitable<void> ticker(rpc::ServerStream stream) {
  auto request = co_await stream.async_read(use_awaitable);  // the client's one message
  const int n = request ? std::stoi(*request) : 0;
  asio::steady_timer tick(co_await asio::this_coro::executor);
  for (int i = 0; i < n; ++i) {
    tick.expires_after(10ms);
    co_await tick.async_wait(use_awaitable);
    co_await stream.async_write("tick " + std::to_string(i), use_awaitable);  // waits for the client's credit
  }
  stream.finish();  // success; the client's reads end with std::nullopt
}

// Client streaming: reads until the client half-closes, answers once.
awaitable<void> adder(rpc::ServerStream stream) {
  long long sum = 0;
  while (auto number = co_await stream.async_read(use_awaitable)) sum += std::stoll(*number);
  co_await stream.async_write(std::to_string(sum), use_awaitable);
  stream.finish();
}

// Bidirectional: answers each message as it comes.
awaitable<void> echo(rpc::ServerStream stream) {
  while (auto message = co_await stream.async_read(use_awaitable)) {
    co_await stream.async_write("echo: " + *message, use_awaitable);
  }
  stream.finish();
}

// A handler is called once per stream; it spawns the coroutine and returns.
// An exception (the stream ended under it: cancelled, timed out) ends the coroutine.
template <class Handler>
rpc::StreamHandler spawned(Handler handler) {
  return [handler](rpc::ServerStream stream) {
    asio::co_spawn(stream.get_executor(), handler(stream), asio::detached);
  };
}

// ---- the client's side

awaitable<void> server_streaming(rpc::Client& client) {
  auto stream = co_await client.async_open_stream("ticker", {}, use_awaitable);
  co_await stream.async_write("3", use_awaitable);
  co_await stream.async_writes_done(use_awaitable);  // nothing more from us
  std::vector<std::string> ticks;
  while (auto tick = co_await stream.async_read(use_awaitable)) ticks.push_back(*tick);
  co_await stream.async_finish(use_awaitable);  // the final status: throws CallError on a failure
  check(ticks.size() == 3 && ticks[2] == "tick 2", "three ticks, then the end");
}

awaitable<void> client_streaming(rpc::Client& client) {
  auto stream = co_await client.async_open_stream("adder", {}, use_awaitable);
  for (int i = 1; i <= 10; ++i) co_await stream.async_write(std::to_string(i), use_awaitable);
  co_await stream.async_writes_done(use_awaitable);
  auto sum = co_await stream.async_read(use_awaitable);
  co_await stream.async_finish(use_awaitable);
  check(sum && *sum == "55", "one answer: the sum");
}

awaitable<void> bidirectional(rpc::Client& client) {
  auto stream = co_await client.async_open_stream("echo", {}, use_awaitable);
  for (std::string word : {"one", "two", "three"}) {
    co_await stream.async_write(word, use_awaitable);
    auto answer = co_await stream.async_read(use_awaitable);
    check(answer && *answer == "echo: " + word, "each message answered in turn");
  }
  co_await stream.async_writes_done(use_awaitable);
  auto end = co_await stream.async_read(use_awaitable);
  check(!end, "after the half-close, the server ends the stream");
  co_await stream.async_finish(use_awaitable);
}

awaitable<void> message_idle(rpc::Client& client) {
  rpc::CallOptions opts;
  opts.message_timeout = 50ms;  // no message for 50 ms: the stream ends
  auto stream = co_await client.async_open_stream("echo", opts, use_awaitable);
  // We never write, so the server never answers: the read fails after 50 ms.
  auto [ec, message] = co_await stream.async_read(asio::as_tuple(use_awaitable));
  check(ec == rpc::errc::message_timeout, "the message-idle timer ended the silent stream");
  std::printf("%s\n", stream.error_message().c_str());
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;  // first, so it is destroyed last
  asio::io_context io;
  rpc::Server server(io.get_executor(), timer);
  server.handle_stream("ticker", spawned(ticker));
  server.handle_stream("adder", spawned(adder));
  server.handle_stream("echo", spawned(echo));
  check(!server.listen({asio::ip::make_address("127.0.0.1"), 0}), "listening");
  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});

  auto done = asio::co_spawn(io, [&]() -> awaitable<void> {
    co_await server_streaming(client);
    co_await client_streaming(client);
    co_await bidirectional(client);
    co_await message_idle(client);
    std::printf("the three kinds of streams and a message-idle timeout: ok\n");
  }, asio::use_future);
  std::thread runner([&] { io.run(); });
  const bool finished = done.wait_for(20s) == std::future_status::ready;
  client.close();
  server.stop();
  io.stop();
  runner.join();
  check(finished, "done within 20 s");
  done.get();  // rethrows a CallError, if a stream failed
  return 0;
}
