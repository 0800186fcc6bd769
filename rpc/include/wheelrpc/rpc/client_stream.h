#pragma once
/// ClientStream: the client's end of a stream (Client::async_open_stream).

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/detail/stream_ops.h>
#include <wheelrpc/rpc/stream_info.h>
#include <wheelrpc/rpc/write_options.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

/// One open stream to a provider: messages both ways, with the credit-based
/// flow control, the four timers and the exactly-once end of docs/streams.md.
/// A handle: copies share the stream; when the last copy goes before the
/// stream ended, the stream is cancelled (the server sees it cancelled).
///
/// Operations take any completion token (callbacks, use_awaitable, as_tuple,
/// use_future, deferred); with use_awaitable and use_future a failure throws
/// CallError whose what() is the stream's full message. Completion handlers
/// run on their associated executor (default: the client's). One read and
/// one write may be outstanding at a time; async_writes_done and async_finish
/// once each. Thread-safe: any method from any thread (never the timer's worker).
///
/// @par Example
/// @code
/// auto stream = co_await client.async_open_stream("chat", opts, use_awaitable);
/// co_await stream.async_write("hi", use_awaitable);
/// co_await stream.async_writes_done(use_awaitable);
/// while (auto message = co_await stream.async_read(use_awaitable)) use(*message);
/// co_await stream.async_finish(use_awaitable);  // throws CallError on a failed stream
/// @endcode
class ClientStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  /// Of async_read: a message, or std::nullopt once the server ended the
  /// stream with success and every message was read; an error otherwise.
  using ReadSignature = detail::StreamReadSignature;
  /// Of async_write, async_writes_done, async_finish.
  using DoneSignature = detail::StreamDoneSignature;

  /// No stream: valid() is false and every operation fails with errc::stream_closed.
  ClientStream() = default;
  explicit ClientStream(std::shared_ptr<detail::StreamHandle> handle) noexcept : handle_(std::move(handle)) {}

  bool valid() const noexcept { return handle_ != nullptr; }

  /// Sends `message`; completes once the server has room for it (its credit
  /// window), so a slow reader bounds what a writer holds. Fails with the
  /// stream's error once it ended (errc::stream_closed if it ended well),
  /// errc::stream_half_closed after async_writes_done (and on a
  /// server-streaming stream, which half-closes once its request is sent),
  /// errc::write_pending while another write is pending (one at a time),
  /// errc::write_stall when it waited past CallOptions::stall_timeout.
  template <class Token>
  auto async_write(std::string message, Token&& token) {
    return async_write(std::move(message), WriteOptions{}, std::forward<Token>(token));
  }
  /// The same, with this message's options (WriteOptions::no_compression:
  /// this one goes uncompressed, whatever CallOptions::compression says).
  template <class Token>
  auto async_write(std::string message, WriteOptions options, Token&& token) {
    return detail::initiate_stream_op<DoneSignature>(
        core(), std::forward<Token>(token),
        [c = core(), m = std::move(message), options](detail::StreamDoneHandler h) mutable {
          detail::stream_write(c, std::move(m), std::move(h), options);
        });
  }
  /// The algorithm (and level, 0: its default) of the messages written from
  /// now on, instead of CallOptions::compression (docs/compression.md).
  /// Between writes; any thread.
  void set_compression(transport::Compression compression, int level = 0) {
    if (handle_) detail::stream_set_compression(handle_->core(), compression, level);
  }
  /// The server's initial metadata (ServerStream::add_initial_metadata;
  /// gRPC's response headers): empty until its first message arrived (or
  /// its end, when it wrote none). A copy; any thread.
  transport::Attachments initial_metadata() const {
    return handle_ ? detail::stream_initial_metadata(handle_->core()) : transport::Attachments();
  }
  /// The server's trailers (ServerStream::add_trailer; gRPC's trailing
  /// metadata): empty until the stream ended. A copy; any thread.
  transport::Attachments trailers() const {
    return handle_ ? detail::stream_trailers(handle_->core()) : transport::Attachments();
  }
  /// Whether the message the last completed async_read returned came
  /// compressed. After that read completed, before the next.
  bool last_read_compressed() const { return handle_ && detail::stream_last_read_compressed(handle_->core()); }
  /// The next message from the server (see ReadSignature). One at a time:
  /// a read while another is pending fails with errc::read_pending.
  template <class Token>
  auto async_read(Token&& token) {
    return detail::initiate_stream_op<ReadSignature>(
        core(), std::forward<Token>(token),
        [c = core()](detail::StreamReadHandler h) mutable { detail::stream_read(c, std::move(h)); });
  }
  /// Half-closes: tells the server no more messages come (after the write
  /// in progress, if any). Completes once that is queued.
  template <class Token>
  auto async_writes_done(Token&& token) {
    return detail::initiate_stream_op<DoneSignature>(
        core(), std::forward<Token>(token),
        [c = core()](detail::StreamDoneHandler h) mutable { detail::stream_writes_done(c, std::move(h)); });
  }
  /// Completes once the stream ended, with its final status: success, the
  /// server's error (its status code and message), a timer's, the lost
  /// connection's, or cancellation. Messages not yet read stay readable.
  template <class Token>
  auto async_finish(Token&& token) {
    return detail::initiate_stream_op<DoneSignature>(
        core(), std::forward<Token>(token),
        [c = core()](detail::StreamDoneHandler h) mutable { detail::stream_finish(c, std::move(h)); });
  }
  /// Ends the stream now (the server's handler sees it cancelled);
  /// operations outstanding complete with boost::asio::error::operation_aborted.
  /// Idempotent; a no-op once it ended.
  void cancel() {
    if (handle_) detail::stream_cancel(handle_->core());
  }
  /// The full message of its error ("" while it has none): which timer fired
  /// after how long, the method, the peer, messages each way.
  std::string error_message() const { return handle_ ? detail::stream_error_message(handle_->core()) : std::string(); }
  StreamInfo info() const { return handle_ ? detail::stream_info(handle_->core()) : StreamInfo{}; }
  /// The default executor of its completion handlers (the client's).
  executor_type get_executor() const { return handle_ ? detail::stream_executor(handle_->core()) : executor_type(); }

 private:
  const std::shared_ptr<detail::StreamCore>& core() const noexcept {
    static const std::shared_ptr<detail::StreamCore> none;
    return handle_ ? handle_->shared() : none;
  }
  std::shared_ptr<detail::StreamHandle> handle_;
};

}  // namespace wheelrpc::rpc
