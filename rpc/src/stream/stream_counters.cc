#include "stream/stream_counters.h"

#include <algorithm>

namespace wheelrpc::rpc::detail {

const char* to_label(StreamEnd e) noexcept {
  static constexpr const char* kLabels[kStreamEndKinds] = {
      "ok",      "error",    "cancelled", "deadline", "message_idle", "write_stall", "first_message", "connection_lost",
      "refused", "protocol", "shutdown"};
  const auto i = static_cast<std::size_t>(e);
  return i < kStreamEndKinds ? kLabels[i] : "?";
}

void fill(const StreamCounters& c, StreamStats& out) noexcept {
  auto get = [&](StreamEnd e) { return c.ends[static_cast<std::size_t>(e)].load(std::memory_order_relaxed); };
  out.opened = c.opened.load(std::memory_order_relaxed);
  out.open = static_cast<std::uint64_t>(std::max<std::int64_t>(c.open.load(std::memory_order_relaxed), 0));
  out.messages_in = c.messages_in.load(std::memory_order_relaxed);
  out.messages_out = c.messages_out.load(std::memory_order_relaxed);
  out.ends.ok = get(StreamEnd::ok);
  out.ends.error = get(StreamEnd::error);
  out.ends.cancelled = get(StreamEnd::cancelled);
  out.ends.deadline = get(StreamEnd::deadline);
  out.ends.message_idle = get(StreamEnd::message_idle);
  out.ends.write_stall = get(StreamEnd::write_stall);
  out.ends.first_message = get(StreamEnd::first_message);
  out.ends.connection_lost = get(StreamEnd::connection_lost);
  out.ends.refused = get(StreamEnd::refused);
  out.ends.protocol = get(StreamEnd::protocol);
  out.ends.shutdown = get(StreamEnd::shutdown);
}

}  // namespace wheelrpc::rpc::detail
