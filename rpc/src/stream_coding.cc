// StreamCore's messages as they come and go through compression
// (docs/compression.md): compressed outside the stream's lock on the
// writer's thread, decoded on the connection's strand before the lock, then
// taken in under it (on_message: limits, credit, delivery).

#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/status_code.h>

#include "payload_coding.h"
#include "stream_core.h"
#include "stream_pending.h"

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

void StreamCore::on_message(transport::Frame& f, std::size_t wire_size, Pending& p) {
  const Wire wire = s_.client ? Wire::reset : Wire::end;
  if (peer_done_) {
    end_locked(make_error_code(StatusCode::internal), "a message after the peer's half-close", StreamEnd::protocol,
               wire, p);
    return;
  }
  const std::size_t size = f.payload.size();
  if (size > s_.max_message) {
    end_locked(make_error_code(errc::resource_exhausted),
               fmt::format("a message of {} bytes exceeds the limit of {} bytes", size, s_.max_message),
               StreamEnd::protocol, wire, p);
    return;
  }
  const std::uint64_t cost = message_cost(wire_size);
  // A peer may send a message larger than the whole window only alone.
  if (recv_outstanding_ + cost > window_ && recv_outstanding_ != 0) {
    end_locked(make_error_code(errc::resource_exhausted),
               fmt::format("the peer sent {} bytes past its credit window of {} bytes",
                           recv_outstanding_ + cost - window_, window_),
               StreamEnd::protocol, wire, p);
    return;
  }
  recv_outstanding_ += cost;
  ++received_;
  bytes_received_ += size;
  if (s_.cells) s_.cells->payload(Direction::received, size, wire_size, f.header.encoding != 0);
  last_message_ = now();
  if (s_.counters) s_.counters->messages_in.fetch_add(1, std::memory_order_relaxed);
  if (received_ == 1 && armed_[index(StreamTimer::first_message)]) {
    timeouts_[index(StreamTimer::first_message)].cancel();
    armed_[index(StreamTimer::first_message)] = false;
  }
  if (read_) {
    consumed(cost);
    p.read(read_, {}, std::move(f.payload));
    f.payload.clear();
    return;
  }
  if (inbox_head_ == inbox_.size()) {
    inbox_.clear();
    inbox_head_ = 0;
  }
  inbox_.push_back(std::move(f.payload));
  f.payload.clear();
}

}  // namespace wheelrpc::rpc::detail
