// StreamCore's messages as they come and go through compression
// (docs/compression.md): compressed outside the stream's lock on the
// writer's thread, decoded on the connection's strand before the lock, then
// taken in under it (on_message: limits, credit, delivery); whether each
// came compressed; and the server's initial metadata and trailers.

#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/status_code.h>

#include "base/metadata_split.h"
#include "base/payload_coding.h"
#include "stream/stream_core.h"
#include "stream/stream_pending.h"

namespace wheelrpc::rpc::detail {

std::uint8_t StreamCore::compress_message(std::string& message, bool allowed) const {
  const int chosen = compression_.load(std::memory_order_relaxed);
  const auto algorithm = chosen < 0 ? s_.compression : static_cast<transport::Compression>(chosen);
  const int level = chosen < 0 ? s_.compression_level : compression_level_.load(std::memory_order_relaxed);
  if (!allowed || algorithm == transport::Compression::identity || !s_.side->coding) return 0;
  // Before the stream is bound the peer's set is unknown (empty): such an
  // early write goes as it is.
  const auto peer = transport::CompressionSet::from_bits(peer_accept_.load(std::memory_order_relaxed));
  // Its own buffer, not the per-thread one: the message may wait for credit.
  std::string out;
  const auto used = compress_payload(message, algorithm, level, s_.side->coding->threshold, peer, out);
  if (used == transport::Compression::identity) return 0;
  message.swap(out);
  return static_cast<std::uint8_t>(used);
}

boost::system::error_code StreamCore::decode_message(std::uint8_t encoding, std::string& payload,
                                                     std::string& why) const {
  static const PayloadCoding kNothing{0, {}, 0};
  return decompress_payload(encoding, payload, s_.side->coding ? *s_.side->coding : kNothing, s_.side->max_message,
                            "a message", why);
}

void StreamCore::take_message(std::string& payload, bool compressed, std::size_t wire_size,
                              transport::Attachments* initial, Pending& p) {
  const Wire wire = s_.side->client ? Wire::reset : Wire::end;
  if (peer_done_) {
    end_locked(make_error_code(StatusCode::internal), "a message after the peer's half-close", StreamEnd::protocol,
               wire, p);
    return;
  }
  const std::size_t size = payload.size();
  if (size > s_.side->max_message) {
    end_locked(make_error_code(errc::resource_exhausted),
               fmt::format("a message of {} bytes exceeds the limit of {} bytes", size, s_.side->max_message),
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
  // The server's initial metadata comes with its first message.
  if (s_.side->client && received_ == 0 && initial && !initial->empty())
    extras().initial_metadata = std::move(*initial);
  ++received_;
  bytes_received_ += size;
  if (s_.cells) s_.cells->stream_message(Direction::received, size, wire_size, compressed);
  last_message_ = now();
  if (s_.side->counters) s_.side->counters->messages_in.fetch_add(1, std::memory_order_relaxed);
  if (received_ == 1 && armed_[index(StreamTimer::first_message)]) {
    (*timeouts_)[index(StreamTimer::first_message)].cancel();  // armed: made
    armed_[index(StreamTimer::first_message)] = false;
  }
  if (read_) {
    consumed(cost);
    last_read_compressed_.store(compressed, std::memory_order_relaxed);
    p.read(read_, {}, std::move(payload));
    payload.clear();
    return;
  }
  if (inbox_head_ == inbox_.size()) {
    inbox_.clear();
    inbox_received_.clear();
    inbox_head_ = 0;
  }
  inbox_.push_back(std::move(payload));
  inbox_received_.push_back({cost, compressed});
  payload.clear();
}

// ---- metadata and compression ----------------------------------------------

void StreamCore::add_initial_metadata(std::string key, std::string value) {
  common::LockGuard lock(mu_);
  if (!ended_ && !s_.side->client && !initial_sent_)
    extras().initial_metadata.emplace_back(std::move(key), std::move(value));
}

transport::Attachments StreamCore::initial_metadata() const {
  common::LockGuard lock(mu_);
  return extras_ ? extras_->initial_metadata : transport::Attachments();
}

transport::Attachments StreamCore::trailers() const {
  common::LockGuard lock(mu_);
  return extras_ ? extras_->trailers : transport::Attachments();
}

void StreamCore::set_compression(transport::Compression compression, int level) {
  compression_level_.store(level, std::memory_order_relaxed);
  compression_.store(static_cast<int>(compression), std::memory_order_relaxed);
}

transport::Attachments StreamCore::end_metadata() {
  // The initial metadata no message carried, then the marker and the
  // trailers (the gRPC transport sends what follows the marker as trailers).
  transport::Attachments all;
  const bool initial_went = initial_sent_;
  initial_sent_ = true;
  if (!extras_) return all;  // no metadata added
  if (!initial_went) all = std::move(extras_->initial_metadata);
  auto& trailers = extras_->trailers;
  if (!all.empty() || !trailers.empty()) all.emplace_back(std::string(kTrailersMarker), std::string());
  for (auto& kv : trailers) all.push_back(std::move(kv));
  trailers.clear();
  return all;
}

void StreamCore::take_end_metadata(transport::Attachments& all) {
  if (all.empty()) return;  // nothing to keep
  Extras& x = extras();
  transport::Attachments trailing;
  const bool marked = initial_end(all) != all.end();
  split_trailers(all, trailing);
  if (!marked) {
    x.trailers = std::move(all);
    return;
  }
  if (x.initial_metadata.empty()) x.initial_metadata = std::move(all);
  x.trailers = std::move(trailing);
}

}  // namespace wheelrpc::rpc::detail
