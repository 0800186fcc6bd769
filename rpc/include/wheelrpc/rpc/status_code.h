#pragma once
/// StatusCode: gRPC's 17 status codes, the outcome of a call as services
/// across languages name it. A handler fails a call with one (StatusError,
/// Responder::fail); every error a call completes with maps onto one
/// (status_code_of); docs/timeouts.md, "Status codes", has the table.

#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/call_error.h>

namespace wheelrpc::rpc {

/// gRPC's codes, with gRPC's numbers (what `grpc-status` carries).
enum class StatusCode {
  ok = 0,
  cancelled = 1,
  unknown = 2,
  invalid_argument = 3,
  deadline_exceeded = 4,
  not_found = 5,
  already_exists = 6,
  permission_denied = 7,
  resource_exhausted = 8,
  failed_precondition = 9,
  aborted = 10,
  out_of_range = 11,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
  data_loss = 15,
  unauthenticated = 16,
};
/// Codes above: 0 .. kStatusCodes - 1.
inline constexpr int kStatusCodes = 17;

/// The category of application statuses, "wheelrpc.status": the error a call
/// completes with when its handler failed it with a StatusCode. Thread-safe.
const boost::system::error_category& status_category() noexcept;

inline boost::system::error_code make_error_code(StatusCode c) noexcept {
  return {static_cast<int>(c), status_category()};
}

/// The StatusCode of any error a call completes with: the code itself for
/// the "wheelrpc.status" category; rpc::errc values as docs/timeouts.md's
/// table maps them (timeout and server_timeout: deadline_exceeded;
/// method_not_found: unimplemented; bad_request: invalid_argument; ...);
/// boost::asio::error::operation_aborted: cancelled; empty: ok; anything
/// else: unknown.
StatusCode status_code_of(const boost::system::error_code& ec) noexcept;

/// "OK", "CANCELLED", ... "UNAUTHENTICATED": gRPC's names. "UNKNOWN" for a
/// value out of range.
std::string_view to_string(StatusCode code) noexcept;

/// Parses a name of to_string ("NOT_FOUND") or its lower-case form
/// ("not_found"); false when it names none.
bool parse_status_code(std::string_view text, StatusCode& out) noexcept;

/// What a handler throws to fail its call with a status: a coroutine handler
/// of a typed service (`throw StatusError(StatusCode::not_found, "no user
/// 42")`), or any handler whose responder turns exceptions into replies.
/// The caller's call completes with make_error_code(code) and `message`.
/// A CallError: a CallError caught from a nested call and rethrown answers
/// with that call's status (status_code_of its code) and message.
class StatusError : public CallError {
 public:
  StatusError(StatusCode code, std::string message) : CallError(make_error_code(code), std::move(message)) {}
  StatusCode status() const noexcept { return status_code_of(code()); }
};

}  // namespace wheelrpc::rpc

template <>
struct boost::system::is_error_code_enum<wheelrpc::rpc::StatusCode> : std::true_type {};
