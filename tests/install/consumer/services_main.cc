// Built against an installed wheelrpc: wheelrpc::services' ServerReflection
// on a typed server (greeter.proto through the installed plugin, which
// embeds its descriptors), asked through the installed generated
// reflection stub (<includedir>/wheelrpc/services/generated): list_services,
// then the file of consumer.HelloRequest. Exits 0 when both answers are right.
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <google/protobuf/descriptor.pb.h>
#include <wheelrpc/services/server_reflection.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "greeter.wheelrpc.h"
#include "grpc/reflection/v1/reflection.wheelrpc.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
namespace v1 = grpc::reflection::v1;

namespace {

class GreeterImpl : public consumer::Greeter::Service {};

asio::awaitable<bool> reflect(rpc::Client& client) {
  v1::ServerReflection::Stub stub(client);
  auto stream = co_await stub.async_ServerReflectionInfo(asio::use_awaitable);
  v1::ServerReflectionRequest list;
  list.set_list_services("");
  co_await stream.async_write(list, asio::use_awaitable);
  std::optional<v1::ServerReflectionResponse> listed = co_await stream.async_read(asio::use_awaitable);
  v1::ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("consumer.HelloRequest");
  co_await stream.async_write(symbol, asio::use_awaitable);
  std::optional<v1::ServerReflectionResponse> file = co_await stream.async_read(asio::use_awaitable);
  co_await stream.async_writes_done(asio::use_awaitable);
  co_await stream.async_read(asio::use_awaitable);
  co_await stream.async_finish(asio::use_awaitable);
  if (!listed || !file) co_return false;
  std::string names;
  for (const auto& s : listed->list_services_response().service()) names += s.name() + " ";
  google::protobuf::FileDescriptorProto proto;
  const bool parsed = file->file_descriptor_response().file_descriptor_proto_size() > 0 &&
                      proto.ParseFromString(file->file_descriptor_response().file_descriptor_proto(0));
  std::printf("services_consumer: list_services -> %s; HelloRequest in %s\n", names.c_str(), proto.name().c_str());
  co_return names.starts_with("consumer.Greeter grpc.reflection.v1.ServerReflection ") &&
      parsed&& proto.name() == "greeter.proto";
}

}  // namespace

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  GreeterImpl greeter;
  rpc::Server server(io.get_executor(), timer);
  server.add_service(greeter);
  wheelrpc::services::ServerReflection reflection(server);
  if (auto ec = server.listen({asio::ip::make_address("127.0.0.1"), 0})) {
    std::printf("services_consumer: cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  bool ok = false;
  asio::co_spawn(io, reflect(client), [&](std::exception_ptr e, bool good) {
    try {
      if (e) std::rethrow_exception(e);
      ok = good;
    } catch (const std::exception& x) {
      std::printf("services_consumer: %s\n", x.what());
    }
    client.close();
    server.stop();
  });
  io.run();
  return ok ? 0 : 1;
}
