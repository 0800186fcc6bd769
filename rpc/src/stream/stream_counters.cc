#include "stream/stream_counters.h"

#include <algorithm>

namespace wheelrpc::rpc::detail {

void fill(const StreamCounters& c, StreamStats& out) noexcept {
  out.opened = c.opened.load(std::memory_order_relaxed);
  out.open = static_cast<std::uint64_t>(std::max<std::int64_t>(c.open.load(std::memory_order_relaxed), 0));
  out.messages_in = c.messages_in.load(std::memory_order_relaxed);
  out.messages_out = c.messages_out.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kStreamEndKinds; ++i) {
    count_of(out.ends, static_cast<StreamEnd>(i)) = c.ends[i].load(std::memory_order_relaxed);
  }
}

}  // namespace wheelrpc::rpc::detail
