// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "Shutting down": close clients and stop servers, then stop the
// threads (the pool doing handlers' work, those running the executor), then
// let the timer go. In that order the program ends by itself. Two threads run
// io; main makes blocking calls.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using guide::check;

int main() {
  wheelrpc::timer::HashedWheelTimer timer;  // declared first: destroyed last
  asio::io_context io;
  asio::thread_pool pool(2);

  rpc::Server server(io.get_executor(), timer);
  server.handle("square", [&pool](rpc::Request req, rpc::Responder r) {
    asio::post(pool, [req = std::move(req), r = std::move(r)]() mutable {
      const long n = std::stol(req.payload);
      r.reply(std::to_string(n * n));
    });
  });
  std::mutex mu;
  std::vector<rpc::Responder> held;  // "hold" never replies
  std::promise<void> holding;
  server.handle("hold", [&](rpc::Request, rpc::Responder r) {
    std::lock_guard lock(mu);
    held.push_back(std::move(r));
    holding.set_value();
  });
  if (server.listen({asio::ip::make_address("127.0.0.1"), 0})) return 1;

  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  std::vector<std::thread> io_threads;
  for (int i = 0; i < 2; ++i) io_threads.emplace_back([&io] { io.run(); });

  rpc::CallOptions opts;
  opts.timeout = 5s;
  long sum = 0;
  try {
    for (int i = 1; i <= 10; ++i) sum += std::stol(client.call("square", std::to_string(i), opts).payload);
  } catch (const rpc::CallError& e) {
    check(false, e.what());
  }
  check(sum == 385, "the calls succeed");
  opts.timeout = 60s;
  std::promise<boost::system::error_code> in_flight;  // a call still waiting at close()
  client.async_call("hold", "", opts, [&](boost::system::error_code ec, rpc::Response) { in_flight.set_value(ec); });
  check(holding.get_future().wait_for(10s) == std::future_status::ready, "the server holds the call");

  client.close();  // 1. pending calls complete with errc::cancelled; the client releases the executor
  server.stop();   //    the server stops accepting and closes its connections
  pool.join();     // 2. the threads that do handlers' work (their replies are dropped now)
  for (auto& t : io_threads) t.join();  // io.run() returns: nothing holds work any more
  held.clear();    //    what the handlers kept, before the timer goes
  check(in_flight.get_future().get() == rpc::errc::cancelled, "the call in flight completed with cancelled");
  std::printf("closed cleanly\n");
  return guide::status();  // 3. the timer is destroyed last
}
// clang-format on
