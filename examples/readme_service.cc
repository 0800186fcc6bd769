// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// readme_service: the README's "An RPC service in a few lines", as a whole
// program (the README shows the part between the [readme:service] marks).
// A server with an echo method, a client, and one call with a deadline and a
// callback; the callback closes the client and stops the server, so io.run()
// returns and the program exits by itself.
//
//   readme_service          (prints "echo -> hi" and exits 0)
// [readme:service]
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include <boost/asio/io_context.hpp>

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;

int main() {
  wheelrpc::timer::HashedWheelTimer timer;  // one per process, shared by everything
  asio::io_context io;

  rpc::Server server(io.get_executor(), timer);
  server.handle("echo", [](rpc::Request req, rpc::Responder r) {
    r.reply(std::move(req.payload));  // now, or later from any thread
  });
  if (auto ec = server.listen({asio::ip::make_address("127.0.0.1"), 0})) {  // port 0: any free port
    std::printf("cannot listen: %s\n", ec.message().c_str());
    return 1;
  }

  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  rpc::CallOptions opts;
  opts.timeout = 1s;  // the call's whole budget, connecting included
  int status = 1;
  client.async_call("echo", "hi", opts, [&](boost::system::error_code ec, rpc::Response r) {
    // Runs exactly once: with the reply, or with an error (rpc::errc) and r.error_message.
    if (ec) {
      std::printf("failed: %s\n", r.error_message.c_str());
    } else {
      std::printf("echo -> %s\n", r.payload.c_str());
      status = 0;
    }
    client.close();  // the client and the server were all that kept io.run() busy:
    server.stop();   // now it returns
  });
  io.run();
  return status;
}
// [readme:service-end]
// clang-format on
