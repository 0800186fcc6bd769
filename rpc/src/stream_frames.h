#pragma once
// The frames of a stream (docs/protocol.md, "Streams"): kFlagStream set,
// `stream_op` saying what the frame does, `request_id` the stream's id.
// Client to server frames carry the request bit; server to client ones do
// not. Flow control counts a MESSAGE frame's size on the wire (24 + body).

#include <cstdint>
#include <optional>
#include <string>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc::detail {

enum class StreamOp : std::uint8_t {
  open = 1,        ///< client: method, metadata, deadline_ms; answered by a response (accept or refusal)
  message = 2,     ///< both: one message (the payload)
  half_close = 3,  ///< client: no more messages from it
  credit = 4,      ///< both: `deadline_ms` carries bytes the receiver has room for again
  end = 5,         ///< server: the final status (the status byte), message (payload), trailers
  reset = 6,       ///< client: cancels the stream (nothing is answered)
};

/// The HELLO attachment that says a side speaks streams: the credit window
/// (bytes) it grants each stream. A peer without it has no streams.
inline constexpr const char* kStreamWindowKey = "stream_window";
/// Bounds of a window (ClientOptions::stream_window, ServerStreamOptions::window).
inline constexpr std::uint32_t kMinStreamWindow = 1024;
inline constexpr std::uint32_t kMaxStreamWindow = 1u << 30;
/// Credit a peer may hold at most: more is a protocol violation.
inline constexpr std::uint64_t kMaxCredit = std::uint64_t{1} << 31;

/// What one message costs against the window: its frame's size.
inline std::uint64_t message_cost(std::size_t payload) noexcept { return transport::kHeaderSize + 3 + payload; }

inline transport::Frame make_stream_frame(StreamOp op, std::uint64_t id, bool from_client) {
  transport::Frame f;
  f.header.flags = static_cast<std::uint8_t>(transport::kFlagStream | (from_client ? transport::kFlagRequest : 0));
  f.header.stream_op = static_cast<std::uint8_t>(op);
  f.header.request_id = id;
  return f;
}

inline StreamOp stream_op(const transport::Frame& f) noexcept { return static_cast<StreamOp>(f.header.stream_op); }

}  // namespace wheelrpc::rpc::detail
