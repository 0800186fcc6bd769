#pragma once
// The native wire's frames of a stream (docs/protocol.md, "Streams"):
// kFlagStream set, `stream_op` saying what the frame does, `request_id` the
// stream's id. Client to server frames carry the request bit; server to
// client ones do not. A CREDIT's byte count rides in `deadline_ms`; an END's
// and an OPEN answer's status in the status byte.

#include <cstdint>

#include <wheelrpc/transport/frame.h>

#include "stream/stream_wire.h"

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

// A message costs what its MESSAGE frame takes on this wire: the header and
// the body's three bytes of framing over the payload (stream_wire.h).
static_assert(kMessageOverhead == transport::kHeaderSize + kMessageBodyOverhead);
static_assert(kDefaultPeerMaxBody == transport::kDefaultMaxBody);

inline transport::Frame make_stream_frame(StreamOp op, std::uint64_t id, bool from_client) {
  transport::Frame f;
  f.header.flags = static_cast<std::uint8_t>(transport::kFlagStream | (from_client ? transport::kFlagRequest : 0));
  f.header.stream_op = static_cast<std::uint8_t>(op);
  f.header.request_id = id;
  return f;
}

inline StreamOp stream_op(const transport::Frame& f) noexcept { return static_cast<StreamOp>(f.header.stream_op); }

}  // namespace wheelrpc::rpc::detail
