#pragma once
// The engine behind HashedWheelTimer: shards, the worker thread and the wake-up
// protocol.
//
// Wake-up protocol (no empty ticks): the worker publishes in `sleep_until_` the
// tick it sleeps until, or kAwake while it scans. A producer that inserts a
// deadline earlier than that tick sets `wake_pending_` and notifies. Because
// the worker publishes kAwake *before* it scans the shards, an insert it misses
// in its scan always sees kAwake or the new tick, and so never goes unnoticed.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <array>
#include <memory>
#include <system_error>
#include <string>
#include <thread>
#include <vector>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "shard.h"
#include "tick_divider.h"

namespace wheelrpc::timer::detail {

class TimerCore {
 public:
  TimerCore(HashedWheelTimer& owner, HashedWheelTimerOptions options);
  ~TimerCore();

  Timeout schedule(TaskBox box, std::chrono::nanoseconds delay, std::error_code& ec) noexcept;
  TimeoutState state(std::uint32_t id, std::uint32_t gen) const noexcept;
  bool cancel(std::uint32_t id, std::uint32_t gen) noexcept;
  std::shared_ptr<TimerTask> task(std::uint32_t id, std::uint32_t gen) const;
  std::vector<Timeout> stop();
  bool is_stopped() const noexcept { return state_.load(std::memory_order_acquire) == kStopped; }
  std::size_t run_expired();
  TimerStats stats() const;

  /// ExpiredTask's backend: runs (if `run`) and frees a firing record.
  void complete_expired(const Timeout& t, std::uint64_t deadline_tick, bool run) noexcept;

  std::chrono::nanoseconds tick() const noexcept { return tick_; }
  std::size_t slots_per_level() const noexcept { return std::size_t{1} << slot_bits_; }
  std::size_t shard_count() const noexcept { return shards_.size(); }

  static constexpr std::uint32_t kIndexBits = 27;
  static constexpr std::uint32_t kIndexMask = (1u << kIndexBits) - 1;

 private:
  enum : int { kInit, kStarted, kStopped };
  static constexpr std::uint64_t kAwake = kNever;
  // The worker wakes at least this often (in ticks) so that every shard's
  // elapsed stays within reach of the 32-bit deadlines stored in records.
  static constexpr std::uint64_t kMaxSleepTicks = std::uint64_t{1} << 29;

  std::int64_t now_ns() const noexcept;
  std::int64_t schedule_now_ns() const noexcept;
  std::uint64_t deadline_tick(std::int64_t now, std::chrono::nanoseconds delay) const noexcept;
  Shard& local_shard() noexcept;
  bool start();
  void worker_main();
  void wake_worker() noexcept;
  /// Takes what is due at `now` from every shard, runs or dispatches it;
  /// returns how many expired and sets `next` to the earliest next event.
  std::size_t expire(std::uint64_t now, std::uint64_t& next);
  void run_one(const Fired& f);
  void record_lateness(std::uint64_t deadline_tick) noexcept;
  void reject(TaskBox& box, std::error_code& ec, errc why) noexcept;
  void check_not_in_task(const char* what) const;
  Timeout handle(std::uint32_t shard, std::uint32_t index, std::uint32_t gen) const noexcept {
    return HashedWheelTimer::make_timeout(owner_, shard << kIndexBits | index, gen);
  }

  HashedWheelTimer* owner_;
  const std::chrono::nanoseconds tick_;
  const TickDivider div_;
  const unsigned slot_bits_;
  const std::size_t max_pending_;
  const TaskExecutor executor_;
  const Clock* const clock_;
  const bool manual_;
  const std::string thread_name_;
  const Clock::time_point start_;
  const std::int64_t start_ns_;
  const std::chrono::nanoseconds max_lead_;  // cap of lead_: 200 us, at most a quarter tick
  const std::uint64_t max_sleep_ticks_;      // kMaxSleepTicks, and at most a day
  std::vector<std::unique_ptr<Shard>> shards_;
  std::uint32_t shard_mask_;

  std::atomic<int> state_{kInit};
  common::Mutex start_mu_;  // orders the lazy start against stop()
  std::thread worker_;
  std::atomic<std::thread::id> worker_id_{};

  alignas(64) std::atomic<std::uint64_t> sleep_until_{kAwake};
  std::atomic<bool> wake_pending_{false};
  common::Mutex wake_mu_;
  bool stop_requested_ WHEELRPC_GUARDED_BY(wake_mu_) = false;
  std::chrono::nanoseconds lead_{0};  // worker only: how early to aim a timed wait
  std::condition_variable wake_cv_;   // waits on wake_mu_.native() (worker_main)

  // Written by the worker (or run_expired's caller) only, except as noted.
  alignas(64) std::vector<Fired> batch_;
  std::atomic<std::uint64_t> failed_{0}, dropped_{0}, rejected_{0}, wakeups_{0};
  std::atomic<std::uint64_t> pending_total_{0};  // only with max_pending_
  std::atomic<std::uint64_t> in_flight_{0};      // ExpiredTasks handed to the executor
  std::array<std::atomic<std::uint64_t>, TimerStats::kLatenessBuckets> lateness_{};
};

}  // namespace wheelrpc::timer::detail
