// Docs quote this file's lines verbatim: not reformatted.
// clang-format off
// greeter_server: a typed service with a coroutine handler.
//
//   greeter_server [--port N]     (prints "listening on 127.0.0.1:PORT"; stops on SIGINT/SIGTERM)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "greeter.wheelrpc.h"  // generated from greeter.proto by wheelrpc_protobuf_generate

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;

// [guide:greeter-service]
class GreeterImpl : public helloworld::Greeter::Service {
  asio::awaitable<helloworld::HelloReply> SayHello(rpc::ServerContext& ctx,
                                                   const helloworld::HelloRequest& req) override {
    if (req.name().empty()) throw rpc::StatusError(rpc::StatusCode::invalid_argument, "name is empty");
    helloworld::HelloReply reply;
    reply.set_message("Hello, " + req.name() + " (from " + ctx.peer() + ")");
    co_return reply;
  }
};
// [guide:greeter-service-end]

int main(int argc, char** argv) {
  unsigned short port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
  }
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  GreeterImpl greeter;
  rpc::Server server(io.get_executor(), timer);
  server.add_service(greeter);
  if (auto ec = server.listen({asio::ip::make_address("127.0.0.1"), port})) {
    std::fprintf(stderr, "cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(server.local_endpoint().port()));
  std::fflush(stdout);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) { server.stop(); });
  io.run();
  return 0;
}
// clang-format on
