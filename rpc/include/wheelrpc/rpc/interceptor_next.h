#pragma once
/// InterceptorNext: how an interceptor lets a call go on, or stops it.

#include <cstddef>
#include <string>
#include <utility>

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
/// Cost: used inside intercept(), on the thread running it (the common
/// case), it takes no lock, no atomic operation and no allocation; moving it
/// copies two words. Kept past intercept(), the chain counts it as a
/// reference (one atomic operation when intercept() returns, one when it is
/// used) and the call resumes through its executor.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe (move it where it is used).
class InterceptorNext {
 public:
  InterceptorNext() = default;
  InterceptorNext(InterceptorNext&& other) noexcept
      : chain_(std::exchange(other.chain_, nullptr)), index_(other.index_) {}
  InterceptorNext& operator=(InterceptorNext&& other) noexcept;
  InterceptorNext(const InterceptorNext&) = delete;
  InterceptorNext& operator=(const InterceptorNext&) = delete;
  /// Rejects with StatusCode::internal if neither was called.
  ~InterceptorNext() {
    if (chain_ != nullptr) drop();
  }

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
  InterceptorNext(detail::InterceptorChain* chain, std::size_t index) noexcept : chain_(chain), index_(index) {}
  /// Destroyed pending: rejects, naming the interceptor.
  void drop() noexcept;

  // Not counted: the chain outlives its pending nexts (the caller of its
  // run() holds it while intercept() runs; a next kept past intercept() is
  // counted by the chain itself, interceptor_chain.h).
  detail::InterceptorChain* chain_ = nullptr;
  std::size_t index_ = 0;
};

}  // namespace wheelrpc::rpc
