#pragma once
// The counters of the streams of one client or server, and the causes a
// stream ends by (StreamStats in /metrics).

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <wheelrpc/rpc/stream_info.h>

namespace wheelrpc::rpc::detail {

/// How streams ended, for /metrics (StreamCounters::ends).
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
/// The label of each StreamEnd in /metrics.
const char* to_label(StreamEnd e) noexcept;

/// Counters of the streams of one client or server (monotonic but `open`).
struct StreamCounters {
  std::atomic<std::uint64_t> opened{0};
  std::atomic<std::int64_t> open{0};
  std::atomic<std::uint64_t> messages_in{0}, messages_out{0};
  std::array<std::atomic<std::uint64_t>, kStreamEndKinds> ends{};
};

/// Copies `c` into `out`. Any thread.
void fill(const StreamCounters& c, StreamStats& out) noexcept;

}  // namespace wheelrpc::rpc::detail
