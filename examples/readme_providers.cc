// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// readme_providers: the README's "Several providers" snippet, as a whole
// program (the README shows the part between the [readme:providers] marks).
// Three servers provide "get_user"; one client spreads its calls over them,
// with one deadline for all attempts of a call, retries and a hedge.
//
//   readme_providers        (prints the reply and exits 0)
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <boost/asio/io_context.hpp>

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;

namespace {

// Serves "get_user" on a free port of 127.0.0.1 and returns the endpoint.
asio::ip::tcp::endpoint serve_get_user(rpc::Server& server) {
  server.handle("get_user", [](rpc::Request, rpc::Responder r) { r.reply(R"({"id":42,"name":"Ada"})"); });
  if (auto ec = server.listen({asio::ip::make_address("127.0.0.1"), 0})) {
    std::printf("cannot listen: %s\n", ec.message().c_str());
  }
  return server.local_endpoint();
}

}  // namespace

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  rpc::Server server_a(io.get_executor(), timer), server_b(io.get_executor(), timer),
      server_c(io.get_executor(), timer);
  const auto a = serve_get_user(server_a), b = serve_get_user(server_b), c = serve_get_user(server_c);
  const std::string payload = R"({"id":42})";
  int status = 1;

  // [readme:providers]
  rpc::ClientOptions copts;
  copts.load_balance = rpc::LoadBalance::least_active;
  rpc::Client client(io.get_executor(), timer, {a, b, c}, copts);

  rpc::CallOptions opts;
  opts.timeout = 2s;         // one deadline for all attempts
  opts.retries = 2;          // the default: up to 3 attempts
  opts.idempotent = true;    // timeouts may be retried (each attempt gets a share)
  opts.hedge_delay = 50ms;   // no reply in 50 ms: a second attempt elsewhere
  client.async_call("get_user", payload, opts, [&](boost::system::error_code ec, rpc::Response r) {
    std::printf("get_user -> %s\n", ec ? r.error_message.c_str() : r.payload.c_str());
    status = ec ? 1 : 0;
    client.close();
    for (rpc::Server* s : {&server_a, &server_b, &server_c}) s->stop();  // then io.run() returns
  });
  // [readme:providers-end]
  io.run();
  return status;
}
// clang-format on
