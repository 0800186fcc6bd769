#pragma once
// Per-method call metrics of a Client or a Server, cheap enough for every
// call: each thread adds to its own cache-line-aligned shard of the method's
// cells (its thread slot's: plain loads and stores on lines no other live
// thread writes; see thread_slot.h); a snapshot sums the shards. In flight =
// started - completed, so a call costs no read-modify-write at all.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/status_code.h>

#include <wheelrpc/common/thread_slot.h>

#include "base/stream_end.h"

namespace wheelrpc::transport {
class Channel;
}

namespace wheelrpc::rpc::detail {

/// Which way a payload went, from this side.
enum class Direction : std::uint8_t { sent = 0, received = 1 };

class MethodCells {
 public:
  static constexpr std::size_t kShards = common::kThreadSlots + 1;  // one per thread slot
  static constexpr std::size_t kCoarse = 15;                        // 14 bounds + above
  static constexpr std::size_t kFine = 110;                         // below 1024 ns, 27 octaves x 4, above

  explicit MethodCells(std::string name) : name_(std::move(name)) {}
  const std::string& name() const noexcept { return name_; }

  /// A client has looked at the method's first call (what its IDL says, for
  /// Client::explain): later calls need not.
  std::atomic<bool> policy_seen{false};

  void started() noexcept {
    const std::size_t slot = common::thread_slot();
    common::add_in_slot(shards_[slot].started, 1, slot);
  }
  /// A call ended with `code` after `latency`.
  void completed(CallCode code, std::chrono::nanoseconds latency) noexcept;
  void deadline_exceeded() noexcept {
    const std::size_t slot = common::thread_slot();
    common::add_in_slot(shards_[slot].deadline_exceeded, 1, slot);
  }
  void shed() noexcept {
    const std::size_t slot = common::thread_slot();
    common::add_in_slot(shards_[slot].shed, 1, slot);
  }

  /// A payload of `bytes` to the application, `wire` on the wire.
  void payload(Direction d, std::size_t bytes, std::size_t wire, bool compressed) noexcept {
    const std::size_t slot = common::thread_slot();
    auto& t = shards_[slot].traffic[static_cast<int>(d)];
    common::add_in_slot(t[0], 1, slot);
    if (compressed) common::add_in_slot(t[1], 1, slot);
    common::add_in_slot(t[2], bytes, slot);
    common::add_in_slot(t[3], wire, slot);
  }

  // ---- the method's streams (StreamCore counts them beside the side's StreamCounters)
  /// One of its streams started (made: a client's open attempt, a server's accepted OPEN).
  void stream_opened() noexcept {
    const std::size_t slot = common::thread_slot();
    common::add_in_slot(shards_[slot].stream_opened, 1, slot);
  }
  /// A stream message: payload() plus the count of the stream's messages that way.
  void stream_message(Direction d, std::size_t bytes, std::size_t wire, bool compressed) noexcept {
    payload(d, bytes, wire, compressed);
    const std::size_t slot = common::thread_slot();
    common::add_in_slot(shards_[slot].stream_messages[static_cast<int>(d)], 1, slot);
  }
  /// One of its streams ended, by `cause`, with `code` (status_code_of its
  /// error). Once per stream; streams end far less often than calls do, so
  /// these cells are shared, not per thread.
  void stream_ended(StreamEnd cause, StatusCode code) noexcept {
    const auto c = static_cast<std::size_t>(cause);
    const auto v = static_cast<std::size_t>(code);
    if (c < kStreamEndKinds && v < static_cast<std::size_t>(kStatusCodes)) {
      stream_ends_[c][v].fetch_add(1, std::memory_order_release);
    }
  }

  MethodStats snapshot() const;

  /// Bucket of `ns` among the fine buckets, and their upper bounds (ns).
  static std::size_t fine_index(std::uint64_t ns) noexcept;
  static std::size_t coarse_index(std::uint64_t ns) noexcept;

 private:
  struct alignas(64) Shard {
    std::atomic<std::uint64_t> handled[kCallCodes]{};
    std::atomic<std::uint64_t> started{0};
    std::atomic<std::uint64_t> deadline_exceeded{0};
    std::atomic<std::uint64_t> shed{0};
    std::atomic<std::uint64_t> sum_ns{0};
    std::atomic<std::uint64_t> coarse[kCoarse]{};
    std::atomic<std::uint64_t> fine[kFine]{};
    // Per Direction: messages, compressed, bytes, wire bytes (PayloadTraffic).
    std::atomic<std::uint64_t> traffic[2][4]{};
    std::atomic<std::uint64_t> stream_opened{0};
    std::atomic<std::uint64_t> stream_messages[2]{};  // per Direction
  };

  const std::string name_;
  Shard shards_[kShards];
  std::atomic<std::uint64_t> max_ns_{0};
  std::atomic<std::uint64_t> min_ns_{~std::uint64_t{0}};  // none yet
  std::atomic<std::uint64_t> stream_ends_[kStreamEndKinds][kStatusCodes]{};
};

/// The methods of one Client or Server. Cells are created on first use (or
/// up front: `add`) and live as long as the table.
///
/// Thread safety: every method from any thread.
class MethodTable {
 public:
  MethodTable();
  /// The cells of `method`, created if new. Lock-free when this thread found
  /// the same method of the same table last time (a small per-thread cache).
  MethodCells& get(std::string_view method);
  /// Every method so far, in the order first seen.
  std::vector<MethodStats> snapshot() const;

 private:
  const std::uint64_t id_;  // never reused: a per-thread cache entry of a dead table never matches
  mutable common::Mutex mu_;
  std::vector<std::unique_ptr<MethodCells>> cells_ WHEELRPC_GUARDED_BY(mu_);
  std::unordered_map<std::string_view, MethodCells*> by_name_ WHEELRPC_GUARDED_BY(mu_);  // keys point into cells_
};

/// The last `kKept` calls that ended in a timeout, newest last.
class TimeoutLog {
 public:
  static constexpr std::size_t kKept = 256;
  void add(TimeoutRecord record);
  /// Newest first.
  std::vector<TimeoutRecord> snapshot() const;

 private:
  mutable common::Mutex mu_;
  std::vector<TimeoutRecord> ring_ WHEELRPC_GUARDED_BY(mu_);
  std::size_t next_ WHEELRPC_GUARDED_BY(mu_) = 0;
};

/// Fills a connection row's channel fields: endpoints, age, traffic, last
/// read and write ages (any thread).
void fill_channel_info(ConnectionInfo& info, const transport::Channel& channel);

}  // namespace wheelrpc::rpc::detail
