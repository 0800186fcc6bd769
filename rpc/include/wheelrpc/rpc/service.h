#pragma once
/// Service: the base of the typed services protoc-gen-wheelrpc generates.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/server_stream.h>

namespace wheelrpc::rpc {

/// What a typed method carries each way: one message (unary), or a stream
/// (the `stream` keyword of the .proto). Generated as `kind` in a method's
/// traits (`Greeter::Methods::SayHello::kind`).
enum class MethodKind : std::uint8_t {
  unary,             ///< one request, one reply: a call (Server::handle)
  client_streaming,  ///< `rpc M(stream Req) returns (Reply)`: a stream (Server::handle_stream)
  server_streaming,  ///< `rpc M(Req) returns (stream Reply)`: a stream
  bidi_streaming,    ///< `rpc M(stream Req) returns (stream Reply)`: a stream
};

/// One method of a Service, as the server registers it: an ordinary
/// Server::Handler under the method's wire path, plus what the admin
/// gateway needs to speak JSON to it.
struct ServiceMethod {
  std::string path;          ///< "/helloworld.Greeter/SayHello"
  std::string name;          ///< "SayHello"
  std::string request_type;  ///< the request message's full name, "helloworld.HelloRequest"
  std::string reply_type;    ///< "helloworld.HelloReply"
  Server::Handler handler;   ///< parses the request, runs the typed handler, answers
  MethodOptions options;     ///< its limits (Service::set_method_options)
  /// JSON (protobuf's JSON mapping) to a request body: true and the body,
  /// or false and why ("invalid JSON: ... field 'nmae' ...").
  std::function<bool(std::string_view json, std::string& body, std::string& error)> request_from_json;
  /// A reply body to JSON: true and the text, or false and why.
  std::function<bool(std::string_view body, std::string& json, std::string& error)> reply_to_json;
};

/// One streaming method of a Service (MethodKind other than unary), as the
/// server registers it: a StreamHandler under the method's wire path
/// (Server::handle_stream). Not transcoded by the admin gateway.
struct ServiceStreamMethod {
  std::string path;          ///< "/helloworld.Greeter/Chat"
  std::string name;          ///< "Chat"
  std::string request_type;  ///< the message type the client sends, "helloworld.HelloRequest"
  std::string reply_type;    ///< the message type the server sends, "helloworld.HelloReply"
  MethodKind kind = MethodKind::bidi_streaming;
  StreamHandler handler;  ///< wraps the stream typed, runs the typed handler
  MethodOptions options;  ///< its limits and timeout (Service::set_method_options, the IDL's timeout_ms)
};

/// The base of every generated service base (`helloworld::Greeter::Service`
/// and `::CallbackService`): its methods, each under its wire path
/// `/<package>.<Service>/<Method>` (unary ones as calls, streaming ones as
/// streams). Register an implementation with
/// `Server::add_service(impl)` before `listen`; it must outlive the server.
///
/// @par Thread Safety
/// Built by its constructor, read-only afterwards: safe to share.
class Service {
 public:
  explicit Service(std::string_view full_name) : full_name_(full_name) {}
  virtual ~Service() = default;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// "helloworld.Greeter".
  const std::string& full_name() const noexcept { return full_name_; }
  /// Its unary methods.
  const std::vector<ServiceMethod>& methods() const noexcept { return methods_; }
  /// Its streaming methods.
  const std::vector<ServiceStreamMethod>& stream_methods() const noexcept { return stream_methods_; }
  /// Limits and timeout of the method `name` ("SayHello"; a streaming one's
  /// max_concurrency counts its open streams): call before add_service. A
  /// timeout left 0 keeps the IDL's `timeout_ms`. Throws
  /// std::invalid_argument naming the method if the service has no method
  /// of that name.
  void set_method_options(std::string_view name, MethodOptions options);

 protected:
  /// Registers a method served by a coroutine `fn(ServerContext&, const
  /// Request&)` returning boost::asio::awaitable<Reply>. Defined in
  /// <wheelrpc/protobuf/typed.h>, which generated headers include.
  template <class Method, class Fn>
  void add_coroutine_method(Fn fn);
  /// Registers a method served by `fn(ServerContext&, const Request&,
  /// TypedResponder<Reply>)`. Defined in <wheelrpc/protobuf/typed.h>.
  template <class Method, class Fn>
  void add_callback_method(Fn fn);
  /// Registers a streaming method served by a coroutine: for a
  /// bidi_streaming `Method`, `fn(TypedServerStream<Request, Reply>&)`
  /// returning awaitable<void>; server_streaming, `fn(const Request&,
  /// TypedServerStream&)` returning awaitable<void>; client_streaming,
  /// `fn(TypedServerStream&)` returning awaitable<Reply>. Defined in
  /// <wheelrpc/protobuf/typed_stream.h>.
  template <class Method, class Fn>
  void add_stream_coroutine_method(Fn fn);
  /// Registers a streaming method (any kind) served by
  /// `fn(TypedServerStream<Request, Reply>)`, which ends it with finish().
  /// Defined in <wheelrpc/protobuf/typed_stream.h>.
  template <class Method, class Fn>
  void add_stream_callback_method(Fn fn);

 private:
  std::string full_name_;
  std::vector<ServiceMethod> methods_;
  std::vector<ServiceStreamMethod> stream_methods_;
};

}  // namespace wheelrpc::rpc
