// Docs quote this file's lines verbatim: not reformatted.
// clang-format off
// greeter_server: a typed service with a coroutine handler.
//
//   greeter_server [--port N] [--no-reflection]     (prints "listening on 127.0.0.1:PORT"; stops on SIGINT/SIGTERM)
//   greeter_server --help         (the usage, kUsage below)
#include <cstdio>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/services/server_reflection.h>
#include <wheelrpc/transport/connector.h>

#include "greeter.wheelrpc.h"  // generated from greeter.proto by wheelrpc_protobuf_generate
#include "support/flags.h"

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

constexpr const char* kUsage =
    "usage: greeter_server [--port P] [--no-reflection]\n"
    "  --port P          TCP port to listen on, 0..65535 (default 0 = pick a free one)\n"
    "  --no-reflection   do not serve gRPC server reflection (served by default: grpcurl list)\n"
    "  -h, --help        print this text and exit 0\n"
    "  --version         print the version (\"greeter_server (wheelrpc) X.Y.Z\") and exit 0\n"
    "Flags take their value as --flag V or --flag=V.\n"
    "Serves helloworld.Greeter (greeter.proto) on 127.0.0.1; the first line on stdout is\n"
    "\"listening on 127.0.0.1:PORT\". SIGINT or SIGTERM stops it.\n"
    "Exit status: 0 after SIGINT or SIGTERM, 1 if it cannot listen, 2 usage error.\n";

int main(int argc, char** argv) {
  unsigned short port = 0;
  wheelrpc::examples::FlagParser flags("greeter_server", kUsage);
  bool reflection = true;
  flags.add_number("--port", 0, 65535, [&](long long v) { port = static_cast<unsigned short>(v); });
  flags.add_switch("--no-reflection", [&] { reflection = false; });
  if (const auto status = flags.parse(argc, argv)) return *status;

  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  GreeterImpl greeter;
  rpc::Server server(io.get_executor(), timer);
  server.add_service(greeter);
  // grpc.reflection.v1 and v1alpha (grpcurl, Postman), before listen; the server stops before it goes.
  std::optional<wheelrpc::services::ServerReflection> server_reflection;
  if (reflection) server_reflection.emplace(server);
  const asio::ip::tcp::endpoint endpoint{asio::ip::make_address("127.0.0.1"), port};
  if (auto ec = server.listen(endpoint)) {
    std::fprintf(stderr, "greeter_server: cannot listen on %s: %s\n",
                 wheelrpc::transport::endpoint_text(endpoint).c_str(), ec.message().c_str());
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
