#pragma once
/// Helpers for wheelrpc's benchmarks (Linux only): clocks, /proc readers,
/// splitmix64, exact quantiles, and (from examples/support) the latency
/// histogram and the one-line JSON writer.
///
/// They measure the same things, the same way, as the peer benchmarks we are
/// compared with (bench/peers/peer_util.h), so numbers can be put side by side.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "support/json_line.h"
#include "support/latency_histogram.h"

namespace wheelrpc::bench {

/// Monotonic clock (std::chrono::steady_clock, i.e. CLOCK_MONOTONIC), in ns.
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Nanoseconds since the steady clock's epoch of a steady_clock time point.
inline std::int64_t to_ns(std::chrono::steady_clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// CPU seconds (user + sys) of the whole process, all threads (getrusage).
inline double process_cpu_s() noexcept {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/// User and kernel CPU seconds of the whole process, apart (getrusage).
struct CpuSplit {
  double user_s = -1;
  double sys_s = -1;
};
inline CpuSplit process_cpu_split() noexcept {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return {static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) * 1e-6,
          static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) * 1e-6};
}

/// Whole content of a (small, /proc) file; empty if it cannot be read.
inline std::string read_small_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// The number after "Key:" in a /proc status file, or -1 if absent.
inline long proc_status_field(const std::string& path, std::string_view key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ':') {
      try {
        return std::stol(line.substr(key.size() + 1));
      } catch (const std::exception&) {
        return -1;
      }
    }
  }
  return -1;
}

/// Resident set size of this process, in bytes (VmRSS).
inline long rss_bytes() {
  const long kib = proc_status_field("/proc/self/status", "VmRSS");
  return kib < 0 ? -1 : kib * 1024;
}

/// Voluntary context switches of one thread of this process (tid > 0), or
/// summed over all its threads (tid == 0): /proc/self/status alone only covers
/// the main thread, so we walk /proc/self/task.
inline long voluntary_ctxsw(pid_t tid = 0) {
  if (tid > 0) {
    return proc_status_field("/proc/self/task/" + std::to_string(tid) + "/status", "voluntary_ctxt_switches");
  }
  long sum = 0;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    sum += std::max(0L, proc_status_field(d.path().string() + "/status", "voluntary_ctxt_switches"));
  }
  return sum;
}

/// The id of the first thread of this process whose name (comm) is `name`, or 0.
inline pid_t find_thread(std::string_view name) {
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::string comm = read_small_file(d.path().string() + "/comm");
    while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
    if (comm == name) {
      try {
        return static_cast<pid_t>(std::stol(d.path().filename().string()));
      } catch (const std::exception&) {
        return 0;
      }
    }
  }
  return 0;
}

/// utime and stime in seconds (clock-tick resolution) from a /proc .../stat
/// file; both -1 if it cannot be read or the process is a zombie.
inline CpuSplit stat_cpu_split(const std::string& path) {
  const std::string s = read_small_file(path);
  const auto close = s.rfind(')');  // comm may contain spaces; fields restart after ')'
  if (close == std::string::npos) return {};
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  std::string tok;
  for (std::size_t i = close + 2; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ' ') {
      fields.push_back(tok);
      tok.clear();
    } else {
      tok += s[i];
    }
  }
  if (fields.size() < 13 || fields[0] == "Z") return {};
  try {  // utime is field 14, stime field 15
    const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return {std::stod(fields[11]) / tick, std::stod(fields[12]) / tick};
  } catch (const std::exception&) {
    return {};
  }
}

/// utime + stime in seconds (clock-tick resolution) from a /proc .../stat
/// file; -1 if it cannot be read or the process is a zombie.
inline double stat_cpu_s(const std::string& path) {
  const CpuSplit cpu = stat_cpu_split(path);
  return cpu.user_s < 0 ? -1 : cpu.user_s + cpu.sys_s;
}

/// CPU seconds of thread `tid` of this process, or -1 if it is gone.
/// Reads the thread's CPU-time clock (ns resolution; the clockid encoding is
/// the one glibc's pthread_getcpuclockid uses), falling back to utime + stime
/// from /proc/self/task/<tid>/stat (clock-tick resolution).
inline double thread_cpu_s(pid_t tid) {
  // MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED): (~tid << 3) | CPUCLOCK_PERTHREAD_MASK | SCHED.
  const auto cid = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
  timespec ts{};
  if (::clock_gettime(cid, &ts) == 0) {
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  return stat_cpu_s("/proc/self/task/" + std::to_string(tid) + "/stat");
}

/// CPU seconds (utime + stime, clock-tick resolution) of another process, from
/// /proc/PID/stat; -1 if it is gone (or a zombie). As the peers measure a server.
inline double other_process_cpu_s(pid_t pid) { return stat_cpu_s("/proc/" + std::to_string(pid) + "/stat"); }

/// Latency histogram (log-linear, 128 sub-buckets per power of two), shared
/// with the load generator and with the peers (bench/peers): examples/support.
using LatencyHistogram = support::LatencyHistogram;

/// splitmix64: the tiny deterministic generator the peer benchmarks use
/// (seed 42 there), so every system draws the same delays.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed = 42) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  /// Uniform in [lo, hi] (both included), exactly as the peers compute it.
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) noexcept {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::uint64_t state_;
};

/// Exact quantile (nearest rank) of an ascending-sorted vector; T{} if empty.
template <class T>
T quantile_sorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return T{};
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1];
}

/// One JSON object printed as one line on stdout (flushed), written by
/// Boost.JSON; doubles with a fixed number of decimals (3 by default), like
/// the peers. Shared with the load generator: examples/support.
using JsonLine = support::JsonLine;

/// Collects what a benchmark's self-check found wrong; `text()` is the JSON
/// "check" field: "ok", or "FAILED: <reason>; <reason>...".
class Check {
 public:
  /// Records `what` as a failure unless `condition` holds.
  void expect(bool condition, std::string_view what) {
    if (condition) return;
    failures_ += failures_.empty() ? "FAILED: " : "; ";
    failures_ += what;
  }
  bool ok() const noexcept { return failures_.empty(); }
  std::string text() const { return ok() ? "ok" : failures_; }

 private:
  std::string failures_;
};

}  // namespace wheelrpc::bench
