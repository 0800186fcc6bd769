#pragma once
/// ServerContext: one call as a typed service's handler sees it.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <wheelrpc/rpc/detail/recycled.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/trace.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

/// One call of a typed method, as its handler sees it: the request's
/// metadata, deadline, peer and trace, whether the caller still waits, and
/// the reply metadata to send. Made by the typed service for each call and
/// alive until the call is answered: for the coroutine form, until the
/// handler's coroutine returns; for the callback form, as long as its
/// TypedResponder.
///
/// Its blocks are recycled per thread (a typed call allocates one per call).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: the accessors and cancelled()
/// from any thread; reply metadata only from the one thread that answers.
class ServerContext : public detail::Recycled<ServerContext> {
 public:
  ServerContext(Request request, Responder responder) noexcept;
  ~ServerContext();
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  /// The method's wire path, e.g. "/helloworld.Greeter/SayHello".
  const std::string& method() const noexcept { return request_.method; }
  /// The request's metadata (the caller's CallOptions::attachments, the
  /// traceparent included), in the order sent.
  const transport::Attachments& metadata() const noexcept { return request_.attachments; }
  /// The first value under `key`, or nullptr.
  const std::string* find_metadata(std::string_view key) const noexcept;
  /// When the caller stops waiting; std::nullopt when it set no deadline.
  std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept { return request_.deadline; }
  /// Time left before the deadline on the server's clock (0 once it
  /// passed); CallOptions::kNoDeadline without one. Calls the handler makes
  /// inherit the deadline on their own (CallOptions::inherit_deadline).
  std::chrono::milliseconds remaining() const noexcept;
  /// "ip:port" of the caller ("local" for Server::async_invoke).
  const std::string& peer() const noexcept { return request_.peer; }
  /// The call's trace (its traceparent metadata), std::nullopt without a valid one.
  std::optional<TraceContext> trace() const noexcept;
  /// True once nobody waits for the reply: the caller cancelled the call (a
  /// hedge that lost, a caller that gave up) or its deadline passed. The
  /// handler may stop its work; a reply would be dropped. Any thread.
  bool cancelled() const noexcept;
  /// The reply's initial metadata (gRPC's response headers): the caller
  /// reads it in Response::attachments, or ReplyInfo::metadata
  /// (CallOptions::reply_info) for typed calls.
  transport::Attachments& reply_metadata() noexcept { return reply_metadata_; }
  void add_reply_metadata(std::string key, std::string value) {
    reply_metadata_.emplace_back(std::move(key), std::move(value));
  }
  /// The reply's trailing metadata (gRPC's trailers), sent after the
  /// payload: the caller reads it in Response::trailers, or ReplyInfo::
  /// trailers for typed calls. Keys as for any metadata (not starting with
  /// ':'). Sent with the reply, as the reply metadata is, and with a typed
  /// handler's failure (TypedResponder::fail, a thrown StatusError); an
  /// untyped handler passes take_reply_attachments() to Responder::fail.
  transport::Attachments& trailing_metadata() noexcept { return trailing_metadata_; }
  void add_trailing_metadata(std::string key, std::string value) {
    trailing_metadata_.emplace_back(std::move(key), std::move(value));
  }
  /// Both, as the reply carries them (moved out): the initial metadata, then,
  /// when there is trailing metadata, a marker and the trailing metadata.
  /// What to pass to Responder::reply when answering through responder().
  transport::Attachments take_reply_attachments();
  /// Compresses this call's reply with `compression`, whatever the client
  /// asked (Responder::set_compression): `identity` never compresses it.
  /// Before the reply, from the thread that answers.
  void set_compression(transport::Compression compression) noexcept { responder_.set_compression(compression); }
  /// True when the request's payload came compressed (e.g. to check gRPC
  /// interop's expect_compressed).
  bool request_compressed() const noexcept { return responder_.request_compressed(); }
  /// Where the handler runs (Responder::executor()).
  boost::asio::any_io_executor get_executor() const { return responder_.executor(); }

  /// The untyped request and responder underneath (the typed templates'
  /// access; a handler needs neither).
  Request& request() noexcept { return request_; }
  Responder& responder() noexcept { return responder_; }

 private:
  Request request_;
  Responder responder_;
  transport::Attachments reply_metadata_;
  transport::Attachments trailing_metadata_;
};

}  // namespace wheelrpc::rpc
