#pragma once
/// Timeout: a handle to one scheduled task (Netty/Dubbo's io.netty.util.Timeout).

#include <compare>
#include <cstdint>
#include <memory>

namespace wheelrpc::timer {

class Timer;
class TimerTask;

/// Where a timeout is in its life.
enum class TimeoutState : std::uint8_t {
  pending,      ///< scheduled, not yet run, not cancelled
  expired,      ///< its deadline passed: the task is running, queued on the executor, or ran
  cancelled,    ///< `cancel()` succeeded before the task could run
  unprocessed,  ///< the timer stopped before the deadline; returned by `stop()`
  finished,     ///< ran or was cancelled, but the record was reused twice since, so
                ///< which of the two is no longer known (see `Timeout`)
  empty,        ///< a default-constructed handle
};

/// A copyable 16-byte handle: the timer, the record's index and its generation.
/// The record is reused as soon as the timeout completes; the generation tag
/// makes every stale handle harmless: `cancel()` on it returns false and can
/// never touch the timeout that reuses the record.
///
/// State queries are exact while the timeout is pending and after it completes
/// until its record has been reused twice; after that they report
/// `TimeoutState::finished` (`is_expired()` and `is_cancelled()` both false).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: every method may be called from any thread, concurrently
/// with the timer's worker. A handle must not be used after its timer is
/// destroyed.
class Timeout {
 public:
  Timeout() noexcept = default;

  /// The timer that created this timeout, or nullptr for an empty handle.
  Timer* timer() const noexcept { return timer_; }

  /// The task, when it was given as a `std::shared_ptr<TimerTask>` and the
  /// timeout has not completed; nullptr otherwise (plain callables have no
  /// TimerTask object).
  std::shared_ptr<TimerTask> task() const;

  TimeoutState state() const noexcept;
  /// True once the deadline passed and the task was handed to run (Netty's
  /// isExpired()).
  bool is_expired() const noexcept { return state() == TimeoutState::expired; }
  /// True if `cancel()` succeeded on this timeout (through any handle).
  bool is_cancelled() const noexcept { return state() == TimeoutState::cancelled; }

  /// Cancels the timeout. Returns true only if this call prevented the task
  /// from running (or removed an unprocessed timeout returned by `stop()`);
  /// false if it already ran, is running, was cancelled, or the handle is stale
  /// or empty. O(1); the record is free for reuse when this returns and the
  /// task object is destroyed before it returns. Safe from inside any task,
  /// including the timeout's own (returns false there).
  bool cancel() noexcept;

  explicit operator bool() const noexcept { return timer_ != nullptr; }
  friend bool operator==(const Timeout&, const Timeout&) noexcept = default;

  /// The record's id and generation, for logs ("timeout={}:{}").
  std::uint32_t id() const noexcept { return id_; }
  std::uint32_t generation() const noexcept { return gen_; }

 private:
  friend class Timer;
  Timeout(Timer* timer, std::uint32_t id, std::uint32_t gen) noexcept : timer_(timer), id_(id), gen_(gen) {}

  Timer* timer_ = nullptr;
  std::uint32_t id_ = 0;
  std::uint32_t gen_ = 0;
};

}  // namespace wheelrpc::timer
