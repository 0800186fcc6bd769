#pragma once
/// The status byte of an RPC response (docs/protocol.md, "Status"): what the
/// rpc layer puts in transport::FrameHeader::status. Values are part of the
/// wire protocol and never change.

#include <cstdint>

namespace wheelrpc::rpc {

/// Response status. 0 is success; the rest name why a call failed.
enum class Status : std::uint8_t {
  ok = 0,
  server_timeout = 1,    ///< the caller's deadline passed before the handler replied
  method_not_found = 2,  ///< no handler registered under the method name
  bad_request = 3,       ///< the server could not make sense of the request
  server_error = 4,      ///< the handler failed (threw, or dropped its responder)
  overloaded = 5,        ///< the server refused the call for lack of capacity
  shutting_down = 6,     ///< the server is stopping and accepts no new calls
  /// 16 + a StatusCode (16 .. 32): the handler failed the call with that
  /// gRPC status (StatusError, Responder::fail(StatusCode, ...)). A peer
  /// that predates them reads any unknown value as server_error.
  first_code = 16,
  last_code = 32,
};

}  // namespace wheelrpc::rpc
