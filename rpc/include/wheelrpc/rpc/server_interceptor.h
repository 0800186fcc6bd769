#pragma once
/// ServerInterceptor: code a server runs around each request's handler.

#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/interceptor_next.h>
#include <wheelrpc/rpc/server_call.h>

namespace wheelrpc::rpc {

/// Runs around the handler of every request and every stream of a server
/// (ServerOptions::interceptors; docs/interceptors.md): unary methods and
/// streams of every kind (Server::handle_stream), typed methods included,
/// on both wires and from the admin gateway. After admission: a request or
/// stream refused for shutdown, offline, an unknown method, a spent
/// deadline or a concurrency limit reaches no interceptor.
///
/// A stream (ServerCall::is_stream()) is intercepted at its opening, with
/// its metadata, deadline and peer: its handler starts once every
/// interceptor went on; a rejection refuses the opening with the status
/// (the client's open, or its first read on gRPC, fails with it; no
/// handler runs). on_complete() runs once the stream ended, with its final
/// status.
///
/// Order (an onion): intercept() in the order given, each going on only
/// when the one before called InterceptorNext::proceed(), the handler after
/// the last; on_complete() in the reverse order once the request was
/// answered (by the handler, by a rejection, by its deadline), for every
/// interceptor whose intercept() was called, before the reply is sent.
///
/// Threads: the first intercept() runs where the handler would
/// (the connection's strand, or ServerOptions::handler_executor); the next
/// ones, and the handler, where the one before called proceed() from inside
/// intercept(), else posted back there. on_complete() runs on the thread
/// that answers (the handler's Responder, a rejection, the server's
/// executor for a deadline), never while an intercept() of the same request
/// runs or its next is held: if the deadline answered while an interceptor
/// worked, on_complete() runs once it let go of its next (its
/// reply_metadata() is then not sent). No lock of the library is held
/// while either runs. One interceptor serves many requests at once: keep its
/// own state thread-safe.
class ServerInterceptor {
 public:
  virtual ~ServerInterceptor() = default;
  /// Looks at the request, may change its metadata, then calls
  /// next.proceed() or next.reject(code, message) (the caller's call
  /// completes with make_error_code(code) and `message`; the handler does
  /// not run), now or later (see InterceptorNext).
  virtual void intercept(ServerCall& call, InterceptorNext next) = 0;
  /// The request was answered with `ec` (empty for a reply; otherwise the
  /// error the caller sees, e.g. make_error_code(StatusCode::unauthenticated)
  /// or errc::server_timeout). `call.elapsed()` is how long it took since
  /// it was read; `call.reply_metadata()` may still be written. Default: nothing.
  virtual void on_complete(ServerCall& call, const boost::system::error_code& ec) {
    (void)call;
    (void)ec;
  }
  /// A short name for logs and for the error of a dropped next. Default "interceptor".
  virtual std::string_view name() const noexcept { return "interceptor"; }
};

}  // namespace wheelrpc::rpc
