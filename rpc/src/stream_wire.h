#pragma once
// How a stream's frames reach a connection that does not speak the native
// framed protocol (docs/architecture.md, "Streams"): StreamCore builds the
// frames of docs/protocol.md ("Streams": an OPEN's answer, MESSAGE,
// HALF_CLOSE, CREDIT, END, RESET) and the connection's StreamWire says the
// same in its own protocol (HTTP/2: HEADERS, DATA with a gRPC prefix,
// END_STREAM, WINDOW_UPDATE, trailers, RST_STREAM). A stream bound without
// one sends its frames on its channel as they are.

#include <cstdint>
#include <memory>

#include <boost/system/error_code.hpp>

#include <wheelrpc/transport/compression.h>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc::detail {

class StreamWire {
 public:
  /// Sends what `frame` means (the frame may be moved from). Any thread, and
  /// with the stream's lock held: takes only locks that never call back into
  /// a stream. Fails as Channel::send does (closed, write queue full).
  virtual boost::system::error_code send_stream_frame(transport::Frame& frame) = 0;

 protected:
  ~StreamWire() = default;
};

/// A stream opened on a non-native connection: its wire, the window its
/// StreamCore grants (in the stream's own units), and what the peer decodes.
struct StreamWireBinding {
  std::shared_ptr<StreamWire> wire;
  std::uint32_t receive_window = 0;
  transport::CompressionSet accept;
};

}  // namespace wheelrpc::rpc::detail
