#pragma once
/// ServerReflection: gRPC server reflection (grpc.reflection.v1 and v1alpha)
/// for a wheelrpc Server, answered from the descriptors protoc-gen-wheelrpc
/// embeds in each generated `.wheelrpc.h`.

#include <memory>
#include <string>
#include <vector>

namespace wheelrpc::rpc {
class Server;
}  // namespace wheelrpc::rpc

namespace wheelrpc::services {

/// Serves `grpc.reflection.v1.ServerReflection/ServerReflectionInfo` and its
/// deprecated twin `grpc.reflection.v1alpha.ServerReflection/...` (what
/// grpcurl, Postman and wheelctl ask) on one Server, on both wires: the
/// native one and gRPC's. Each is a bidi stream; every request gets one
/// response, as gRPC's own implementation answers it:
///
/// - `list_services`: the server's typed services (Server::services(), in
///   registration order: these two among them), then `grpc.health.v1.Health`
///   when the server serves it (ServerOptions::health_service). Methods
///   registered by name (Server::handle, Server::handle_stream) have no
///   descriptor and are not listed.
/// - `file_by_filename`, `file_containing_symbol` (a service, method,
///   message, nested message, enum, enum value, field, oneof or extension,
///   by full name), `file_containing_extension`: the file, then those of
///   its imports, transitively, that this stream has not sent yet (the file
///   asked for is always sent; as gRPC-Go).
/// - `all_extension_numbers_of_type`: the numbers of the extensions of a
///   message type that the served files declare.
/// - A name that is not there: `error_response` with NOT_FOUND and gRPC's
///   message ("File not found.", "Symbol not found.", "Type not found.",
///   "Extension not found."); a request with none of the above set:
///   UNIMPLEMENTED. A request that does not parse ends the stream with
///   INVALID_ARGUMENT (the typed stream's rule).
/// - `valid_host` is the request's `host`; `original_request` the request.
///
/// The files are those the typed services carry (rpc::Service::
/// file_descriptors(): embedded in the generated headers, so no .proto is
/// read at run time), put into a DescriptorPool of its own at the first
/// request (once; a file that does not build, e.g. one whose imports are
/// missing, is logged on `wheelrpc.services` at warning level and left
/// out).
///
/// @par Lifetime
/// Construct it with the server before Server::listen (it registers its two
/// services with Server::add_service); it must outlive the server, as any
/// registered service must (declare it after the Server, or stop the server
/// before destroying it).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe (the streams it serves run
/// on the server's handler executor, any number at once).
///
/// @par Example
/// @code
/// rpc::Server server(io.get_executor(), timer);
/// GreeterImpl greeter;
/// server.add_service(greeter);
/// wheelrpc::services::ServerReflection reflection(server);  // before listen
/// server.listen({asio::ip::make_address("127.0.0.1"), 50051});
/// // grpcurl -plaintext 127.0.0.1:50051 list
/// @endcode
class ServerReflection {
 public:
  /// Registers both reflection services on `server`. Throws what
  /// Server::add_service throws: std::logic_error once the server listens,
  /// std::invalid_argument if reflection is registered on it already.
  explicit ServerReflection(rpc::Server& server);
  ~ServerReflection();
  ServerReflection(const ServerReflection&) = delete;
  ServerReflection& operator=(const ServerReflection&) = delete;

  /// The names `list_services` answers now ("helloworld.Greeter", ...,
  /// "grpc.reflection.v1.ServerReflection",
  /// "grpc.reflection.v1alpha.ServerReflection", "grpc.health.v1.Health").
  /// Any thread once the server listens.
  std::vector<std::string> service_names() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wheelrpc::services
