#pragma once
/// Clocks a HashedWheelTimer can read: the steady clock by default, or an
/// injected one (ManualClock) so tests drive time by hand.

#include <atomic>
#include <chrono>

namespace wheelrpc::timer {

/// std::chrono::steady_clock::now(), read cheaply: from the invariant TSC
/// where the kernel trusts it (one RDTSC and a multiply, re-anchored on the
/// steady clock every ~0.7 ms per thread), else the steady clock itself. May
/// run up to 2 µs ahead of the steady clock, never behind, so a deadline
/// computed from it is never early. Thread-safe. The HashedWheelTimer's
/// default clock reads the same source.
std::chrono::steady_clock::time_point fast_steady_now() noexcept;

/// A monotonic clock. `now()` must never go backwards and must be safe to call
/// from any thread.
class Clock {
 public:
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual time_point now() const noexcept = 0;
};

/// A clock that moves only when told to. Thread-safe: `advance()` and `set()`
/// may race with `now()` from other threads.
class ManualClock final : public Clock {
 public:
  /// Starts at `start` (default: the steady clock's epoch plus one hour, so that
  /// `now() - delay` never underflows in tests).
  explicit ManualClock(time_point start = time_point{} + std::chrono::hours(1)) noexcept
      : ns_(start.time_since_epoch().count()) {}

  time_point now() const noexcept override { return time_point{duration{ns_.load(std::memory_order_acquire)}}; }
  /// Moves time forward by `d` (negative values are ignored: time is monotonic).
  void advance(duration d) noexcept {
    if (d.count() > 0) ns_.fetch_add(d.count(), std::memory_order_acq_rel);
  }
  /// Moves time to `t` if `t` is later than now; earlier values are ignored.
  void set(time_point t) noexcept {
    auto want = t.time_since_epoch().count();
    auto cur = ns_.load(std::memory_order_relaxed);
    while (cur < want && !ns_.compare_exchange_weak(cur, want, std::memory_order_acq_rel)) {
    }
  }

 private:
  std::atomic<duration::rep> ns_;
};

}  // namespace wheelrpc::timer
