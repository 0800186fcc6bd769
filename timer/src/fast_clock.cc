#include "fast_clock.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#if defined(__x86_64__) && defined(__linux__)
#include <x86intrin.h>
#define WHEELRPC_HAVE_TSC 1
#endif

namespace wheelrpc::timer::detail {
namespace {

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if WHEELRPC_HAVE_TSC

// Re-anchor after this many cycles (~0.7 ms at 3 GHz). Within a window the
// error is at most window * rate error; rates are measured over half a window
// or more, to ~1e-4, and NTP slews the steady clock by at most 5e-4, so the
// error stays well inside kMarginNs.
constexpr std::uint64_t kWindowCycles = std::uint64_t{1} << 21;
// Intervals longer than this (~20 ms) re-anchor without measuring a rate.
constexpr std::uint64_t kMaxRateCycles = std::uint64_t{1} << 26;

bool kernel_trusts_tsc() {
  std::ifstream src("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string clocksource;
  src >> clocksource;
  if (clocksource != "tsc") return false;
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
  return false;
}

std::atomic<bool> g_disabled{!kernel_trusts_tsc()};
std::atomic<double> g_ns_per_cycle{0.0};

struct Anchor {
  std::uint64_t tsc = 0;
  std::int64_t ns = 0;
  double ns_per_cycle = 0.0;
};
thread_local Anchor t_anchor;

[[gnu::noinline]] std::int64_t reanchor(Anchor& a) noexcept {
  const std::uint64_t t0 = __rdtsc();
  const std::int64_t ns = steady_ns();
  const std::uint64_t t1 = __rdtsc();
  const std::uint64_t tsc = t0 + (t1 - t0) / 2;
  if (a.tsc != 0 && tsc > a.tsc) {
    const std::uint64_t cycles = tsc - a.tsc;
    if (cycles < kWindowCycles / 2 && a.ns_per_cycle == 0.0) {
      return ns;  // keep the first anchor until a rate can be measured from it
    }
    if (cycles >= kWindowCycles / 2 && cycles <= kMaxRateCycles) {
      const double rate = static_cast<double>(ns - a.ns) / static_cast<double>(cycles);
      const double known = a.ns_per_cycle != 0.0 ? a.ns_per_cycle
                                                 : g_ns_per_cycle.load(std::memory_order_relaxed);
      if (!(rate > 0.01 && rate < 100.0) ||
          (known != 0.0 && std::fabs(rate - known) > known * 1e-2)) {
        // A TSC that disagrees with the steady clock by 1 %: stop trusting it.
        g_disabled.store(true, std::memory_order_relaxed);
        return ns;
      }
      a.ns_per_cycle = rate;
      g_ns_per_cycle.store(rate, std::memory_order_relaxed);
    }
  }
  if (a.ns_per_cycle == 0.0) a.ns_per_cycle = g_ns_per_cycle.load(std::memory_order_relaxed);
  a.tsc = tsc;
  a.ns = ns;
  return ns + FastClock::kMarginNs;
}

#endif

}  // namespace

std::int64_t FastClock::now_ns() noexcept {
#if WHEELRPC_HAVE_TSC
  if (!g_disabled.load(std::memory_order_relaxed)) {
    Anchor& a = t_anchor;
    const std::uint64_t cycles = __rdtsc() - a.tsc;  // wraps to huge if the TSC went back
    if (cycles < kWindowCycles && a.ns_per_cycle != 0.0) [[likely]] {
      return a.ns + static_cast<std::int64_t>(static_cast<double>(cycles) * a.ns_per_cycle) +
             kMarginNs;
    }
    return reanchor(a);
  }
#endif
  return steady_ns();
}

bool FastClock::uses_tsc() noexcept {
#if WHEELRPC_HAVE_TSC
  return !g_disabled.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

}  // namespace wheelrpc::timer::detail
