#pragma once
/// ServerCall: one request as a server interceptor sees it.

#include <chrono>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

namespace detail {
class ServerInterception;
class StreamInterception;
}  // namespace detail

/// What a ServerInterceptor sees of a request or of a stream's opening
/// (is_stream()). Owned by the library; valid
/// from intercept() until on_complete() returned, and while the
/// InterceptorNext it came with is held.
///
/// @par Thread Safety
/// Not synchronized: an interceptor touches it from intercept(), then from
/// the thread it calls its next on, then from on_complete(); the library
/// never touches it while an interceptor works.
class ServerCall {
 public:
  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  /// The method called.
  const std::string& method() const noexcept { return method_; }
  /// True for a stream's opening (Server::handle_stream; the handler runs
  /// once every interceptor went on, and on_complete() at the stream's end).
  bool is_stream() const noexcept { return stream_; }
  /// "ip:port" of the caller ("local" for Server::async_invoke).
  const std::string& peer() const noexcept { return peer_; }
  /// The request's metadata (Request::attachments): what the handler will
  /// see. Read and write it in intercept().
  transport::Attachments& metadata() noexcept { return metadata_; }
  const transport::Attachments& metadata() const noexcept { return metadata_; }
  /// Metadata added to the reply's attachments (after the handler's): write
  /// it in intercept() or on_complete(). Sent when on_complete() runs before
  /// the reply goes out, which is always the case unless the request's
  /// deadline passed while an interceptor was still working. For a stream:
  /// what intercept() writes goes as initial metadata before the handler's
  /// (with its first message); what on_complete() writes is not sent (the
  /// stream has ended).
  transport::Attachments& reply_metadata() noexcept { return reply_metadata_; }
  /// When the caller stops waiting; empty when it set no deadline.
  std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept { return deadline_; }
  /// Time left until the deadline (negative once past; nanoseconds::max()
  /// without one).
  std::chrono::nanoseconds remaining() const noexcept {
    return deadline_ ? std::chrono::nanoseconds(*deadline_ - now()) : std::chrono::nanoseconds::max();
  }
  /// Time since the request was read: in on_complete(), how long it took.
  std::chrono::nanoseconds elapsed() const noexcept { return now() - received_; }
  /// Where the handler runs: ServerOptions::handler_executor when set, else
  /// the server's executor.
  const boost::asio::any_io_executor& executor() const noexcept { return executor_; }

 private:
  friend class detail::ServerInterception;
  friend class detail::StreamInterception;
  ServerCall() = default;
  std::chrono::steady_clock::time_point now() const noexcept {
    return clock_ ? clock_->now() : timer::fast_steady_now();
  }

  std::string method_;
  std::string peer_;
  transport::Attachments metadata_;
  transport::Attachments reply_metadata_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::chrono::steady_clock::time_point received_{};
  boost::asio::any_io_executor executor_;
  const timer::Clock* clock_ = nullptr;
  bool stream_ = false;
};

}  // namespace wheelrpc::rpc
