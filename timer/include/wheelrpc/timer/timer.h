#pragma once
/// Timer: schedules TimerTasks to run once after a delay (Netty/Dubbo's
/// io.netty.util.Timer). HashedWheelTimer is the implementation.

#include <chrono>
#include <memory>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <wheelrpc/timer/detail/task_box.h>
#include <wheelrpc/timer/errc.h>
#include <wheelrpc/timer/timeout.h>
#include <wheelrpc/timer/timer_task.h>

namespace wheelrpc::timer {

class Timer {
 public:
  virtual ~Timer() = default;

  /// Schedules `task` to run once after `delay` (zero or negative: at the next
  /// tick). `task` is a `std::shared_ptr<TimerTask>` or any callable invocable as
  /// `task(Timeout&)` or `task()`; callables of at most 8 trivially copyable bytes
  /// (a pointer, an index, a lambda capturing one of them) are stored without any
  /// allocation, larger ones are moved to the heap here.
  ///
  /// Throws TimerError with errc::timer_stopped after `stop()`, and with
  /// errc::too_many_pending when the limit on pending timeouts is reached.
  /// Thread-safe: call from any thread, including from inside a task.
  template <class F>
  Timeout new_timeout(F&& task, std::chrono::nanoseconds delay) {
    std::error_code ec;
    Timeout t = new_timeout(std::forward<F>(task), delay, ec);
    if (ec) throw TimerError(ec);
    return t;
  }

  /// As above, but reports failure in `ec` (and returns an empty Timeout)
  /// instead of throwing; only std::bad_alloc from wrapping a large callable
  /// can escape.
  template <class F>
  Timeout new_timeout(F&& task, std::chrono::nanoseconds delay, std::error_code& ec) {
    static_assert(!std::is_same_v<std::decay_t<F>, Timeout>, "a Timeout is not a task");
    if constexpr (std::is_convertible_v<F, std::shared_ptr<TimerTask>> &&
                  !std::is_same_v<std::decay_t<F>, std::shared_ptr<TimerTask>>) {
      return schedule(detail::make_task_box(std::shared_ptr<TimerTask>(std::forward<F>(task))), delay, ec);
    } else {
      return schedule(detail::make_task_box(std::forward<F>(task)), delay, ec);
    }
  }

  /// Stops the timer: releases its worker thread and returns the timeouts that
  /// had neither run nor been cancelled (their tasks stay reachable through
  /// `Timeout::task()` until the timer is destroyed or they are cancelled).
  /// Later `new_timeout` calls fail with errc::timer_stopped. A second call
  /// returns an empty vector. Throws std::logic_error when called from inside
  /// one of this timer's tasks.
  virtual std::vector<Timeout> stop() = 0;

  /// True once `stop()` has been called. Thread-safe.
  virtual bool is_stopped() const noexcept = 0;

 protected:
  /// Takes ownership of `box` (destroying it on failure). Implementations must
  /// not throw.
  virtual Timeout schedule(detail::TaskBox box, std::chrono::nanoseconds delay, std::error_code& ec) noexcept = 0;

  /// Backends of the Timeout handle's methods, keyed by the handle's id and
  /// generation.
  virtual TimeoutState timeout_state(std::uint32_t id, std::uint32_t gen) const noexcept = 0;
  virtual bool cancel_timeout(std::uint32_t id, std::uint32_t gen) noexcept = 0;
  virtual std::shared_ptr<TimerTask> timeout_task(std::uint32_t id, std::uint32_t gen) const = 0;

  static Timeout make_timeout(Timer* timer, std::uint32_t id, std::uint32_t gen) noexcept {
    return Timeout(timer, id, gen);
  }

 private:
  friend class Timeout;
};

inline TimeoutState Timeout::state() const noexcept {
  return timer_ ? timer_->timeout_state(id_, gen_) : TimeoutState::empty;
}
inline bool Timeout::cancel() noexcept { return timer_ && timer_->cancel_timeout(id_, gen_); }
inline std::shared_ptr<TimerTask> Timeout::task() const { return timer_ ? timer_->timeout_task(id_, gen_) : nullptr; }

}  // namespace wheelrpc::timer
