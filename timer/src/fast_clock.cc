#include "fast_clock.h"

#include <wheelrpc/timer/clock.h>

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
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if WHEELRPC_HAVE_TSC

// Re-anchor after this many cycles (~0.7 ms at 3 GHz). Within a window the
// error is at most window * rate error. Rates are measured over at least
// kRateCycles (~5 ms) between anchors whose reads took at most kMaxReadCycles,
// so to ~1e-3; NTP slews the steady clock by at most 5e-4. The window error thus
// stays under a microsecond, well inside kMarginNs.
constexpr std::uint64_t kWindowCycles = std::uint64_t{1} << 21;
constexpr std::uint64_t kRateCycles = std::uint64_t{1} << 24;
// Rate intervals longer than this (~1.4 s) are restarted, not measured: a long
// gap may hide a suspend or a migration.
constexpr std::uint64_t kMaxRateCycles = std::uint64_t{1} << 32;
// An anchor read that took longer than this (a preemption) is retried.
constexpr std::uint64_t kMaxReadCycles = std::uint64_t{1} << 14;

bool kernel_trusts_tsc() {
  std::ifstream src("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string clocksource;
  src >> clocksource;
  if (clocksource != "tsc") return false;
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
    }
  }
  return false;
}

std::atomic<bool> g_disabled{!kernel_trusts_tsc()};
std::atomic<double> g_ns_per_cycle{0.0};

struct Anchor {
  std::uint64_t tsc = 0;  // the extrapolation anchor
  std::int64_t ns = 0;
  std::uint64_t rate_tsc = 0;  // where the running rate measurement started
  std::int64_t rate_ns = 0;
  double ns_per_cycle = 0.0;
};
thread_local Anchor t_anchor;

[[gnu::noinline]] std::int64_t reanchor(Anchor& a) noexcept {
  // The steady reading is taken after `tsc`, so at `tsc` true time was at most
  // `ns`: extrapolating from (tsc, ns) errs ahead, never behind.
  std::uint64_t tsc = 0;
  std::int64_t ns = 0;
  bool clean = false;
  for (int attempt = 0; attempt < 4 && !clean; ++attempt) {
    tsc = __rdtsc();
    ns = steady_ns();
    clean = __rdtsc() - tsc <= kMaxReadCycles;
  }
  if (!clean) return ns;  // preempted every time: use the exact reading, no anchor
  if (a.rate_tsc == 0 || tsc < a.rate_tsc || tsc - a.rate_tsc > kMaxRateCycles) {
    a.rate_tsc = tsc;
    a.rate_ns = ns;
  } else if (tsc - a.rate_tsc >= kRateCycles) {
    const double rate = static_cast<double>(ns - a.rate_ns) / static_cast<double>(tsc - a.rate_tsc);
    const double known = a.ns_per_cycle != 0.0 ? a.ns_per_cycle : g_ns_per_cycle.load(std::memory_order_relaxed);
    if (!(rate > 0.01 && rate < 100.0) || (known != 0.0 && std::fabs(rate - known) > known * 1e-2)) {
      // A TSC that disagrees with the steady clock by 1 %: stop trusting it.
      g_disabled.store(true, std::memory_order_relaxed);
      return ns;
    }
    a.ns_per_cycle = rate;
    g_ns_per_cycle.store(rate, std::memory_order_relaxed);
    a.rate_tsc = tsc;
    a.rate_ns = ns;
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
      return a.ns + static_cast<std::int64_t>(static_cast<double>(cycles) * a.ns_per_cycle) + kMarginNs;
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

namespace wheelrpc::timer {

std::chrono::steady_clock::time_point fast_steady_now() noexcept {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(detail::FastClock::now_ns()));
}

}  // namespace wheelrpc::timer
