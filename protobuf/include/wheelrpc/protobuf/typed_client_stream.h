#pragma once
/// TypedClientStream: the client's end of a typed streaming method, what a
/// generated stub's `async_<Method>` for a `stream` method completes with.

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/protobuf/detail/typed_stream_ops.h>
#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/stream_info.h>
#include <wheelrpc/rpc/write_options.h>
#include <wheelrpc/transport/compression.h>

namespace wheelrpc::rpc {

/// A ClientStream that writes `Write` messages and reads `Read` messages
/// (protobuf message classes): for a method `rpc Chat(stream Req) returns
/// (stream Reply)` the stub's `async_Chat` gives a TypedClientStream<Req,
/// Reply>. Everything else is ClientStream's (docs/streams.md): flow
/// control, the four timers, the exactly-once end, the handle semantics
/// (copies share the stream; when the last copy goes before it ended, it is
/// cancelled).
///
/// A message received that is not a valid `Read` cancels the stream (the
/// server sees it cancelled) and the read fails with StatusCode::internal,
/// as do the reads and async_finish after it; error_message() names the
/// method, the server and the type.
///
/// Operations take any completion token; use_awaitable and use_future throw
/// CallError with error_message() on failure. Completion handlers run on
/// their associated executor (default: the client's). One read and one write
/// outstanding at a time; async_writes_done and async_finish once each.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe (any method from any thread,
/// as ClientStream).
///
/// @par Example
/// @code
/// auto chat = co_await stub.async_Chat(use_awaitable);  // TypedClientStream<HelloRequest, HelloReply>
/// co_await chat.async_write(request, use_awaitable);
/// co_await chat.async_writes_done(use_awaitable);
/// while (std::optional<HelloReply> reply = co_await chat.async_read(use_awaitable)) use(*reply);
/// co_await chat.async_finish(use_awaitable);  // throws CallError on a failed stream
/// @endcode
template <class Write, class Read>
class TypedClientStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using WriteMessage = Write;
  using ReadMessage = Read;
  /// Of async_read: a message, or std::nullopt once the server ended the
  /// stream with success and every message was read; an error otherwise.
  using ReadSignature = void(boost::system::error_code, std::optional<Read>);
  /// Of async_write, async_writes_done, async_finish.
  using DoneSignature = void(boost::system::error_code);

  /// No stream: valid() is false and every operation fails with errc::stream_closed.
  TypedClientStream() = default;
  explicit TypedClientStream(ClientStream stream)
      : state_(std::make_shared<detail::TypedStreamState<ClientStream>>(std::move(stream))) {}

  bool valid() const noexcept { return state_ && state_->stream().valid(); }

  /// Sends `message` (serialized now); completes as ClientStream::async_write.
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
                                       [body = std::move(body), options](ClientStream& s, auto handler) mutable {
                                         s.async_write(std::move(body), options, std::move(handler));
                                       });
  }
  /// The algorithm of the messages written from now on (ClientStream::set_compression).
  void set_compression(transport::Compression compression, int level = 0) {
    state()->stream().set_compression(compression, level);
  }
  /// Whether the message the last completed async_read returned came compressed.
  bool last_read_compressed() const { return state()->stream().last_read_compressed(); }
  /// The next message from the server, parsed (see ReadSignature).
  template <class Token>
  auto async_read(Token&& token) {
    return detail::initiate_typed_read<Read>(state(), std::forward<Token>(token));
  }
  /// Half-closes (ClientStream::async_writes_done).
  template <class Token>
  auto async_writes_done(Token&& token) {
    return detail::initiate_typed_done(state(), false, std::forward<Token>(token),
                                       [](ClientStream& s, auto handler) { s.async_writes_done(std::move(handler)); });
  }
  /// Completes once the stream ended, with its final status
  /// (ClientStream::async_finish), or StatusCode::internal after a message
  /// that did not parse.
  template <class Token>
  auto async_finish(Token&& token) {
    return detail::initiate_typed_done(state(), true, std::forward<Token>(token),
                                       [](ClientStream& s, auto handler) { s.async_finish(std::move(handler)); });
  }
  /// Ends the stream now (ClientStream::cancel). Idempotent.
  void cancel() { state()->stream().cancel(); }
  /// The server's initial metadata (ClientStream::initial_metadata).
  transport::Attachments initial_metadata() const { return state()->stream().initial_metadata(); }
  /// The server's trailers, once the stream ended (ClientStream::trailers).
  transport::Attachments trailers() const { return state()->stream().trailers(); }
  /// The full message of its error ("" while it has none).
  std::string error_message() const { return state()->error_message(); }
  StreamInfo info() const { return state()->stream().info(); }
  /// The default executor of its completion handlers (the client's).
  executor_type get_executor() const { return state()->stream().get_executor(); }

 private:
  using State = detail::TypedStreamState<ClientStream>;
  const std::shared_ptr<State>& state() const {
    static const std::shared_ptr<State> none = std::make_shared<State>(ClientStream());
    return state_ ? state_ : none;
  }
  std::shared_ptr<State> state_;
};

}  // namespace wheelrpc::rpc
