#pragma once
/// Error codes of RPC calls, category "wheelrpc.rpc".

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/status.h>

namespace wheelrpc::rpc {

enum class errc {
  timeout = 1,            ///< the call's deadline passed before a reply (the message says in which phase)
  server_timeout,         ///< the server saw the deadline pass before its handler replied
  connection_lost,        ///< the connection carrying the call closed before the reply
  unavailable,            ///< no server could be reached (or one is shutting down)
  method_not_found,       ///< the server has no handler for the method
  bad_request,            ///< the request was refused as invalid: by the server (malformed), or by the
                          ///< client before sending anything (invalid CallOptions, a body over the limit)
  server_error,           ///< the handler failed (threw, or never replied)
  cancelled,              ///< the client was closed while the call was pending
  too_many_pending,       ///< the client's limit on calls in flight was reached
  resource_exhausted,     ///< the server refused the call unprocessed for lack of capacity (a method at its
                          ///< concurrency limit, Server::handle's MethodOptions): retried on another provider
  message_timeout,        ///< a stream received no message for its message-idle timeout
  write_stall,            ///< a stream's write waited for the peer's credit for its write-stall timeout
  first_message_timeout,  ///< a stream had no response headers or no first message within its timeout
  stream_closed,          ///< a read or write on a stream that already ended
  stream_half_closed,     ///< a write after this side's writes_done (a server-streaming stream's client
                          ///< half-closes once its request is sent)
  read_pending,           ///< a read while another read of the same stream is pending: one at a time
  write_pending,          ///< a write while another write of the same stream is pending: one at a time
};

/// The category whose name is "wheelrpc.rpc". Thread-safe.
const boost::system::error_category& rpc_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), rpc_category()}; }

/// The error a response status stands for (empty for Status::ok).
boost::system::error_code status_error(Status status) noexcept;
/// The status a server sends for an error of this category.
Status error_status(errc e) noexcept;
/// The status a server sends for any error: error_status(errc) for this
/// category, Status::first_code + the code for a StatusCode (StatusCode::ok,
/// no failure, as unknown), Status::server_error for an empty code or any
/// other category.
Status error_status(const boost::system::error_code& ec) noexcept;

}  // namespace wheelrpc::rpc

template <>
struct boost::system::is_error_code_enum<wheelrpc::rpc::errc> : std::true_type {};
