// Docs quote this file's lines verbatim: not reformatted.
// clang-format off
// greeter_client: calls Greeter.SayHello with co_await through the generated stub.
//
//   greeter_client [--server HOST:PORT] [--name NAME]     (HOST: an IP literal or a host name)
//   prints "Hello, NAME (from ...)" and exits 0; on failure the status and the full message, and exits 1
//   greeter_client --help                                 (the usage, kUsage below)
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "greeter.wheelrpc.h"
#include "support/flags.h"
#include "support/host_port.h"

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

constexpr const char* kUsage =
    "usage: greeter_client [--server HOST:PORT] [--name NAME]\n"
    "  --server HOST:PORT  the greeter to call (default 127.0.0.1:50051): an IPv4 or\n"
    "                    [IPv6] literal, or a host name such as localhost, resolved\n"
    "                    before the call (each of its addresses a server); port 1..65535\n"
    "  --name NAME       who to greet (default world; an empty name is refused by the\n"
    "                    server with INVALID_ARGUMENT)\n"
    "  -h, --help        print this text and exit 0\n"
    "  --version         print the version (\"greeter_client (wheelrpc) X.Y.Z\") and exit 0\n"
    "Flags take their value as --flag V or --flag=V.\n"
    "Calls helloworld.Greeter/SayHello once, with greeter.proto's policy (a 200 ms\n"
    "deadline, idempotent, 2 retries), and prints the greeting.\n"
    "Exit status: 0 greeted; 1 the call failed (its status code and message on stdout)\n"
    "or the host name does not resolve (one line on stderr); 2 usage error.\n";

int main(int argc, char** argv) {
  std::string server = "127.0.0.1:50051", name = "world";
  wheelrpc::examples::FlagParser flags("greeter_client", kUsage);
  flags
      .add_value("--server",
                 [&](const std::string& value) -> std::optional<std::string> {
                   if (!wheelrpc::examples::is_server_address(value)) {
                     return "invalid server address '" + value +
                            "': expected HOST:PORT with a host name or an IPv4/[IPv6] literal and a port "
                            "1..65535, e.g. 127.0.0.1:50051 or localhost:50051";
                   }
                   server = value;
                   return std::nullopt;
                 })
      .add_value("--name", [&](const std::string& value) -> std::optional<std::string> {
        name = value;
        return std::nullopt;
      });
  if (const auto status = flags.parse(argc, argv)) return *status;

  std::vector<asio::ip::tcp::endpoint> endpoints;
  if (const auto ec = wheelrpc::examples::resolve_server(server, endpoints)) {
    std::fprintf(stderr, "greeter_client: cannot resolve %s: %s\n", server.c_str(), ec.message().c_str());
    return 1;
  }
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  rpc::Client client(io.get_executor(), timer, endpoints);
  int status = 0;
  asio::co_spawn(io, greet(client, name), [&](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const rpc::CallError& x) {  // the status code, then the phase, time, method and server
      std::printf("%s: %s\n", std::string(rpc::to_string(rpc::status_code_of(x.code()))).c_str(), x.what());
      status = 1;
    } catch (const std::exception& x) {  // anything else: said in one line, never an abort
      std::fprintf(stderr, "greeter_client: %s\n", x.what());
      status = 1;
    }
    client.close();
  });
  io.run();
  return status;
}
// clang-format on
