// Built against an installed wheelrpc: greeter.proto through protoc and the
// installed protoc-gen-wheelrpc (wheelrpc_protobuf_generate from the package
// alone), a typed server in the coroutine form and a typed call through the
// generated stub with asio::use_awaitable. The (wheelrpc.method) option reads
// back through the installed <wheelrpc/options.pb.h> and reaches the stub's
// traits. Exits 0 when the reply came back and the policy is the IDL's.
#include <cstdio>
#include <exception>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <wheelrpc/options.pb.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "greeter.wheelrpc.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;

namespace {

class GreeterImpl : public consumer::Greeter::Service {
  asio::awaitable<consumer::HelloReply> SayHello(rpc::ServerContext&, const consumer::HelloRequest& req) override {
    consumer::HelloReply reply;
    reply.set_message("Hello, " + req.name());
    co_return reply;
  }
};

asio::awaitable<bool> greet(rpc::Client& client) {
  consumer::Greeter::Stub stub(client);
  consumer::HelloRequest req;
  req.set_name("consumer");
  rpc::CallOptions opts;
  opts.timeout = std::chrono::seconds(10);  // generous: a loaded machine (the IDL says 200 ms)
  consumer::HelloReply reply = co_await stub.async_SayHello(req, opts, asio::use_awaitable);
  std::printf("protobuf_consumer: SayHello -> %s\n", reply.message().c_str());
  co_return reply.message() == "Hello, consumer";
}

}  // namespace

int main() {
  const auto* method = consumer::HelloRequest::descriptor()->file()->FindServiceByName("Greeter")->method(0);
  const wheelrpc::MethodPolicy& policy = method->options().GetExtension(wheelrpc::method);
  std::printf("%s: timeout_ms %u, retries %u\n", method->full_name().c_str(), policy.timeout_ms(), policy.retries());
  constexpr auto traits = consumer::Greeter::Methods::SayHello::policy;
  const bool idl = policy.timeout_ms() == 200 && policy.idempotent() && policy.retries() == 2 &&
                   traits.timeout == std::chrono::milliseconds(200) && traits.retries == 2;

  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  GreeterImpl greeter;
  rpc::Server server(io.get_executor(), timer);
  server.add_service(greeter);
  if (auto ec = server.listen({asio::ip::make_address("127.0.0.1"), 0})) {
    std::printf("protobuf_consumer: cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  bool ok = false;
  asio::co_spawn(io, greet(client), [&](std::exception_ptr e, bool good) {
    try {
      if (e) std::rethrow_exception(e);
      ok = good;
    } catch (const std::exception& x) {
      std::printf("protobuf_consumer: %s\n", x.what());
    }
    client.close();
    server.stop();
  });
  io.run();
  return idl && ok ? 0 : 1;
}
