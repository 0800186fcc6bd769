#pragma once
/// ServerStream: the server's end of a stream (Server::handle_stream).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/detail/stream_ops.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/rpc/stream_info.h>
#include <wheelrpc/rpc/write_options.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

/// One stream a client opened, as its handler sees it: the client's
/// messages (async_read), the handler's (async_write), and the end
/// (finish). A handle: copies share the stream. When the last copy goes
/// before finish(), the stream ends with server_error ("the handler dropped
/// the stream"), so a client never waits on a forgotten stream.
///
/// The stream ends exactly once: by finish(), by the client (cancel, a lost
/// connection), by its deadline (the client's stream_timeout, propagated),
/// by ServerStreamOptions' message-idle or write-stall timeout, by a
/// protocol violation, or by the server's shutdown after its grace. Once it
/// ended, cancelled() is true (unless finish() ended it), reads fail with its
/// error and writes with it (errc::stream_closed after finish()).
///
/// Completion handlers run on their associated executor (default: the
/// connection's strand, or ServerOptions::handler_executor). Thread-safe:
/// any method from any thread (never the timer's worker). One read and one
/// write outstanding at a time.
class ServerStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  /// Of async_read: a message, or std::nullopt once the client half-closed
  /// and every message was read; an error if the stream ended otherwise.
  using ReadSignature = detail::StreamReadSignature;
  using DoneSignature = detail::StreamDoneSignature;

  ServerStream() = default;
  explicit ServerStream(std::shared_ptr<detail::StreamHandle> handle) noexcept : handle_(std::move(handle)) {}
  bool valid() const noexcept { return handle_ != nullptr; }

  template <class Token>
  auto async_read(Token&& token) {
    return detail::initiate_stream_op<ReadSignature>(
        core(), std::forward<Token>(token),
        [c = core()](detail::StreamReadHandler h) mutable { detail::stream_read(c, std::move(h)); });
  }
  /// Sends `message`; completes once the client has room for it (its credit window).
  template <class Token>
  auto async_write(std::string message, Token&& token) {
    return async_write(std::move(message), WriteOptions{}, std::forward<Token>(token));
  }
  /// The same, with this message's options (WriteOptions::no_compression:
  /// this one goes uncompressed).
  template <class Token>
  auto async_write(std::string message, WriteOptions options, Token&& token) {
    return detail::initiate_stream_op<DoneSignature>(
        core(), std::forward<Token>(token),
        [c = core(), m = std::move(message), options](detail::StreamDoneHandler h) mutable {
          detail::stream_write(c, std::move(m), std::move(h), options);
        });
  }
  /// The algorithm (and level, 0: its default) of the messages written from
  /// now on, instead of the stream's (the client's CallOptions::compression,
  /// mirrored on the native wire; none on the gRPC wire; or
  /// ServerCompressionOptions::reply): `identity` sends them
  /// uncompressed; another algorithm compresses them even when the client
  /// asked for none (if it decodes that algorithm, past the threshold, when
  /// they shrink; docs/compression.md). Between writes; any thread.
  void set_compression(transport::Compression compression, int level = 0);
  /// Whether the message the last completed async_read returned came
  /// compressed (e.g. to check gRPC interop's expect_compressed). After
  /// that read completed, before the next.
  bool last_read_compressed() const;
  /// Ends the stream: with success (an empty `ec`), or with `ec` (a
  /// StatusCode, an rpc::errc, any error: sent as Status as a unary
  /// Responder::fail does) and `message` for the client. Call it after the
  /// last write completed (a write still waiting for credit fails). Once; a
  /// no-op once the stream ended.
  void finish(boost::system::error_code ec = {}, std::string message = {});
  void finish(StatusCode code, std::string message) { finish(make_error_code(code), std::move(message)); }
  /// Metadata sent with the end (gRPC's trailers). Before finish().
  void add_trailer(std::string key, std::string value);
  /// Metadata sent before the first message (gRPC's initial metadata, its
  /// response headers): with the first message written, or with the end
  /// when the handler writes none; the client reads it in ClientStream::
  /// initial_metadata(). Before the first async_write; added later, it is
  /// not sent. (The stream's acceptance goes before the handler runs, so it
  /// cannot carry it.)
  void add_initial_metadata(std::string key, std::string value);

  /// True once the stream ended other than by finish(): the client
  /// cancelled, the connection was lost, a timer fired, the server stops.
  bool cancelled() const;
  /// The stream's method and the client's metadata (the attachments it
  /// opened the stream with).
  const std::string& method() const;
  const transport::Attachments& metadata() const;
  /// The first value of metadata `key`, if any.
  std::optional<std::string_view> find_metadata(std::string_view key) const;
  /// The client's stream deadline (CallOptions::stream_timeout), if it set one.
  std::optional<std::chrono::steady_clock::time_point> deadline() const;
  /// The client's "ip:port".
  std::string peer() const { return info().peer; }
  std::string error_message() const { return handle_ ? detail::stream_error_message(handle_->core()) : std::string(); }
  StreamInfo info() const { return handle_ ? detail::stream_info(handle_->core()) : StreamInfo{}; }
  executor_type get_executor() const { return handle_ ? detail::stream_executor(handle_->core()) : executor_type(); }

 private:
  const std::shared_ptr<detail::StreamCore>& core() const noexcept {
    static const std::shared_ptr<detail::StreamCore> none;
    return handle_ ? handle_->shared() : none;
  }
  std::shared_ptr<detail::StreamHandle> handle_;
};

/// A stream method's handler: called once per accepted stream, on the
/// connection's strand (or ServerOptions::handler_executor). It may return
/// at once and go on asynchronously (co_spawn a coroutine with the stream).
using StreamHandler = std::function<void(ServerStream)>;

}  // namespace wheelrpc::rpc
