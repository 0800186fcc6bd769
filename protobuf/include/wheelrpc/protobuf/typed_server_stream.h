#pragma once
/// TypedServerStream: the server's end of a typed streaming method, what the
/// handlers of a generated service base's `stream` methods get.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/protobuf/detail/typed_stream_ops.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/rpc/stream_info.h>
#include <wheelrpc/rpc/write_options.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/rpc/trace.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

/// A ServerStream that reads `Read` messages and writes `Write` messages
/// (protobuf message classes): for a method `rpc Chat(stream Req) returns
/// (stream Reply)` the handler gets a TypedServerStream<Req, Reply>, in all
/// three kinds. It is also the handler's context: the client's metadata,
/// deadline, peer and trace, and whether the stream was cancelled, are
/// here (a stream has no ServerContext). Everything else is ServerStream's
/// (docs/streams.md): flow control, the timers, the exactly-once end, the
/// handle semantics (copies share the stream; when the last copy goes
/// before finish(), the stream ends with server_error).
///
/// A message received that is not a valid `Read` finishes the stream with
/// StatusCode::invalid_argument naming the method, the client and the type
/// (the client's async_finish gets it), and the read fails with it, as do
/// the reads after it.
///
/// Completion handlers run on their associated executor (default: the
/// connection's strand, or ServerOptions::handler_executor; a coroutine
/// handler's own executor). use_awaitable and use_future throw CallError on
/// failure. One read and one write outstanding at a time.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe (any method from any thread,
/// as ServerStream).
///
/// @par Example
/// @code
/// asio::awaitable<void> Chat(rpc::TypedServerStream<HelloRequest, HelloReply>& stream) override {
///   while (std::optional<HelloRequest> request = co_await stream.async_read(asio::use_awaitable)) {
///     co_await stream.async_write(reply_to(*request), asio::use_awaitable);
///   }
/// }  // returning finishes the stream with success
/// @endcode
template <class Read, class Write>
class TypedServerStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using ReadMessage = Read;
  using WriteMessage = Write;
  /// Of async_read: a message, or std::nullopt once the client half-closed
  /// and every message was read; an error if the stream ended otherwise.
  using ReadSignature = void(boost::system::error_code, std::optional<Read>);
  /// Of async_write.
  using DoneSignature = void(boost::system::error_code);

  /// No stream: valid() is false and every operation fails with errc::stream_closed.
  TypedServerStream() = default;
  explicit TypedServerStream(ServerStream stream)
      : state_(std::make_shared<detail::TypedStreamState<ServerStream>>(std::move(stream))) {}

  bool valid() const noexcept { return state_ && state_->stream().valid(); }

  /// The client's next message, parsed (see ReadSignature).
  template <class Token>
  auto async_read(Token&& token) {
    return detail::initiate_typed_read<Read>(state(), std::forward<Token>(token));
  }
  /// Sends `message` (serialized now); completes once the client has room
  /// for it (ServerStream::async_write).
  template <class Token>
  auto async_write(const Write& message, Token&& token) {
    return async_write(message, WriteOptions{}, std::forward<Token>(token));
  }
  /// The same, with this message's options (WriteOptions::no_compression).
  template <class Token>
  auto async_write(const Write& message, WriteOptions options, Token&& token) {
    std::string body;
    message.SerializePartialToString(&body);
    return detail::initiate_typed_done(state(), false, std::forward<Token>(token),
                                       [body = std::move(body), options](ServerStream& s, auto handler) mutable {
                                         s.async_write(std::move(body), options, std::move(handler));
                                       });
  }
  /// The algorithm of the messages written from now on (ServerStream::set_compression).
  void set_compression(transport::Compression compression, int level = 0) {
    state()->stream().set_compression(compression, level);
  }
  /// Whether the message the last completed async_read returned came compressed.
  bool last_read_compressed() const { return state()->stream().last_read_compressed(); }
  /// Ends the stream (ServerStream::finish): with success, or with `ec` (a
  /// StatusCode, an rpc::errc) and `message` for the client. After the last
  /// write completed. Once; a no-op once the stream ended. The coroutine
  /// form calls it for you when the handler returns or throws.
  void finish(boost::system::error_code ec = {}, std::string message = {}) {
    state()->stream().finish(ec, std::move(message));
  }
  void finish(StatusCode code, std::string message) { finish(make_error_code(code), std::move(message)); }
  /// Metadata sent with the end (gRPC's trailers). Before finish().
  void add_trailer(std::string key, std::string value) {
    state()->stream().add_trailer(std::move(key), std::move(value));
  }
  /// Metadata sent before the first message (gRPC's initial metadata;
  /// ServerStream::add_initial_metadata). Before the first write.
  void add_initial_metadata(std::string key, std::string value) {
    state()->stream().add_initial_metadata(std::move(key), std::move(value));
  }

  /// True once the stream ended other than by finish(): the client
  /// cancelled, the connection was lost, a timer fired, the server stops.
  /// The handler may stop its work.
  bool cancelled() const { return state()->stream().cancelled(); }
  /// The wire path, e.g. "/helloworld.Greeter/Chat".
  const std::string& method() const { return state()->stream().method(); }
  /// The client's metadata (the CallOptions::attachments it opened the stream with).
  const transport::Attachments& metadata() const { return state()->stream().metadata(); }
  /// The first value of metadata `key`, if any.
  std::optional<std::string_view> find_metadata(std::string_view key) const {
    return state()->stream().find_metadata(key);
  }
  /// The client's stream deadline (its CallOptions::stream_timeout, from
  /// the call or the IDL), if it set one. Calls a coroutine handler makes
  /// inherit it.
  std::optional<std::chrono::steady_clock::time_point> deadline() const { return state()->stream().deadline(); }
  /// The client's "ip:port".
  std::string peer() const { return state()->stream().peer(); }
  /// The stream's trace (its traceparent metadata), std::nullopt without a valid one.
  std::optional<TraceContext> trace() const {
    const auto tp = find_metadata(kTraceparentKey);
    return tp ? TraceContext::parse(*tp) : std::nullopt;
  }
  /// The full message of its error ("" while it has none).
  std::string error_message() const { return state()->error_message(); }
  StreamInfo info() const { return state()->stream().info(); }
  /// The default executor of its completion handlers.
  executor_type get_executor() const { return state()->stream().get_executor(); }

 private:
  using State = detail::TypedStreamState<ServerStream>;
  const std::shared_ptr<State>& state() const {
    static const std::shared_ptr<State> none = std::make_shared<State>(ServerStream());
    return state_ ? state_ : none;
  }
  std::shared_ptr<State> state_;
};

}  // namespace wheelrpc::rpc
