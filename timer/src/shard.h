#pragma once
// One independent sub-wheel: its lock, records, wheel and counters. A thread
// always schedules into the same shard, so producers on different threads
// touch different cache lines. Every method requires `lock` to be held
// (WHEELRPC_REQUIRES: the thread-safety analysis checks it).

#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "node_pool.h"
#include <wheelrpc/common/single_writer_counter.h>
#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/common/thread_annotations.h>
#include "wheel.h"

namespace wheelrpc::timer::detail {

/// A counter written only under the shard lock and read from anywhere.
using ShardCounter = common::SingleWriterCounter<std::uint64_t>;

/// A record that reached its deadline, to be run outside the lock.
struct Fired {
  std::uint32_t shard;
  std::uint32_t index;
  std::uint32_t gen;
  std::uint64_t deadline;  // tick
};

class alignas(64) Shard {
 public:
  /// Deadlines at least this many ticks past elapsed take the far path: they
  /// hop through the wheel, their real deadline kept in `far_`.
  static constexpr std::uint64_t kFarTicks = std::uint64_t{1} << 31;
  static constexpr std::uint64_t kHopTicks = std::uint64_t{1} << 30;

  Shard(std::uint32_t id, unsigned slot_bits) : id_(id), wheel_(slot_bits) {}

  common::SpinLock lock;

  /// Takes `box` into a new record due at tick `d`; returns its index and sets
  /// `gen`, or returns kNil (pool full or no memory; `box` untouched).
  std::uint32_t add(const TaskBox& box, std::uint64_t d, std::uint32_t& gen) noexcept WHEELRPC_REQUIRES(lock);

  /// Cancels a pending or unprocessed record of generation `gen`: moves its task
  /// into `out` (to be destroyed by the caller, outside the lock) and frees it.
  bool cancel(std::uint32_t i, std::uint32_t gen, TaskBox& out) noexcept WHEELRPC_REQUIRES(lock);

  /// Takes everything due at tick `now` into `out` (marked firing).
  void advance(std::uint64_t now, std::vector<Fired>& out) WHEELRPC_REQUIRES(lock);

  /// Frees a firing record once its task ran (or was dropped); moves the task
  /// into `out` for the caller to destroy outside the lock.
  void finish(std::uint32_t i, TaskBox& out) noexcept WHEELRPC_REQUIRES(lock);

  /// Marks every pending record unprocessed and appends (index, gen) pairs;
  /// later `add` calls fail.
  void stop(std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) WHEELRPC_REQUIRES(lock);

  bool stopped() const noexcept WHEELRPC_REQUIRES(lock) { return stopped_; }
  std::uint64_t next_event() const noexcept WHEELRPC_REQUIRES(lock) { return wheel_.next_event(); }
  std::uint64_t elapsed() const noexcept WHEELRPC_REQUIRES(lock) { return wheel_.elapsed(); }
  bool valid(std::uint32_t i) const noexcept WHEELRPC_REQUIRES(lock) { return i < pool_.high_water(); }
  Node& node(std::uint32_t i) noexcept WHEELRPC_REQUIRES(lock) { return pool_[i]; }
  const Node& node(std::uint32_t i) const noexcept WHEELRPC_REQUIRES(lock) { return pool_[i]; }
  /// A firing record, without the lock: nobody else writes it until finish().
  Node& firing_node(std::uint32_t i) noexcept WHEELRPC_NO_THREAD_SAFETY_ANALYSIS { return pool_[i]; }
  std::uint32_t id() const noexcept { return id_; }

  ShardCounter scheduled, cancelled, expired, pending;

 private:
  void free_record_locked(std::uint32_t i, bool cancelled_) noexcept WHEELRPC_REQUIRES(lock);
  void fire_locked(std::uint32_t i, std::uint64_t d, std::vector<Fired>& out) WHEELRPC_REQUIRES(lock);
  void reach_hop_locked(std::uint32_t i) noexcept WHEELRPC_REQUIRES(lock);

  std::uint32_t id_;
  bool stopped_ WHEELRPC_GUARDED_BY(lock) = false;
  NodePool pool_ WHEELRPC_GUARDED_BY(lock);
  Wheel wheel_ WHEELRPC_GUARDED_BY(lock);
  std::unordered_map<std::uint32_t, std::uint64_t> far_ WHEELRPC_GUARDED_BY(lock);
};

}  // namespace wheelrpc::timer::detail
