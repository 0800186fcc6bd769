// StreamCore's compression of messages (docs/compression.md): done outside
// the stream's lock, on the writer's thread for a write and on the
// connection's strand for a message received.

#include <wheelrpc/rpc/status_code.h>

#include "payload_coding.h"
#include "stream_core.h"

namespace wheelrpc::rpc::detail {

std::uint8_t StreamCore::compress_message(std::string& message) const {
  if (s_.compression == transport::Compression::identity || !s_.coding) return 0;
  // Before the stream is bound the peer's set is unknown (empty): such an
  // early write goes as it is.
  const auto peer = transport::CompressionSet::from_bits(peer_accept_.load(std::memory_order_relaxed));
  // Its own buffer, not the per-thread one: the message may wait for credit.
  std::string out;
  const auto used = compress_payload(message, s_.compression, s_.compression_level, s_.coding->threshold, peer, out);
  if (used == transport::Compression::identity) return 0;
  message.swap(out);
  return static_cast<std::uint8_t>(used);
}

boost::system::error_code StreamCore::decode_message(transport::Frame& f, std::string& why) const {
  static const PayloadCoding kNothing{0, {}, 0};
  return decompress_payload(f.header.encoding, f.payload, s_.coding ? *s_.coding : kNothing, s_.max_message,
                            "a message", why);
}

}  // namespace wheelrpc::rpc::detail
