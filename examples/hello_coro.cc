// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// hello_coro: wheelrpc on one page, the example to read first. One timer, one
// io_context, a server with two methods, a client, and a coroutine that calls
// "echo" three times and then "slow" with a deadline shorter than its work.
//
//   hello_coro          (prints five lines and exits 0 by itself)
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;

// [readme:talk]  (README.md shows talk() verbatim)
asio::awaitable<void> talk(rpc::Client& client) {
  rpc::CallOptions opts;
  opts.timeout = 1s;  // the deadline: each call's whole budget
  for (const char* word : {"hello", "wheel", "rpc"}) {
    rpc::Response r = co_await client.async_call("echo", word, opts, asio::use_awaitable);
    std::printf("echo %s -> %s\n", word, r.payload.c_str());
  }
  opts.timeout = 50ms;  // "slow" needs 200 ms: the deadline passes first
  try {
    co_await client.async_call("slow", "", opts, asio::use_awaitable);
  } catch (const rpc::CallError& e) {  // e.code() == rpc::errc::timeout
    std::printf("slow -> %s\n", e.what());  // the phase, the time, the method and the server
  }
  // With asio::as_tuple(asio::use_awaitable) a call returns (error_code, Response)
  // instead of throwing; Response::error_message holds the same message.
}
// [readme:talk-end]

int main() {
  wheelrpc::timer::HashedWheelTimer timer;  // one per process; declared first, destroyed last
  asio::io_context io;

  rpc::Server server(io.get_executor(), timer);
  server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  server.handle("slow", [&io](rpc::Request, rpc::Responder r) {  // replies later, never blocks
    auto wait = std::make_shared<asio::steady_timer>(io, 200ms);
    wait->async_wait([wait, r = std::move(r)](boost::system::error_code) mutable { r.reply("done"); });
  });
  if (const auto ec = server.listen({asio::ip::make_address("127.0.0.1"), 0})) {
    std::printf("cannot listen: %s\n", ec.message().c_str());
    return 1;
  }

  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  int status = 0;
  asio::co_spawn(io, talk(client), [&](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);  // an echo call failed
    } catch (const std::exception& x) {
      std::printf("failed: %s\n", x.what());
      status = 1;
    }
    client.close();  // then nothing keeps io.run() busy: it returns
    server.stop();
  });
  io.run();
  std::printf("bye\n");
  return status;
}
// clang-format on
