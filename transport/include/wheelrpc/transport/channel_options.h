#pragma once
/// ChannelOptions: the socket-level limits of one Channel, in a header of their
/// own so that option structs elsewhere (rpc/options.h) can hold them without
/// pulling in Channel, Asio's sockets and strands.

#include <chrono>
#include <cstddef>
#include <cstdint>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::transport {

/// Fixed when the channel is created. How the buffers behind these limits are
/// held and given back is described under "Memory" in channel.h.
struct ChannelOptions {
  /// Largest frame body accepted from the peer (bytes); larger frames close the
  /// channel before anything is allocated. Default 8 MiB.
  std::uint32_t max_body = kDefaultMaxBody;

  /// Bytes of encoded frames that may wait to be written; `send` fails with
  /// errc::write_queue_full beyond it. Default 64 MiB.
  std::size_t max_write_queue_bytes = std::size_t{64} << 20;

  /// The most read buffer (bytes) a busy channel keeps between reads: a busy
  /// channel's buffer starts at 1 KiB (or twice its last read) and doubles
  /// each time a read fills it, up to this. Larger frames still get a buffer
  /// of their own size while they arrive (growing with what has arrived, up
  /// to max_body + 24), which is given back once they are complete. A quiet
  /// channel keeps none. Default 64 KiB; values below 64 act as 64.
  std::size_t read_buffer_bytes = std::size_t{64} << 10;

  /// A channel is busy while its reads that start a frame come at most this
  /// long apart: it then keeps a read buffer between reads, so a stream of
  /// frames costs one read and no allocation each. A read that starts a frame
  /// after a longer quiet spell (or is the first) and leaves no partial frame
  /// gives back the read buffer, shrinks the write buffers and the decoded
  /// frame's strings, and the next wait holds no heap buffer. Reads that
  /// continue a frame keep the decision; a read that fills its buffer past
  /// the frame it was sized for counts as busy whatever the interval (more
  /// bytes are waiting). Default 10 ms. Zero: the read buffer is given back
  /// after every read that neither fills it nor leaves a partial frame (least
  /// memory; costs an allocation whenever more than Channel::kInlineReadBytes
  /// arrive at once).
  std::chrono::microseconds busy_read_interval{10'000};
  /// A byte channel from the start: no frames are decoded or encoded; what
  /// is read goes to ChannelHandler::on_data and send_bytes() writes. A TLS
  /// client offers ALPN `h2` (HTTP/2); a frame channel offers `wheelrpc`.
  /// Default false.
  bool raw = false;
  /// Server: a connection that opens with the HTTP/2 client preface (or, on
  /// TLS, whose ALPN chose `h2`) becomes a byte channel: the handler's
  /// on_http2() gives the handler that takes its bytes. Default false.
  bool accept_http2 = false;
};

}  // namespace wheelrpc::transport
