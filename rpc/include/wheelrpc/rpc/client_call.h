#pragma once
/// ClientCall: one call (or one attempt of it) as a client interceptor sees it.

#include <chrono>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

namespace detail {
class ClientInterception;
}

/// What a ClientInterceptor sees of a call: per call (ClientOptions::
/// interceptors) or per attempt (ClientOptions::attempt_interceptors, which
/// also see the provider and the attempt's number). Owned by the library;
/// valid from intercept() until on_complete() returned, and while the
/// InterceptorNext it came with is held.
///
/// @par Thread Safety
/// Not synchronized: an interceptor touches it from intercept(), then from
/// the thread it calls its next on, then from on_complete(); the library
/// never touches it while an interceptor works.
class ClientCall {
 public:
  ClientCall(const ClientCall&) = delete;
  ClientCall& operator=(const ClientCall&) = delete;

  /// The method called.
  const std::string& method() const noexcept { return method_; }
  /// The request's metadata (CallOptions::attachments): read and write it in
  /// intercept(). Per call, what every attempt sends; per attempt, what this
  /// attempt sends (a copy of the call's). The traceparent is sent besides.
  transport::Attachments& metadata() noexcept { return metadata_; }
  const transport::Attachments& metadata() const noexcept { return metadata_; }
  /// Whether the call has a deadline (CallOptions::kNoDeadline: none).
  bool has_deadline() const noexcept { return deadline_ != std::chrono::steady_clock::time_point::max(); }
  /// The call's deadline on the client's clock (ClientOptions::clock, by
  /// default steady_clock); time_point::max() without one.
  std::chrono::steady_clock::time_point deadline() const noexcept { return deadline_; }
  /// Time left until the deadline (negative once past; nanoseconds::max()
  /// without one).
  std::chrono::nanoseconds remaining() const noexcept {
    return has_deadline() ? std::chrono::nanoseconds(deadline_ - now()) : std::chrono::nanoseconds::max();
  }
  /// Time since the call (or, per attempt, the attempt's interceptors)
  /// started: in on_complete(), how long it took.
  std::chrono::nanoseconds elapsed() const noexcept { return now() - start_; }
  /// Per attempt: "ip:port" of the provider the attempt goes to. "" per call.
  const std::string& provider() const noexcept { return provider_; }
  /// Per attempt: its number, 1 for the first, then retries and hedges. 0 per call.
  int attempt() const noexcept { return attempt_; }
  /// The client's executor: where a call resumes after an interceptor's
  /// asynchronous work; asynchronous work of the interceptor may use it too.
  const boost::asio::any_io_executor& executor() const noexcept { return executor_; }

 private:
  friend class detail::ClientInterception;
  ClientCall() = default;
  std::chrono::steady_clock::time_point now() const noexcept {
    return clock_ ? clock_->now() : timer::fast_steady_now();
  }

  std::string method_;
  transport::Attachments metadata_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::time_point start_{};
  std::string provider_;
  int attempt_ = 0;
  boost::asio::any_io_executor executor_;
  const timer::Clock* clock_ = nullptr;
};

}  // namespace wheelrpc::rpc
