#pragma once
/// What the C++ peer benchmarks of bench/peers share (Linux only): clocks,
/// /proc readers, the splitmix64 delay generator, the command line, the
/// one-line JSON output, and the result of one closed-loop echo run.
///
/// Header-only, so that each peer is one g++ command (bench/peers/build.sh)
/// and needs nothing of wheelrpc but one header: the latency histogram of
/// examples/support, the very class wheelrpc's rpc_bench records into, so
/// both sides compute their quantiles the same way. Everything else is
/// measured as bench/bench_util.h measures it for wheelrpc: the same clocks,
/// the same /proc fields, the same delay generator.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"  // bench/ (-I <repo>/bench), with examples/support (-I <repo>/examples)

namespace peers {

// What wheelrpc's own benchmarks measure with: the same /proc readers, the
// same generator and quantiles, the same JSON line, so the numbers side by
// side are taken the same way.
using Histogram = wheelrpc::bench::LatencyHistogram;
using wheelrpc::bench::Check;
using wheelrpc::bench::JsonLine;
using wheelrpc::bench::now_ns;
using wheelrpc::bench::other_process_cpu_s;
using wheelrpc::bench::process_cpu_s;
using wheelrpc::bench::quantile_sorted;
using wheelrpc::bench::rss_bytes;
using wheelrpc::bench::SplitMix64;
using wheelrpc::bench::voluntary_ctxsw;
inline long status_field(const std::string& path, std::string_view key) {
  return wheelrpc::bench::proc_status_field(path, key);
}

// ---- clocks and /proc -------------------------------------------------------------

/// CPU seconds of one thread of this process (its CPU-time clock, ns
/// resolution), or -1 if it cannot be read.
inline double thread_cpu_s(pthread_t thread) noexcept {
  clockid_t clock{};
  timespec ts{};
  if (::pthread_getcpuclockid(thread, &clock) != 0 || ::clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---- command line -----------------------------------------------------------------

/// A bad command line; main reports it with the usage text and exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The flags after the mode word (argv[2] on): `--name value`, or a bare
/// `--name` for the names given as booleans. Unknown names are usage errors.
class Flags {
 public:
  Flags(int argc, char** argv, std::vector<std::string_view> known, std::vector<std::string_view> booleans = {}) {
    for (int i = 2; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg.size() < 3 || arg.substr(0, 2) != "--") throw UsageError("unexpected argument " + std::string(arg));
      const std::string_view name = arg.substr(2);
      if (std::find(known.begin(), known.end(), name) == known.end() &&
          std::find(booleans.begin(), booleans.end(), name) == booleans.end()) {
        throw UsageError("unknown flag " + std::string(arg));
      }
      if (std::find(booleans.begin(), booleans.end(), name) != booleans.end()) {
        values_.emplace_back(name, "");
      } else if (i + 1 < argc) {
        values_.emplace_back(name, argv[++i]);
      } else {
        throw UsageError("missing value after " + std::string(arg));
      }
    }
  }

  bool has(std::string_view name) const { return find(name) != nullptr; }

  std::string str(std::string_view name, std::string_view fallback) const {
    const std::string* v = find(name);
    return v ? *v : std::string(fallback);
  }

  /// An integer in [lo, hi]; `fallback` when the flag is absent.
  long long integer(std::string_view name, long long fallback, long long lo, long long hi) const {
    const std::string* v = find(name);
    if (!v) return fallback;
    long long value = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), value);
    if (ec != std::errc() || end != v->data() + v->size() || value < lo || value > hi) {
      throw UsageError("--" + std::string(name) + " takes an integer in " + std::to_string(lo) + ".." +
                       std::to_string(hi));
    }
    return value;
  }

  /// A number of seconds, >= 0 (fractions allowed); `fallback` when absent.
  double seconds(std::string_view name, double fallback) const {
    const std::string* v = find(name);
    if (!v) return fallback;
    double value = -1;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), value);
    if (ec != std::errc() || end != v->data() + v->size() || !(value >= 0) || value > 1e6) {
      throw UsageError("--" + std::string(name) + " takes a number of seconds >= 0");
    }
    return value;
  }

 private:
  const std::string* find(std::string_view name) const {
    for (const auto& [n, v] : values_) {
      if (n == name) return &v;
    }
    return nullptr;
  }

  std::vector<std::pair<std::string, std::string>> values_;
};

// ---- servers ----------------------------------------------------------------------

/// A server's safety net: the process ends after `seconds` (0: never), even
/// when the script that started it died without killing it. Costs one
/// sleeping thread, which the server's `server_threads` counts.
inline void exit_after(double seconds) {
  if (seconds <= 0) return;
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    std::_Exit(0);
  }).detach();
}

