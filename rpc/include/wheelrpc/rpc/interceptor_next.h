#pragma once
/// InterceptorNext: how an interceptor lets a call go on, or stops it.

#include <cstddef>
#include <memory>
#include <string>

#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::rpc {

namespace detail {
class InterceptorChain;
}

/// The rest of the chain, handed to ClientInterceptor::intercept and
/// ServerInterceptor::intercept. Call exactly one of proceed() or reject(),
/// once, from any thread, now (inside intercept) or later (after
/// asynchronous work); later calls are ignored. Destroying it without
/// either rejects the call with StatusCode::internal, naming the
/// interceptor, so a call never hangs on a forgotten next.
///
/// Where the call goes on: called inside intercept(), on the thread running
/// the chain; called after intercept() returned, the call resumes on its
/// own executor (the client's; on a server, where the handler would run:
/// the connection's strand or ServerOptions::handler_executor), never on the
/// caller's thread. Once the call ended meanwhile (its deadline passed, it
/// was cancelled, the client closed), both are no-ops.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe (move it where it is used).
class InterceptorNext {
 public:
  InterceptorNext() = default;
  InterceptorNext(InterceptorNext&& other) noexcept = default;
  InterceptorNext& operator=(InterceptorNext&& other) noexcept;
  InterceptorNext(const InterceptorNext&) = delete;
  InterceptorNext& operator=(const InterceptorNext&) = delete;
  /// Rejects with StatusCode::internal if neither was called.
  ~InterceptorNext();

  /// Runs the next interceptor, or, after the last, the call itself.
  void proceed();
  /// Fails the call with `code` and `message` without going further: the
  /// caller's call completes with make_error_code(code) and `message`
  /// (Response::error_message). StatusCode::ok counts as unknown.
  void reject(StatusCode code, std::string message);
  /// True until proceed() or reject() was called (or it was moved from).
  bool pending() const noexcept { return chain_ != nullptr; }

 private:
  friend class detail::InterceptorChain;
  InterceptorNext(std::shared_ptr<detail::InterceptorChain> chain, std::size_t index) noexcept
      : chain_(std::move(chain)), index_(index) {}

  std::shared_ptr<detail::InterceptorChain> chain_;
  std::size_t index_ = 0;
};

}  // namespace wheelrpc::rpc
