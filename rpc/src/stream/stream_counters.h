#pragma once
// The counters of the streams of one client or server (ServerStats::streams,
// ClientStats::streams); the causes a stream ends by are base/stream_end.h's.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <wheelrpc/rpc/stream_info.h>

#include "base/stream_end.h"

namespace wheelrpc::rpc::detail {

/// Counters of the streams of one client or server (monotonic but `open`).
struct StreamCounters {
  std::atomic<std::uint64_t> opened{0};
  std::atomic<std::int64_t> open{0};
  std::atomic<std::uint64_t> messages_in{0}, messages_out{0};
  std::array<std::atomic<std::uint64_t>, kStreamEndKinds> ends{};
};

/// Copies `c` into `out`. Any thread.
void fill(const StreamCounters& c, StreamStats& out) noexcept;

}  // namespace wheelrpc::rpc::detail
