#pragma once
// A cheaper reading of std::chrono::steady_clock for the scheduling hot path.
//
// On x86-64 Linux whose clocksource is the invariant TSC, a reading is one
// RDTSC plus a multiply (about half the cost of clock_gettime here): each
// thread keeps an anchor (TSC, steady ns) re-taken from the real steady clock
// whenever it is more than about 0.7 ms old, and a TSC rate measured between
// anchors. The result is biased kMarginNs ahead so that it is never behind the
// steady clock: a deadline computed from it can be late by those microseconds,
// never early. Anywhere else, or if the rate ever looks wrong, it is simply
// steady_clock::now().

#include <cstdint>

namespace wheelrpc::timer::detail {

class FastClock {
 public:
  /// Upper bound of how far ahead of the steady clock a reading may be, plus
  /// the error it must absorb.
  static constexpr std::int64_t kMarginNs = 2000;

  /// Steady-clock nanoseconds since its epoch; >= steady_clock::now() at the
  /// call. Thread-safe.
  static std::int64_t now_ns() noexcept;

  /// True when readings come from the TSC.
  static bool uses_tsc() noexcept;
};

}  // namespace wheelrpc::timer::detail
