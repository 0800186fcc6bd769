#pragma once
/// ChannelOptions: the socket-level limits of one Channel, in a header of their
/// own so that option structs elsewhere (rpc/options.h) can hold them without
/// pulling in Channel, Asio's sockets and strands.

#include <cstddef>
#include <cstdint>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::transport {

/// Fixed when the channel is created.
struct ChannelOptions {
  /// Largest frame body accepted from the peer (bytes); larger frames close the
  /// channel before anything is allocated. Default 8 MiB.
  std::uint32_t max_body = kDefaultMaxBody;
  /// Bytes of encoded frames that may wait to be written; `send` fails with
  /// errc::write_queue_full beyond it. Default 64 MiB.
  std::size_t max_write_queue_bytes = std::size_t{64} << 20;
  /// Initial read buffer (bytes); it grows to fit one whole frame. Default 64 KiB.
  std::size_t read_buffer_bytes = std::size_t{64} << 10;
};

}  // namespace wheelrpc::transport
