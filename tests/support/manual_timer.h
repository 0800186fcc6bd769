#pragma once
// A HashedWheelTimer driven by a ManualClock: no worker thread, time moves only
// when the test says so, and run_expired() runs what is due on the test thread.

#include <chrono>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

namespace wheelrpc::test {

struct ManualTimer {
  explicit ManualTimer(std::chrono::nanoseconds tick = std::chrono::milliseconds(1), std::size_t ticks_per_wheel = 512,
                       std::size_t max_pending = 0, timer::TaskExecutor executor = {})
      : timer(options(clock, tick, ticks_per_wheel, max_pending, std::move(executor))) {}

  /// Moves time forward by `d` and runs what became due; returns how many expired.
  std::size_t advance(std::chrono::nanoseconds d) {
    clock.advance(d);
    return timer.run_expired();
  }

  timer::ManualClock clock;
  timer::HashedWheelTimer timer;

 private:
  static timer::HashedWheelTimerOptions options(const timer::ManualClock& c, std::chrono::nanoseconds tick,
                                                std::size_t tpw, std::size_t max_pending,
                                                timer::TaskExecutor executor) {
    timer::HashedWheelTimerOptions o;
    o.clock = &c;
    o.manual_drive = true;
    o.tick_duration = tick;
    o.ticks_per_wheel = tpw;
    o.max_pending_timeouts = max_pending;
    o.executor = std::move(executor);
    o.shards = 1;
    return o;
  }
};

}  // namespace wheelrpc::test
