#pragma once
/// HashedWheelTimer: Netty/Dubbo's timer, rebuilt so that an idle wheel costs
/// nothing, cancel is O(1) and many threads can schedule without contention.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/timer/expired_task.h>
#include <wheelrpc/timer/timer.h>

namespace wheelrpc::timer {

namespace detail {
class TimerCore;
}

/// Runs expired tasks somewhere else than on the timer's worker, e.g.
/// `[ex](ExpiredTask t) { boost::asio::post(ex, std::move(t)); }`.
/// Called on the worker thread (or the thread calling `run_expired()`); must not
/// block and must not throw.
using TaskExecutor = std::function<void(ExpiredTask)>;

/// Construction knobs. Every field is validated by the constructor, which throws
/// std::invalid_argument naming the field.
struct HashedWheelTimerOptions {
  /// Resolution of the wheel: deadlines are rounded up to a whole tick, so a
  /// timeout fires at most about one tick late and never early.
  /// Default 1 ms; allowed 1 µs .. 1 h. (Dubbo uses 30 ms for calls, 1 s for
  /// channel tasks; with no empty ticks a fine tick costs nothing while idle.)
  std::chrono::nanoseconds tick_duration = std::chrono::milliseconds(1);

  /// Slots per wheel level, rounded up to a power of two. Default 512 (Netty's);
  /// allowed 1 .. 4096 (1 is treated as 2). Levels are stacked until any delay
  /// fits, so this trades memory (8 bytes per slot per level per shard) against
  /// how often long timeouts move down a level (once per level, never per lap).
  std::size_t ticks_per_wheel = 512;

  /// Most timeouts pending at once; beyond it `new_timeout` fails with
  /// errc::too_many_pending. 0 (default) = unlimited. A non-zero limit costs one
  /// shared atomic counter update per schedule and per completion.
  std::size_t max_pending_timeouts = 0;

  /// Where expired tasks run. Empty (default): on the timer's worker thread.
  TaskExecutor executor;

  /// Independent sub-wheels, each with its own lock; a thread always schedules
  /// into the same one, so producers on different threads do not contend.
  /// 0 (default) = the number of hardware threads rounded up to a power of two;
  /// allowed 0 .. 32 (rounded up to a power of two).
  std::size_t shards = 0;

  /// Time source. nullptr (default) = std::chrono::steady_clock. A non-null clock
  /// (e.g. ManualClock) requires `manual_drive`: nothing can sleep on a clock
  /// that does not follow real time. Not owned; must outlive the timer.
  const Clock* clock = nullptr;

  /// When true no worker thread is started: the owner calls `run_expired()` to
  /// run what is due (tests drive time this way). Default false.
  bool manual_drive = false;

  /// Name of the worker thread (truncated to 15 characters). Default "wheel-timer".
  std::string thread_name = "wheel-timer";
};

/// Counters, read with `HashedWheelTimer::stats()`. Monotonic except `pending`.
struct TimerStats {
  static constexpr std::size_t kLatenessBuckets = 24;

  std::uint64_t pending = 0;    ///< scheduled and neither run, cancelled nor stopped
  std::uint64_t scheduled = 0;  ///< accepted by new_timeout
  std::uint64_t cancelled = 0;  ///< cancel() calls that returned true
  std::uint64_t expired = 0;    ///< deadlines reached (tasks handed to run)
  std::uint64_t failed = 0;     ///< tasks that threw
  std::uint64_t dropped = 0;    ///< ExpiredTasks destroyed without running
  std::uint64_t rejected = 0;   ///< new_timeout calls refused (stopped, limit, memory)
  std::uint64_t wakeups = 0;    ///< times the worker woke up
  /// How late tasks started, relative to their tick-rounded deadline. Bucket 0:
  /// < 1 µs; bucket i: [2^(i-1), 2^i) µs; the last bucket takes everything above.
  std::array<std::uint64_t, kLatenessBuckets> lateness_us{};

  /// Upper bound (µs) of the bucket holding quantile q (0 < q <= 1) of lateness;
  /// 0 when nothing expired yet.
  std::uint64_t lateness_quantile_us(double q) const noexcept;
};

/// A hierarchical timing wheel with Netty's HashedWheelTimer semantics:
/// lazy start on the first `new_timeout`, `stop()` returning what never ran,
/// tasks that throw are logged and the wheel goes on.
///
/// Beyond Netty: the worker sleeps until the earliest occupied slot (no empty
/// ticks) and is woken only when a new timeout becomes the earliest; long delays
/// climb levels instead of lapping; cancel unlinks at once and frees the
/// 32-byte record for reuse; schedulers on different threads use different
/// shards and share no written cache line.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: every public method is safe from any thread, except that
/// `stop()` and `run_expired()` must not be called from inside this timer's
/// tasks. Create one per process and share it; a warning is logged (once) when
/// a process holds more than 64 at a time.
class HashedWheelTimer final : public Timer {
 public:
  /// Defaults: 1 ms tick, 512 ticks per wheel, no limit, tasks on the worker.
  HashedWheelTimer();
  HashedWheelTimer(std::chrono::nanoseconds tick_duration, std::size_t ticks_per_wheel = 512,
                   std::size_t max_pending_timeouts = 0);
  explicit HashedWheelTimer(HashedWheelTimerOptions options);
  /// Stops the timer if needed and destroys the tasks of unprocessed timeouts.
  ~HashedWheelTimer() override;

  HashedWheelTimer(const HashedWheelTimer&) = delete;
  HashedWheelTimer& operator=(const HashedWheelTimer&) = delete;

  std::vector<Timeout> stop() override;
  bool is_stopped() const noexcept override;

  /// With `manual_drive`: runs (or hands to the executor) every timeout due at
  /// the clock's current time, on the calling thread; returns how many expired.
  /// Tasks scheduled by those tasks that are already due run in the same call.
  /// Throws std::logic_error without `manual_drive` or from inside a task.
  std::size_t run_expired();

  TimerStats stats() const;

  std::chrono::nanoseconds tick_duration() const noexcept;
  /// The effective slots per level (a power of two >= 2).
  std::size_t ticks_per_wheel() const noexcept;
  std::size_t shard_count() const noexcept;

  /// Live HashedWheelTimer instances in this process.
  static std::size_t instance_count() noexcept;
  /// The number of live instances above which a warning is logged once.
  static constexpr std::size_t kInstanceWarningThreshold = 64;

 protected:
  Timeout schedule(detail::TaskBox box, std::chrono::nanoseconds delay, std::error_code& ec) noexcept override;
  TimeoutState timeout_state(std::uint32_t id, std::uint32_t gen) const noexcept override;
  bool cancel_timeout(std::uint32_t id, std::uint32_t gen) noexcept override;
  std::shared_ptr<TimerTask> timeout_task(std::uint32_t id, std::uint32_t gen) const override;

 private:
  friend class detail::TimerCore;
  std::unique_ptr<detail::TimerCore> core_;
};

}  // namespace wheelrpc::timer