/// Hands the port a server listens on (it binds port 0) to the script that
/// started it: written to `path` + ".tmp", then renamed, so a reader never
/// sees a partial number. Does nothing for an empty path.
inline void write_port_file(const std::string& path, unsigned port) {
  if (path.empty()) return;
  {
    std::ofstream out(path + ".tmp");
    out << port << '\n';
    if (!out.flush()) throw std::runtime_error("cannot write " + path + ".tmp");
  }
  std::filesystem::rename(path + ".tmp", path);
}

// ---- the echo workload ------------------------------------------------------------

/// One closed-loop echo run of a client (workload "echo"): its settings, what
/// it measured, and its JSON line, whose fields are those of wheelrpc's
/// rpc_bench client (bench/rpc_bench.cc), so that bench/tables.py and
/// bench/rpc_ratios.py read every system's lines alike.
struct EchoRun {
  std::string system;   ///< "boost_asio_tcp_echo", "grpc_cpp"
  std::string version;  ///< of the library measured
  int concurrency = 16;
  int payload = 64;           ///< bytes per request (and per reply)
  double warmup_s = 1;        ///< calls before the window are not measured
  double duration_s = 10;     ///< the measured window
  long long deadline_ms = 0;  ///< the per-call deadline; 0: none
  bool tls = false;
  pid_t server_pid = 0;  ///< 0: the server's CPU and threads are not reported (-1)

  Histogram latency;         ///< ns, successful calls completed inside the window
  std::uint64_t errors = 0;  ///< failed calls over the whole run (warm-up and drain too)
  double client_cpu_s = 0;   ///< this process, over the window
  double server_cpu_s = -1;  ///< the server process, over the window; -1: unknown

  /// The client's and the server's CPU seconds now; the client samples both
  /// at the window's start and end.
  std::pair<double, double> cpu_now() const {
    return {process_cpu_s(), server_pid > 0 ? other_process_cpu_s(server_pid) : -1.0};
  }
  void begin_window(std::pair<double, double> at_start) { window_start_ = at_start; }
  void end_window(std::pair<double, double> at_end) {
    client_cpu_s = at_end.first - window_start_.first;
    server_cpu_s = window_start_.second < 0 || at_end.second < 0 ? -1 : at_end.second - window_start_.second;
  }

  /// The JSON line, for the caller to add fields to (or not) and print.
  JsonLine json() const {
    const auto us = [](double ns) { return ns / 1e3; };
    const auto calls = latency.count();
    const auto per_call_ns = [calls](double cpu_s) {
      return cpu_s < 0 || calls == 0 ? -1.0 : cpu_s * 1e9 / static_cast<double>(calls);
    };
    const long threads =
        server_pid > 0 ? status_field("/proc/" + std::to_string(server_pid) + "/status", "Threads") : -1;
    JsonLine line;
    line.str("system", system)
        .str("version", version)
        .str("workload", "echo")
        .num("concurrency", concurrency)
        .num("payload_bytes", payload)
        .num("warmup_s", warmup_s, 1)
        .num("duration_s", duration_s, 1)
        .num("calls", static_cast<unsigned long long>(calls))
        .num("calls_per_s", static_cast<double>(calls) / duration_s, 0)
        .num("p50_us", us(latency.quantile(0.50)), 1)
        .num("p99_us", us(latency.quantile(0.99)), 1)
        .num("p999_us", us(latency.quantile(0.999)), 1)
        .num("max_us", us(static_cast<double>(latency.max())), 1)
        .num("errors", static_cast<unsigned long long>(errors))
        .num("client_cpu_s", client_cpu_s, 2)
        .num("server_cpu_s", server_cpu_s, 2)
        .num("server_threads", threads)
        .num("deadline_ms", deadline_ms)
        .num("client_cpu_ns_per_call", per_call_ns(client_cpu_s), 0)
        .num("server_cpu_ns_per_call", per_call_ns(server_cpu_s), 0)
        .str("tls", tls ? "on" : "off");
    return line;
  }

  /// Reads the flags every echo client takes (all but --port and --host).
  void read_flags(const Flags& flags) {
    concurrency = static_cast<int>(flags.integer("concurrency", 16, 1, 100000));
    payload = static_cast<int>(flags.integer("payload", 64, 8, 16 << 20));
    warmup_s = flags.seconds("warmup", 1);
    duration_s = flags.seconds("duration", 10);
    server_pid = static_cast<pid_t>(flags.integer("server-pid", 0, 0, 1 << 30));
    if (!(duration_s > 0)) throw UsageError("--duration must be > 0");
  }

 private:
  std::pair<double, double> window_start_{0, -1};
};

}  // namespace peers
