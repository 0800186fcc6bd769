// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "Defining methods": a handler replies now or later, from any thread,
// exactly once; a Responder dropped without a reply answers server_error.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <exception>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using guide::check;

asio::awaitable<void> talk(rpc::Client& client) {
  rpc::CallOptions opts;
  opts.timeout = 5s;  // generous: the first call also waits for the connection
  auto call = [&](const char* method, const char* payload) {
    return client.async_call(method, payload, opts, asio::as_tuple(asio::use_awaitable));
  };
  auto [ec1, r1] = co_await call("echo", "hi");
  check(!ec1 && r1.payload == "hi", "echo replies at once");
  auto [ec2, r2] = co_await call("upper", "later");
  check(!ec2 && r2.payload == "LATER", "upper replies later, from the pool");
  auto [ec3, r3] = co_await call("forgetful", "");
  check(ec3 == rpc::errc::server_error, "a dropped Responder answers server_error");
  std::printf("forgetful -> %s\n", r3.error_message.c_str());
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;  // first, so it is destroyed last
  asio::io_context io;
  asio::thread_pool pool(2);  // where slow work goes
  std::atomic<bool> second_reply_sent{true};

  rpc::Server server(io.get_executor(), timer);
  // Reply at once, on the connection's strand.
  server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  // Reply later, from another thread: move the Responder along with the work.
  server.handle("upper", [&](rpc::Request req, rpc::Responder r) {
    asio::post(pool, [&, req = std::move(req), r = std::move(r)]() mutable {
      for (char& c : req.payload) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      r.reply(std::move(req.payload));           // true: sent
      second_reply_sent = r.reply("once more");  // false: a request is answered once
    });
  });
  // Never replies: when the Responder is destroyed, the caller gets server_error.
  server.handle("forgetful", [](rpc::Request, rpc::Responder) {});
  if (server.listen({asio::ip::make_address("127.0.0.1"), 0})) return 1;

  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  asio::co_spawn(io, talk(client), [&](std::exception_ptr e) {
    guide::check_no_exception(e);
    client.close();
    server.stop();
  });
  io.run();
  pool.join();
  check(!second_reply_sent, "a second reply is dropped: reply() returns false");
  return guide::status();
}
// clang-format on
