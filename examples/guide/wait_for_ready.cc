// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "wait_for_ready": against a server that is down, a call fails fast
// with unavailable (the default); with wait_for_ready it waits through the
// client's reconnects until its deadline, and succeeds once the server is up.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using asio::ip::tcp;
using guide::check;

asio::awaitable<void> talk(rpc::Client& client, rpc::Server& server, tcp::socket& port) {
  auto echo = [&](const rpc::CallOptions& opts) {
    return client.async_call("echo", "hi", opts, asio::as_tuple(asio::use_awaitable));
  };
  rpc::CallOptions fail_fast;
  fail_fast.timeout = 10s;
  fail_fast.wait_for_ready = false;  // the default
  auto start = Clock::now();
  auto [ec1, r1] = co_await echo(fail_fast);
  check(ec1 == rpc::errc::unavailable && Clock::now() - start < 5s, "fails long before its deadline");
  std::printf("fail fast -> %s\n", r1.error_message.c_str());

  rpc::CallOptions patient;
  patient.timeout = 300ms;
  patient.wait_for_ready = true;  // wait for a connection until the deadline
  start = Clock::now();
  auto [ec2, r2] = co_await echo(patient);
  check(ec2 == rpc::errc::unavailable && Clock::now() - start >= 300ms, "waits out its deadline");
  check(r2.error_message.find("refused") != std::string::npos, "and names the connect error");
  std::printf("patient -> %s\n", r2.error_message.c_str());

  // The server comes up on that port: a patient call rides out the reconnect backoff.
  const tcp::endpoint endpoint = port.local_endpoint();
  port.close();
  check(!server.listen(endpoint), "the server listens on the port that refused");
  patient.timeout = 20s;
  auto [ec3, r3] = co_await echo(patient);
  check(!ec3 && r3.payload == "hi", "succeeds once the server is up");
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  // A port that refuses connections: bound, not listening (and kept, so no one else takes it).
  tcp::socket port(io, tcp::v4());
  port.bind({asio::ip::make_address("127.0.0.1"), 0});

  rpc::Server server(io.get_executor(), timer);
  server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  rpc::Client client(io.get_executor(), timer, {port.local_endpoint()});
  asio::co_spawn(io, talk(client, server, port), [&](std::exception_ptr e) {
    guide::check_no_exception(e);
    client.close();
    server.stop();
  });
  io.run();
  return guide::status();
}
// clang-format on
