#pragma once
/// echo_server's streaming methods (count, sum, chat), served through
/// Server::handle_stream; echo_client --method count|sum|chat drives them.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include <wheelrpc/rpc/server.h>

namespace wheelrpc::examples {

/// What a `count` stream asks for: its one request message is
/// "COUNT INTERVAL_MS", two decimal numbers separated by one space
/// (e.g. "20 5"): COUNT 0..10^12 messages, INTERVAL_MS 0..86400000.
struct CountRequest {
  std::uint64_t count = 0;
  std::chrono::milliseconds interval{0};
};

/// Parses a `count` request; nothing when it is not "COUNT INTERVAL_MS".
std::optional<CountRequest> parse_count_request(std::string_view text);

/// Registers on `server` (before listen):
///
/// - `count` (server streaming): reads the request (CountRequest), writes
///   "0", "1", ... "COUNT-1", each INTERVAL_MS after the previous write
///   completed (a steady_timer per wait, no thread blocked), then finishes
///   with success. A request that does not parse ends the stream with
///   INVALID_ARGUMENT. A stream that ends meanwhile (cancelled, timed out,
///   its connection lost, the server stopping) stops the handler within
///   kCancelCheck, however long the interval.
/// - `sum` (client streaming): adds up the decimal integers it reads until
///   the client half-closes, writes the sum as one decimal message and
///   finishes with success. A message that is not a decimal integer ends
///   the stream with INVALID_ARGUMENT, a sum past 64 bits with OUT_OF_RANGE.
/// - `chat` (bidirectional): writes each message back as it reads it;
///   finishes with success once the client half-closed.
///
/// Each handler is a coroutine on the stream's executor (the connection's
/// strand).
void register_stream_methods(rpc::Server& server);

/// How often a waiting `count` handler looks whether its stream ended: a
/// ServerStream tells its handler of the end only through a read or a write
/// in progress, and a count stream's client has usually half-closed.
inline constexpr std::chrono::milliseconds kCancelCheck{10};

}  // namespace wheelrpc::examples
