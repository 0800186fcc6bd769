// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// docs/streams.md: the three kinds of streams (server, client and
// bidirectional), a stream's end and its status, a message-idle timeout, and
// cancellation (ClientStream::cancel, a token's cancellation slot) as the
// server's handler sees it.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
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

std::promise<bool> first_watch_cancelled, second_watch_cancelled;  // what "watch" saw, per stream
int watches = 0;                                                    // streams "watch" served (one thread runs io)

// Reads until the stream ends. A read in progress is how a handler learns of a
// cancel: it fails with the reason, and cancelled() is then true.
awaitable<void> watch(rpc::ServerStream stream) {
  auto& saw = watches++ == 0 ? first_watch_cancelled : second_watch_cancelled;
  for (;;) {
    auto [ec, message] = co_await stream.async_read(asio::as_tuple(use_awaitable));
    if (ec || !message) break;
  }
  saw.set_value(stream.cancelled());
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

awaitable<void> cancel_explicitly(rpc::Client& client) {
  auto stream = co_await client.async_open_stream("watch", {}, use_awaitable);
  co_await stream.async_write("hello", use_awaitable);
  stream.cancel();  // ends it now: a RESET to the server; what waits here completes with operation_aborted
  auto [ec] = co_await stream.async_finish(asio::as_tuple(use_awaitable));
  check(ec == asio::error::operation_aborted, "cancel() ended the stream");
}

awaitable<void> cancel_by_a_timer(rpc::Client& client) {
  using namespace asio::experimental::awaitable_operators;
  auto stream = co_await client.async_open_stream("watch", {}, use_awaitable);
  asio::steady_timer enough(co_await asio::this_coro::executor, 50ms);
  // The first to complete cancels the other through its cancellation slot:
  // the read's cancellation ends the stream.
  auto first = co_await (stream.async_read(use_awaitable) || enough.async_wait(use_awaitable));
  check(first.index() == 1, "the timer came first");
  auto [ec] = co_await stream.async_finish(asio::as_tuple(use_awaitable));
  check(ec == asio::error::operation_aborted, "the read's cancellation ended the stream");
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;  // first, so it is destroyed last
  asio::io_context io;
  rpc::Server server(io.get_executor(), timer);
  server.handle_stream("ticker", spawned(ticker));
  server.handle_stream("adder", spawned(adder));
  server.handle_stream("echo", spawned(echo));
  server.handle_stream("watch", spawned(watch));
  check(!server.listen({asio::ip::make_address("127.0.0.1"), 0}), "listening");
  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});

  auto done = asio::co_spawn(io, [&]() -> awaitable<void> {
    co_await server_streaming(client);
    co_await client_streaming(client);
    co_await bidirectional(client);
    co_await message_idle(client);
    co_await cancel_explicitly(client);
    co_await cancel_by_a_timer(client);
  }, asio::use_future);
  std::thread runner([&] { io.run(); });
  const bool finished = done.wait_for(20s) == std::future_status::ready;
  if (check(finished, "done within 20 s")) {
    try {
      done.get();  // rethrows a CallError, if a stream failed
    } catch (const std::exception& e) {
      check(false, e.what());
    }
    for (auto* saw : {&first_watch_cancelled, &second_watch_cancelled}) {
      auto f = saw->get_future();
      check(f.wait_for(20s) == std::future_status::ready && f.get(), "the server's handler saw its stream cancelled");
    }
  }
  client.close();
  server.stop();
  io.stop();
  runner.join();
  if (guide::status() == 0) std::printf("the three kinds of streams, a message-idle timeout, cancellation: ok\n");
  return guide::status();
}
