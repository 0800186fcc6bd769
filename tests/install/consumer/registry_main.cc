// Built against an installed wheelrpc: a ServiceInstance through its JSON,
// a client following a service through an EtcdRegistry (no etcd needed:
// nothing answers, the client keeps waiting for its first set), closed
// again. Exits 0 when the JSON round-trips and everything closes, so
// io.run() returns. Linking proves that wheelrpc::registry is installed and
// exported with everything it needs.
#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <cstdio>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

int main() {
  wheelrpc::registry::ServiceInstance in;
  in.service = "echo";
  in.endpoint = "127.0.0.1:7001";
  in.tags["tier"] = "test";
  std::string why;
  const auto out = wheelrpc::registry::ServiceInstance::from_json(in.to_json(), why);
  if (!out || !(*out == in)) {
    std::fprintf(stderr, "ServiceInstance did not round-trip: %s\n", why.c_str());
    return 1;
  }
  wheelrpc::timer::HashedWheelTimer timer;
  boost::asio::io_context io;
  auto registry = wheelrpc::registry::EtcdRegistry::create(io.get_executor(), timer, "etcd://127.0.0.1:1");
  wheelrpc::rpc::Client client(io.get_executor(), timer, wheelrpc::registry::provider_source(registry, "echo"));
  boost::asio::post(io, [&] {
    client.close();
    registry->close();
  });
  io.run();
  std::printf("registry consumer: ok\n");
  return 0;
}
