#pragma once
/// StreamInfo: what a stream carried and how it ended (ClientStream::info(),
/// ServerStream::info()).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wheelrpc::rpc {

/// The four timers a stream may have on the shared wheel (docs/streams.md).
enum class StreamTimer : std::uint8_t {
  deadline,       ///< the whole stream's budget (CallOptions::stream_timeout)
  message_idle,   ///< no message received for CallOptions::message_timeout
  write_stall,    ///< a write waited for credit for CallOptions::stall_timeout
  first_message,  ///< no headers or first message within CallOptions::first_message_timeout
};

/// "deadline", "message-idle", "write-stall", "first-message".
std::string_view to_string(StreamTimer timer) noexcept;

/// A snapshot of one stream. Thread-safe to take; fields read together.
struct StreamInfo {
  std::string method;
  std::string peer;                 ///< "ip:port" of the other end ("" before the stream is open)
  std::uint64_t id = 0;             ///< its id on the connection (0 before it is open)
  std::uint64_t messages_sent = 0;  ///< messages handed to the connection
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_sent = 0, bytes_received = 0;  ///< message payload bytes
  bool ended = false;
  /// The timer that ended it, if one did, and when it fired, measured from
  /// what the timer watches (the start, the last message, the start of the
  /// write's wait): the figure the error message states.
  std::optional<StreamTimer> timer;
  std::chrono::milliseconds timer_elapsed{0};
};

/// Streams of a client or a server (ClientStats::streams, ServerStats::streams).
struct StreamStats {
  std::uint64_t opened = 0;  ///< streams started (a client's: opens attempted)
  std::uint64_t open = 0;    ///< open now
  std::uint64_t messages_in = 0, messages_out = 0;
  /// Ends by cause (each stream ends once, in one of them).
  struct Ends {
    std::uint64_t ok = 0;               ///< ended with success
    std::uint64_t error = 0;            ///< the server's handler ended it with an error status
    std::uint64_t cancelled = 0;        ///< the client cancelled it (or dropped its handles)
    std::uint64_t deadline = 0;         ///< its stream deadline passed
    std::uint64_t message_idle = 0;     ///< its message-idle timeout fired
    std::uint64_t write_stall = 0;      ///< its write-stall timeout fired
    std::uint64_t first_message = 0;    ///< its first-message timeout fired
    std::uint64_t connection_lost = 0;  ///< its connection closed under it
    std::uint64_t refused = 0;          ///< it never opened (refused, unreachable, opening timed out)
    std::uint64_t protocol = 0;         ///< the peer broke the protocol (credit, size, order)
    std::uint64_t shutdown = 0;         ///< the server's shutdown ended it after the grace
  } ends;
};

}  // namespace wheelrpc::rpc
