#pragma once
// The causes a stream ends by, as the metrics count them (the `cause` label
// of `*_streams_ended_total`), and the status each usually ends with: shared
// by the side's StreamCounters (stream/) and a method's cells (base/).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/rpc/stream_info.h>

namespace wheelrpc::rpc::detail {

/// How streams ended, for /metrics (StreamCounters::ends, MethodCells).
enum class StreamEnd : std::uint8_t {
  ok,               // both sides done, success
  error,            // ended with an error status by the server's handler
  cancelled,        // cancelled by the client (or its handle dropped)
  deadline,         // the stream deadline
  message_idle,     // the message-idle timeout
  write_stall,      // the write-stall timeout
  first_message,    // the first-message timeout
  connection_lost,  // the connection closed under it
  refused,          // never opened: refused, unreachable, or its opening timed out
  protocol,         // the peer broke the protocol (window, size, order)
  shutdown,         // the server stopped it (grace over) or the client closed
};
inline constexpr std::size_t kStreamEndKinds = 11;

/// The label of each StreamEnd in /metrics ("message_idle"); static storage.
constexpr std::string_view to_label(StreamEnd e) noexcept {
  constexpr std::string_view kLabels[kStreamEndKinds] = {
      "ok",      "error",    "cancelled", "deadline", "message_idle", "write_stall", "first_message", "connection_lost",
      "refused", "protocol", "shutdown"};
  const auto i = static_cast<std::size_t>(e);
  return i < kStreamEndKinds ? kLabels[i] : std::string_view("?");
}

/// The status a stream ending by `e` usually carries: the code its
/// `*_streams_ended_total` series is created with at zero. Another code
/// (a handler's error status, a refusal for lack of capacity) gets a
/// series of its own when it first occurs.
constexpr StatusCode usual_status(StreamEnd e) noexcept {
  switch (e) {
    case StreamEnd::ok: return StatusCode::ok;
    case StreamEnd::error: return StatusCode::unknown;
    case StreamEnd::cancelled: return StatusCode::cancelled;
    case StreamEnd::deadline:
    case StreamEnd::message_idle:
    case StreamEnd::write_stall:
    case StreamEnd::first_message: return StatusCode::deadline_exceeded;
    case StreamEnd::connection_lost:
    case StreamEnd::refused:
    case StreamEnd::shutdown: return StatusCode::unavailable;
    case StreamEnd::protocol: return StatusCode::internal;
  }
  return StatusCode::unknown;
}

/// The field of `ends` that counts `e`.
constexpr std::uint64_t& count_of(StreamStats::Ends& ends, StreamEnd e) noexcept {
  switch (e) {
    case StreamEnd::ok: return ends.ok;
    case StreamEnd::error: return ends.error;
    case StreamEnd::cancelled: return ends.cancelled;
    case StreamEnd::deadline: return ends.deadline;
    case StreamEnd::message_idle: return ends.message_idle;
    case StreamEnd::write_stall: return ends.write_stall;
    case StreamEnd::first_message: return ends.first_message;
    case StreamEnd::connection_lost: return ends.connection_lost;
    case StreamEnd::refused: return ends.refused;
    case StreamEnd::protocol: return ends.protocol;
    case StreamEnd::shutdown: break;
  }
  return ends.shutdown;
}

}  // namespace wheelrpc::rpc::detail
