// Docs quote this file's lines verbatim: not reformatted.
// clang-format off
// greeter_client: calls Greeter.SayHello with co_await through the generated stub.
//
//   greeter_client --server 127.0.0.1:PORT [--name NAME]
//   prints "Hello, NAME (from ...)" and exits 0; on failure the status and the full message, and exits 1
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "greeter.wheelrpc.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;

// [guide:greeter-call]
asio::awaitable<void> greet(rpc::Client& client, std::string name) {
  helloworld::Greeter::Stub stub(client);
  helloworld::HelloRequest req;
  req.set_name(std::move(name));
  // The deadline (200 ms), idempotence and retries come from greeter.proto's option.
  helloworld::HelloReply reply = co_await stub.async_SayHello(req, asio::use_awaitable);
  std::printf("%s\n", reply.message().c_str());
}
// [guide:greeter-call-end]

int main(int argc, char** argv) {
  std::string server = "127.0.0.1:50051", name = "world";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--server") == 0) server = argv[i + 1];
    if (std::strcmp(argv[i], "--name") == 0) name = argv[i + 1];
  }
  const auto colon = server.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "--server must be HOST:PORT\n");
    return 2;
  }
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  rpc::Client client(io.get_executor(), timer,
                     {{asio::ip::make_address(server.substr(0, colon)),
                       static_cast<unsigned short>(std::atoi(server.c_str() + colon + 1))}});
  int status = 0;
  asio::co_spawn(io, greet(client, name), [&](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const rpc::CallError& x) {  // the status code, then the phase, time, method and server
      std::printf("%s: %s\n", std::string(rpc::to_string(rpc::status_code_of(x.code()))).c_str(), x.what());
      status = 1;
    }
    client.close();
  });
  io.run();
  return status;
}
// clang-format on
