#pragma once
/// ExpiredTask: an expired timeout handed to an executor to run.

#include <cstdint>

#include <wheelrpc/timer/timeout.h>

namespace wheelrpc::timer {

namespace detail {
class TimerCore;
}

/// Move-only. Calling it runs the task once (an exception from the task is
/// caught and logged) and frees the timeout's record. Destroying it unrun
/// frees the record and the task without running it (counted as `dropped` in
/// TimerStats), so an executor that shuts down never leaks timeouts.
/// Every ExpiredTask must be run or destroyed before its timer is destroyed.
class ExpiredTask {
 public:
  ExpiredTask(ExpiredTask&& other) noexcept
      : core_(other.core_), timeout_(other.timeout_), deadline_tick_(other.deadline_tick_) {
    other.core_ = nullptr;
  }
  ExpiredTask& operator=(ExpiredTask&& other) noexcept;
  ExpiredTask(const ExpiredTask&) = delete;
  ExpiredTask& operator=(const ExpiredTask&) = delete;
  ~ExpiredTask();

  /// Runs the task on the calling thread. A second call does nothing.
  void operator()();

  /// The expired timeout (`is_expired()` is true until the task has run).
  const Timeout& timeout() const noexcept { return timeout_; }

 private:
  friend class detail::TimerCore;
  ExpiredTask(detail::TimerCore* core, Timeout timeout, std::uint64_t deadline_tick) noexcept
      : core_(core), timeout_(timeout), deadline_tick_(deadline_tick) {}

  detail::TimerCore* core_;
  Timeout timeout_;
  std::uint64_t deadline_tick_;
};

}  // namespace wheelrpc::timer
