#pragma once
/// ClientInterceptor: code a client runs around each call, or each attempt.

#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/client_call.h>
#include <wheelrpc/rpc/interceptor_next.h>
#include <wheelrpc/rpc/response.h>

namespace wheelrpc::rpc {

/// Runs around a client's calls (docs/interceptors.md). Two chains:
/// - ClientOptions::interceptors, per call: once per logical call, before
///   load balancing, retries and hedging (Dubbo's ClusterFilter). A
///   rejection here fails the call before anything is sent: no connection
///   is made for it.
/// - ClientOptions::attempt_interceptors, per attempt: once for each attempt
///   (the first, each retry, each hedge), after its provider was picked;
///   ClientCall::provider() and attempt() say which. A rejection fails the
///   call and is not retried. Should the provider become unusable while they
///   work, they run again for the provider picked next.
///
/// Order (an onion): intercept() in the order given, each going on only
/// when the one before called InterceptorNext::proceed(); on_complete() in
/// the reverse order, once the call (per attempt: the attempt) ended, for
/// every interceptor whose intercept() was called, the one that rejected and
/// one still working when the call ended included. Attempt interceptors'
/// on_complete() run before the per-call ones', and all before the call's
/// completion handler.
///
/// Threads: the first intercept() runs on the thread that started the call
/// (per call) or that sends the attempt (the caller's, a connection's
/// strand or the client's executor), the next ones where the one before
/// called proceed() from inside intercept(), or else on the client's
/// executor. on_complete() runs on the thread that completes the call,
/// never the timer's worker, and never while an intercept() of the same
/// chain is running or its next is held: if the call ended while an
/// interceptor worked, on_complete() runs once it let go of its next.
/// No lock of the library is held while either runs. One interceptor
/// serves many calls at once: keep its own state thread-safe.
class ClientInterceptor {
 public:
  virtual ~ClientInterceptor() = default;
  /// Looks at the call, may change its metadata, then calls next.proceed()
  /// or next.reject(code, message), now or later (see InterceptorNext).
  virtual void intercept(ClientCall& call, InterceptorNext next) = 0;
  /// The call (per attempt: the attempt) ended with `ec` (empty on
  /// success); `response` holds the reply's payload and metadata
  /// (Response::attachments) on success, else the error message. For an
  /// attempt that did not win: operation_aborted when it was abandoned (a
  /// hedge won, the call completed), the attempt's error otherwise.
  /// `call.elapsed()` is how long it took. Default: nothing.
  virtual void on_complete(ClientCall& call, const boost::system::error_code& ec, const Response& response) {
    (void)call;
    (void)ec;
    (void)response;
  }
  /// A short name for logs and for the error of a dropped next. Default "interceptor".
  virtual std::string_view name() const noexcept { return "interceptor"; }
};

}  // namespace wheelrpc::rpc
