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

#include "support/latency_histogram.h"  // examples/support (-I <repo>/examples)

namespace peers {

// ---- clocks and /proc -------------------------------------------------------------

/// std::chrono::steady_clock (CLOCK_MONOTONIC) in ns since its epoch.
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// user + sys CPU seconds of this whole process, every thread (getrusage).
inline double process_cpu_s() noexcept {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto sec = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec;
  const auto usec = usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
  return static_cast<double>(sec) + static_cast<double>(usec) * 1e-6;
}

/// CPU seconds of one thread of this process (its CPU-time clock, ns
/// resolution), or -1 if it cannot be read.
inline double thread_cpu_s(pthread_t thread) noexcept {
  clockid_t clock{};
  timespec ts{};
  if (::pthread_getcpuclockid(thread, &clock) != 0 || ::clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// The whole of a small file (a /proc one); empty when it cannot be read.
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The number after "Key:" in a /proc status file, or -1 when absent.
inline long status_field(const std::string& path, std::string_view key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 || line[key.size()] != ':') continue;
    std::size_t at = key.size() + 1;
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
    long value = -1;
    std::from_chars(line.data() + at, line.data() + line.size(), value);
    return value;
  }
  return -1;
}

/// Resident set size of this process in bytes (VmRSS), or -1.
inline long rss_bytes() {
  const long kib = status_field("/proc/self/status", "VmRSS");
  return kib < 0 ? -1 : kib * 1024;
}

/// Voluntary context switches of thread `tid` of this process, or, with
/// tid 0, summed over all its threads (/proc/self/status alone counts the
/// main thread only).
inline long voluntary_ctxsw(pid_t tid = 0) {
  constexpr std::string_view kKey = "voluntary_ctxt_switches";
  if (tid != 0) return status_field("/proc/self/task/" + std::to_string(tid) + "/status", kKey);
  long total = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    total += std::max(0L, status_field(task.path().string() + "/status", kKey));
  }
  return total;
}

/// utime + stime of another process in seconds (clock-tick resolution), from
/// /proc/PID/stat; -1 when it is gone or a zombie. How a client measures the
/// server it loads.
inline double other_process_cpu_s(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto comm_end = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (comm_end == std::string::npos) return -1;
  std::vector<std::string_view> fields;  // fields[0] is field 3 of proc(5), the state
  std::string_view rest(stat);
  rest.remove_prefix(std::min(rest.size(), comm_end + 2));
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    fields.push_back(rest.substr(0, space));
    rest.remove_prefix(space == std::string_view::npos ? rest.size() : space + 1);
  }
  if (fields.size() < 13 || fields[0] == "Z") return -1;
  unsigned long long utime = 0, stime = 0;  // fields 14 and 15, in clock ticks
  std::from_chars(fields[11].data(), fields[11].data() + fields[11].size(), utime);
  std::from_chars(fields[12].data(), fields[12].data() + fields[12].size(), stime);
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// ---- numbers ----------------------------------------------------------------------

/// splitmix64 with seed 42 unless told otherwise: the generator every timer
/// benchmark draws its delays from (wheelrpc's, Asio's and Netty's alike).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed = 42) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  /// Uniform in [lo, hi], both included (modulo the range: the bias is
  /// negligible, and identical on every side).
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) noexcept {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::uint64_t state_;
};

/// Nearest-rank quantile of an ascending vector; T{} when empty.
template <class T>
T quantile_sorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return T{};
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

/// Latencies in ns: log-linear, 128 sub-buckets per power of two (< 0.8 %
/// error), no allocation per record.
using Histogram = wheelrpc::support::LatencyHistogram;

// ---- output -----------------------------------------------------------------------

/// One JSON object written as one line on stdout, members in the order they
/// are added; a double gets a fixed number of decimals (3 unless told), and
/// null when it is not finite.
class JsonLine {
 public:
  JsonLine& str(std::string_view key, std::string_view value) {
    name(key);
    quoted(value);
    return *this;
  }
  JsonLine& num(std::string_view key, double value, int decimals = 3) {
    name(key);
    if (!std::isfinite(value)) {
      text_ += "null";
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
      text_ += buf;
    }
    return *this;
  }
  JsonLine& num(std::string_view key, long long value) { return integer(key, std::to_string(value)); }
  JsonLine& num(std::string_view key, unsigned long long value) { return integer(key, std::to_string(value)); }
  JsonLine& num(std::string_view key, long value) { return num(key, static_cast<long long>(value)); }
  JsonLine& num(std::string_view key, unsigned long value) { return num(key, static_cast<unsigned long long>(value)); }
  JsonLine& num(std::string_view key, int value) { return num(key, static_cast<long long>(value)); }
  JsonLine& num(std::string_view key, unsigned value) { return num(key, static_cast<unsigned long long>(value)); }

  /// Prints the object and a newline, and flushes (a run script may be
  /// reading the pipe while we are still alive).
  void print() const {
    std::printf("%s}\n", text_.c_str());
    std::fflush(stdout);
  }

 private:
  JsonLine& integer(std::string_view key, const std::string& digits) {
    name(key);
    text_ += digits;
    return *this;
  }
  void name(std::string_view key) {
    if (text_.size() > 1) text_ += ',';
    quoted(key);
    text_ += ':';
  }
  void quoted(std::string_view s) {
    text_ += '"';
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        text_ += '\\';
        text_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        text_ += buf;
      } else {
        text_ += c;
      }
    }
    text_ += '"';
  }

  std::string text_ = "{";
};

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

  Histogram latency;          ///< ns, successful calls completed inside the window
  std::uint64_t errors = 0;   ///< failed calls over the whole run (warm-up and drain too)
  double client_cpu_s = 0;    ///< this process, over the window
  double server_cpu_s = -1;   ///< the server process, over the window; -1: unknown

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
    line.str("system", system).str("version", version).str("workload", "echo")
        .num("concurrency", concurrency).num("payload_bytes", payload)
        .num("warmup_s", warmup_s, 1).num("duration_s", duration_s, 1)
        .num("calls", static_cast<unsigned long long>(calls))
        .num("calls_per_s", static_cast<double>(calls) / duration_s, 0)
        .num("p50_us", us(latency.quantile(0.50)), 1).num("p99_us", us(latency.quantile(0.99)), 1)
        .num("p999_us", us(latency.quantile(0.999)), 1).num("max_us", us(static_cast<double>(latency.max())), 1)
        .num("errors", static_cast<unsigned long long>(errors))
        .num("client_cpu_s", client_cpu_s, 2).num("server_cpu_s", server_cpu_s, 2)
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
