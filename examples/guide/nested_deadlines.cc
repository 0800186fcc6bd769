// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "Deadlines inherited by nested calls": the calls a handler makes get
// what is left of its caller's budget; one made after the budget is spent
// fails at once, unsent. Here main makes blocking calls; two threads run io.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;
using guide::check;

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  asio::thread_pool pool(1);
  const asio::ip::tcp::endpoint any{asio::ip::make_address("127.0.0.1"), 0};

  rpc::Server backend(io.get_executor(), timer);
  backend.handle("budget", [](rpc::Request req, rpc::Responder r) {  // replies with the budget it got
    r.reply(std::to_string(std::chrono::ceil<std::chrono::milliseconds>(*req.deadline - Clock::now()).count()));
  });
  if (backend.listen(any)) return 1;
  rpc::Client to_backend(io.get_executor(), timer, {backend.local_endpoint()});

  rpc::CallOptions own;
  own.timeout = 5s;  // the nested call's own budget: the caller's shorter one wins
  auto forward = [](rpc::Responder r) {
    return [r = std::move(r)](error_code ec, rpc::Response resp) mutable {
      ec ? r.fail(rpc::errc::server_error, resp.error_message) : r.reply(std::move(resp.payload));
    };
  };
  rpc::Server front(io.get_executor(), timer);
  // In the handler, a call inherits the request's deadline by itself.
  front.handle("inline", [&](rpc::Request, rpc::Responder r) {
    to_backend.async_call("budget", "", own, forward(std::move(r)));
  });
  // Continued elsewhere: a DeadlineScope says which request this thread serves.
  std::promise<void> slow_done;
  front.handle("pooled", [&](rpc::Request req, rpc::Responder r) {
    asio::post(pool, [&, req = std::move(req), r = std::move(r)]() mutable {
      const bool slow = req.payload == "slow";
      if (slow) std::this_thread::sleep_until(*req.deadline + 10ms);  // work past the deadline
      rpc::DeadlineScope scope(req.deadline);
      to_backend.async_call("budget", "", own, forward(std::move(r)));
      if (slow) slow_done.set_value();
    });
  });
  if (front.listen(any)) return 1;

  std::thread io_threads[] = {std::thread([&io] { io.run(); }), std::thread([&io] { io.run(); })};
  rpc::Client client(io.get_executor(), timer, {front.local_endpoint()});
  rpc::CallOptions opts;
  opts.timeout = 3s;
  for (const char* method : {"inline", "pooled"}) {
    try {  // a blocking call, from a thread that does not run io
      const int budget = std::stoi(client.call(method, "", opts).payload);
      std::printf("%s: the backend got %d ms\n", method, budget);
      check(budget < 4000, "the backend got what was left of the caller's 3 s, not its own 5 s");
    } catch (const rpc::CallError& e) {
      check(false, e.what());
    }
  }
  opts.timeout = 300ms;
  try {
    client.call("pooled", "slow", opts);
    check(false, "a call whose work outlasts its deadline fails");
  } catch (const rpc::CallError& e) {
    std::printf("slow: %s\n", e.what());
  }

  check(slow_done.get_future().wait_for(10s) == std::future_status::ready, "the slow work ends");
  check(to_backend.stats().timeouts == 1, "a call made after the inherited deadline fails at once with timeout");
  check(backend.stats().requests == 2, "and is never sent");

  client.close();
  to_backend.close();
  front.stop();
  backend.stop();
  pool.join();
  for (auto& t : io_threads) t.join();
  return guide::status();
}
// clang-format on
