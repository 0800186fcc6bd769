// Built against an installed wheelrpc: a server with an echo method, a
// FaultProxy in front of it adding 20 ms of latency to the replies, and a
// client whose coroutine calls through the proxy with asio::use_awaitable.
// After the one call everything is closed, io.run() returns and the program
// exits: 0 when the reply came back through the proxy and its toxic. Linking
// proves that wheelrpc::rpc and wheelrpc::fault are installed and exported
// with everything they need.
#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace asio = boost::asio;
namespace fault = wheelrpc::fault;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;

namespace {

// One call through the proxy; true when the reply is the payload, at least
// the toxic's latency after the call started.
asio::awaitable<bool> call_through(rpc::Client& client) {
  rpc::CallOptions opts;
  opts.timeout = 10s;  // generous: a loaded machine, a sanitizer build
  const auto start = std::chrono::steady_clock::now();
  rpc::Response r = co_await client.async_call("echo", "through the proxy", opts, asio::use_awaitable);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  std::printf("rpc_consumer: echo -> %s after %lld ms\n", r.payload.c_str(),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
  co_return r.payload == "through the proxy" && elapsed >= 20ms;
}

}  // namespace

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  const auto loopback = asio::ip::make_address("127.0.0.1");

  rpc::Server server(io.get_executor(), timer);
  server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  if (auto ec = server.listen({loopback, 0})) {
    std::printf("rpc_consumer: cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  fault::FaultProxy proxy(io.get_executor(), {loopback, 0}, server.local_endpoint());
  if (auto ec = proxy.start()) {
    std::printf("rpc_consumer: cannot start the proxy: %s\n", ec.message().c_str());
    return 1;
  }
  if (auto ec = proxy.add_toxic({"slow_replies", fault::Stream::downstream, fault::Latency{20ms, 0ms}})) {
    std::printf("rpc_consumer: cannot add the toxic: %s\n", ec.message().c_str());
    return 1;
  }

  rpc::Client client(io.get_executor(), timer, {proxy.local_endpoint()});
  int status = 1;
  asio::co_spawn(io, call_through(client), [&](std::exception_ptr e, bool ok) {
    try {
      if (e) std::rethrow_exception(e);
      const bool delayed = !proxy.toxics().empty() && proxy.toxics().front().applied > 0;
      std::printf("rpc_consumer: %s\n", ok && delayed ? "ok" : "the reply did not come through the toxic");
      status = ok && delayed ? 0 : 1;
    } catch (const std::exception& x) {
      std::printf("rpc_consumer: the call failed: %s\n", x.what());
    }
    client.close();  // then nothing keeps io.run() busy: it returns
    proxy.stop();
    server.stop();
  });
  io.run();
  return status;
}
