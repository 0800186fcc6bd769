// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "Per-call options": the deadline, retries of idempotent calls with
// their own attempt timeouts, and hedging. Two servers share a "lookup" that
// hangs on a key seen for the first time and answers the repeats.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <exception>
#include <set>
#include <string>
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
using Clock = std::chrono::steady_clock;
using guide::check;

asio::awaitable<void> talk(rpc::Client& client) {
  auto lookup = [&](const char* key, const rpc::CallOptions& opts) {
    return client.async_call("lookup", key, opts, asio::as_tuple(asio::use_awaitable));
  };
  // The deadline: the call's whole budget. Not idempotent: its timeout is final.
  rpc::CallOptions plain;
  plain.timeout = 200ms;
  const auto start = Clock::now();
  auto [ec1, r1] = co_await lookup("a", plain);
  check(ec1 == rpc::errc::timeout && Clock::now() - start >= 200ms, "a timeout, never early");
  check(client.stats().retries == 0, "a call that is not idempotent: its timeout is not retried");
  std::printf("a -> %s\n", r1.error_message.c_str());

  // Idempotent: an attempt that gets no reply in time is abandoned and retried.
  rpc::CallOptions read;
  read.timeout = 5s;
  read.idempotent = true;        // safe to run twice
  read.attempt_timeout = 100ms;  // each attempt but the last (default: a share of the budget)
  auto [ec2, r2] = co_await lookup("b", read);
  check(!ec2 && r2.payload == "value of b", "the retry answers");
  check(client.stats().retries == 1, "the attempt without a reply was retried once");

  // Hedging: no reply 50 ms after the attempt started, a second one starts on
  // the other server; the first reply wins and the other attempt is cancelled.
  rpc::CallOptions hedged;
  hedged.timeout = 5s;
  hedged.idempotent = true;  // required with hedge_delay
  hedged.hedge_delay = 50ms;
  auto [ec3, r3] = co_await lookup("c", hedged);
  check(!ec3 && r3.payload == "value of c", "the hedge answers");
  check(client.stats().hedges == 1, "one hedge");
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;  // one I/O thread runs both servers: their handlers need no lock
  std::set<std::string> seen;
  std::vector<rpc::Responder> hung;
  auto lookup = [&](rpc::Request req, rpc::Responder r) {
    if (seen.insert(req.payload).second) {
      hung.push_back(std::move(r));  // the first time: no reply (it is answered at shutdown)
    } else {
      r.reply("value of " + req.payload);
    }
  };
  rpc::Server a(io.get_executor(), timer), b(io.get_executor(), timer);
  for (rpc::Server* s : {&a, &b}) {
    s->handle("lookup", lookup);
    if (s->listen({asio::ip::make_address("127.0.0.1"), 0})) return 1;
  }
  rpc::Client client(io.get_executor(), timer, {a.local_endpoint(), b.local_endpoint()});
  asio::co_spawn(io, talk(client), [&](std::exception_ptr e) {
    guide::check_no_exception(e);
    client.close();
    a.stop();
    b.stop();
    hung.clear();
  });
  io.run();
  return guide::status();
}
// clang-format on
