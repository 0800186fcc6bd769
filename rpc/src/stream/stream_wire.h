#pragma once
// The stream seam (docs/architecture.md, "Streams"): what a stream asks of
// the connection that carries it, as operations with their own fields, never
// as one wire's frames. Each wire says them in its own protocol: the native
// one as the frames of docs/protocol.md ("Streams": MESSAGE, HALF_CLOSE,
// CREDIT, END, RESET, an OPEN's answer), the gRPC one as HTTP/2 (DATA with a
// gRPC prefix, END_STREAM, WINDOW_UPDATE, trailers, RST_STREAM). What comes
// the other way reaches StreamCore's on_* functions, called by the wire.
//
// Flow control counts in the stream's own unit on every wire: a message
// costs its size plus kMessageOverhead, so a window means the same whichever
// wire carries it.

#include <cstdint>
#include <memory>
#include <string>

#include <boost/system/error_code.hpp>

#include <wheelrpc/transport/attachments.h>
#include <wheelrpc/transport/compression.h>

#include "base/stream_window.h"

namespace wheelrpc::rpc::detail {

/// What one message costs against a window beyond its size (bytes).
inline constexpr std::uint64_t kMessageOverhead = 27;
/// Of which: what a message adds to the body a peer's body limit counts.
inline constexpr std::uint64_t kMessageBodyOverhead = 3;
/// The window a stream grants unless told otherwise (bytes).
inline constexpr std::uint32_t kDefaultStreamWindow = 64 * 1024;
/// The largest message body a peer takes until its handshake says (bytes).
inline constexpr std::uint32_t kDefaultPeerMaxBody = 8u << 20;
/// Credit a peer may hold at most: more is a protocol violation.
inline constexpr std::uint64_t kMaxCredit = std::uint64_t{1} << 31;

/// What one message of `payload` bytes costs against the window.
inline constexpr std::uint64_t message_cost(std::size_t payload) noexcept { return kMessageOverhead + payload; }

/// A stream's operations towards its peer, said by the connection's wire.
/// Called from any thread, with the stream's lock held: an implementation
/// takes only locks that never call back into a stream. Each fails as a
/// write does (transport::errc::closed, write_queue_full). `id`: the stream.
class StreamWire {
 public:
  /// One message, `encoding` its compression (a transport::Compression value;
  /// 0: as it is). `initial`: the server's initial metadata that goes with its
  /// first message (moved from; empty otherwise). `payload` is lent and given back.
  virtual boost::system::error_code send_message(std::uint64_t id, std::string& payload, std::uint8_t encoding,
                                                 transport::Attachments& initial) = 0;
  /// Client: no more messages from it.
  virtual boost::system::error_code send_half_close(std::uint64_t id) = 0;
  /// Room for `bytes` (the stream's unit) more: the receiver read that much.
  virtual boost::system::error_code send_credit(std::uint64_t id, std::uint32_t bytes) = 0;
  /// Server: the final status (`ec` empty: OK), what happened (`message`, for
  /// a failure) and the metadata (metadata_split.h's shape: initial metadata
  /// no message carried, then the marker and the trailers). Moved from.
  virtual boost::system::error_code send_end(std::uint64_t id, const boost::system::error_code& ec,
                                             std::string& message, transport::Attachments& metadata) = 0;
  /// Client: it cancels the stream (nothing is answered).
  virtual boost::system::error_code send_reset(std::uint64_t id) = 0;
  /// Server: the answer to the stream's opening: accepted (`ec` empty), or
  /// refused with `ec` and what happened (`message`, moved from).
  virtual boost::system::error_code send_open_answer(std::uint64_t id, const boost::system::error_code& ec,
                                                     std::string& message) = 0;

 protected:
  ~StreamWire() = default;
};

}  // namespace wheelrpc::rpc::detail
