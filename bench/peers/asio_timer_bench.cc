/// The timer workloads of bench/timer_bench.cc on boost::asio::steady_timer
/// (system "boost_asio_steady_timer" in bench/compare_timer.sh): one timer
/// object per timeout on one io_context. Same command line, JSON fields,
/// splitmix64 delays (seed 42) and measurement as wheelrpc's timer_bench.
/// One JSON line per run on stdout; exit status 0 when the run's self-check
/// (field "check") passed, 1 when it failed, 2 on a usage error.
///
///   asio_timer_bench churn P K      pre-fill P timeouts, then K x (schedule one, cancel the oldest)
///   asio_timer_bench accuracy N     N timeouts 10-1000 ms away: how late each one runs
///   asio_timer_bench idle SECONDS   one timeout 1 h away: CPU and wake-ups while nothing is due
///
/// churn: the main thread owns the io_context and does everything itself:
/// schedule = expires_after + async_wait on a free timer of a ring of P + 1,
/// cancel = cancel() on the oldest; every 1000 pairs it runs poll(), which
/// runs the aborted waits' handlers (as a program would, to free their
/// memory). `ns_per_pair` includes the polls. The ring is allocated inside
/// the RSS window, so `bytes_per_pending` counts the steady_timer objects
/// (as wheelrpc's figure counts its 16-byte handles).
///
/// accuracy: io_context::run() on its own thread; the main thread schedules
/// N distinct, preallocated timers with expires_at(now + delay) as fast as it
/// can (distinct objects, so that is thread-safe). Lateness = the steady
/// clock in the handler - the intended deadline; `cpu_s` covers the first
/// schedule to the last handler.
///
/// idle: io_context::run() on its own thread, one wait 1 h away; after 0.5 s
/// to settle, `seconds` of nothing: the CPU and voluntary context switches of
/// the process and of that thread.

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/version.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include "peer_util.h"

namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using std::chrono::microseconds;

constexpr std::string_view kSystem = "boost_asio_steady_timer";

std::string version() {
  return std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000) + "." +
         std::to_string(BOOST_VERSION % 100);
}

peers::JsonLine result_line(std::string_view workload) {
  peers::JsonLine line;
  line.str("system", kSystem).str("version", version()).str("workload", workload);
  return line;
}

// ---- churn ------------------------------------------------------------------------

/// What the churn handlers count; the handler holds one pointer to it.
struct ChurnCounts {
  std::uint64_t aborted = 0;
  std::uint64_t fired = 0;
};

/// A churn delay: uniform in [30 s, 60 s], µs granularity, as timer_bench.
microseconds churn_delay(peers::SplitMix64& rng) { return microseconds(rng.uniform(30'000'000, 60'000'000)); }

int churn(std::size_t p, std::size_t k) {
  peers::SplitMix64 rng(42);
  asio::io_context io(1);
  ChurnCounts counts;
  const auto handler = [c = &counts](const error_code& ec) {
    if (ec == asio::error::operation_aborted) {
      ++c->aborted;
    } else {
      ++c->fired;
    }
  };
  const auto schedule = [&](asio::steady_timer& timer) {
    timer.expires_after(churn_delay(rng));
    timer.async_wait(handler);
  };

  const long rss0 = peers::rss_bytes();
  std::vector<asio::steady_timer> ring;
  ring.reserve(p + 1);
  for (std::size_t i = 0; i <= p; ++i) ring.emplace_back(io);
  for (std::size_t i = 0; i < p; ++i) schedule(ring[i]);  // slot p stays free
  const long rss1 = peers::rss_bytes();

  std::size_t oldest = 0;  // the free slot is the one before it (cyclically)
  std::uint64_t cancelled = 0;
  const double c0 = peers::process_cpu_s();
  const std::int64_t t0 = peers::now_ns();
  for (std::size_t i = 0; i < k; ++i) {
    schedule(ring[oldest == 0 ? p : oldest - 1]);
    cancelled += ring[oldest].cancel();  // the number of waits it cancelled: 1
    oldest = oldest == p ? 0 : oldest + 1;
    if (i % 1000 == 999) io.poll();
  }
  io.poll();
  const std::int64_t t1 = peers::now_ns();
  const double c1 = peers::process_cpu_s();
  const ChurnCounts in_loop = counts;

  // Whatever is still pending must be exactly P waits; each completes once.
  std::size_t pending_at_end = 0;
  for (asio::steady_timer& timer : ring) pending_at_end += timer.cancel();
  io.poll();

  std::string check;
  const auto expect = [&check](bool ok, std::string_view what) {
    if (ok) return;
    check += check.empty() ? "FAILED: " : "; ";
    check += what;
  };
  expect(cancelled == k, "cancelled != iterations");
  expect(in_loop.fired == 0 && counts.fired == 0, "a timeout fired");
  expect(in_loop.aborted == k, "aborted handlers run != iterations");
  expect(pending_at_end == p, "pending at the end != P");
  expect(counts.aborted == k + p, "aborted handlers in all != K + P");

  const double ns = static_cast<double>(t1 - t0) / static_cast<double>(k);
  result_line("churn")
      .str("mode", "producer owns the io_context, poll() every 1000 iterations")
      .num("pending", p)
      .num("iterations", k)
      .num("ns_per_pair", ns, 1)
      .num("pairs_per_s", 1e9 / ns, 0)
      .num("cpu_s", c1 - c0)
      .num("cpu_ns_per_pair", (c1 - c0) * 1e9 / static_cast<double>(k), 1)
      .num("bytes_per_pending", static_cast<double>(rss1 - rss0) / static_cast<double>(p), 1)
      .num("sizeof_steady_timer", sizeof(asio::steady_timer))
      .num("cancelled", cancelled)
      .num("aborted_handlers_run", in_loop.aborted)
      .num("fired", in_loop.fired)
      .num("pending_at_end", pending_at_end)
      .str("check", check.empty() ? "ok" : check)
      .print();
  return check.empty() ? 0 : 1;
}

// ---- accuracy ---------------------------------------------------------------------

int accuracy(std::size_t n) {
  peers::SplitMix64 rng(42);
  asio::io_context io(1);
  auto work = asio::make_work_guard(io);
  std::vector<asio::steady_timer> timers;
  timers.reserve(n);
  for (std::size_t i = 0; i < n; ++i) timers.emplace_back(io);
  std::vector<std::int64_t> deadline_ns(n, 0);
  std::vector<std::int64_t> ran_at_ns(n, -1);
  std::uint64_t fired = 0;  // the io thread's until join()
  std::uint64_t errors = 0;
  std::thread io_thread([&io] { io.run(); });

  const double c0 = peers::process_cpu_s();
  const std::int64_t t0 = peers::now_ns();
  for (std::size_t i = 0; i < n; ++i) {
    const auto due = std::chrono::steady_clock::now() + microseconds(rng.uniform(10'000, 1'000'000));
    deadline_ns[i] = std::chrono::duration_cast<std::chrono::nanoseconds>(due.time_since_epoch()).count();
    timers[i].expires_at(due);
    timers[i].async_wait([&, i](const error_code& ec) {
      ran_at_ns[i] = peers::now_ns();
      ++(ec ? errors : fired);
    });
  }
  const std::int64_t t_scheduled = peers::now_ns();
  work.reset();
  io_thread.join();  // run() returns once the last handler has run
  const std::int64_t t1 = peers::now_ns();
  const double c1 = peers::process_cpu_s();

  std::vector<std::int64_t> late;
  late.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (ran_at_ns[i] >= 0) late.push_back(ran_at_ns[i] - deadline_ns[i]);
  }
  std::sort(late.begin(), late.end());
  const auto ms = [](std::int64_t ns) { return static_cast<double>(ns) / 1e6; };
  const std::int64_t min_late = late.empty() ? 0 : late.front();
  const bool ok = fired == n && errors == 0 && late.size() == n && min_late >= 0;

  result_line("accuracy")
      .str("mode", "io_context on its own thread, scheduled from the main thread")
      .num("timeouts", n)
      .num("fired", fired)
      .num("errors", errors)
      .num("schedule_s", static_cast<double>(t_scheduled - t0) / 1e9)
      .num("wall_s", static_cast<double>(t1 - t0) / 1e9)
      .num("min_late_ms", ms(min_late), 3)
      .num("p50_late_ms", ms(peers::quantile_sorted(late, 0.50)), 3)
      .num("p99_late_ms", ms(peers::quantile_sorted(late, 0.99)), 3)
      .num("p999_late_ms", ms(peers::quantile_sorted(late, 0.999)), 3)
      .num("max_late_ms", ms(late.empty() ? 0 : late.back()), 3)
      .num("cpu_s", c1 - c0)
      .str("check", ok ? "ok" : "FAILED: not all fired, an error, or one fired early")
      .print();
  return ok ? 0 : 1;
}

// ---- idle -------------------------------------------------------------------------

int idle(double seconds) {
  asio::io_context io(1);
  asio::steady_timer timer(io, std::chrono::hours(1));
  std::uint64_t fired = 0;
  std::uint64_t aborted = 0;
  timer.async_wait([&](const error_code& ec) { ++(ec == asio::error::operation_aborted ? aborted : fired); });
  std::atomic<pid_t> tid{0};
  std::thread io_thread([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    io.run();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // settle

  const pthread_t handle = io_thread.native_handle();
  const double c0 = peers::process_cpu_s();
  const double tc0 = peers::thread_cpu_s(handle);
  const long v0 = peers::voluntary_ctxsw();
  const long tv0 = peers::voluntary_ctxsw(tid);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double c1 = peers::process_cpu_s();
  const double tc1 = peers::thread_cpu_s(handle);
  const long v1 = peers::voluntary_ctxsw();
  const long tv1 = peers::voluntary_ctxsw(tid);

  asio::post(io, [&timer] { timer.cancel(); });
  io_thread.join();  // the aborted handler has run: nothing left
  const bool ok = fired == 0 && aborted == 1;

  result_line("idle")
      .num("seconds", seconds, 1)
      .num("cpu_s", c1 - c0, 6)
      .num("vol_ctxsw", v1 - v0)
      .num("timer_thread_cpu_s", tc1 - tc0, 6)
      .num("timer_thread_vol_ctxsw", tv1 - tv0)
      .num("fired", fired)
      .num("aborted", aborted)
      .str("check", ok ? "ok" : "FAILED: the timeout fired or was not cancelled")
      .print();
  return ok ? 0 : 1;
}

// ---- command line -----------------------------------------------------------------

/// A count > 0, or 0 when `s` is not one.
std::size_t count_arg(std::string_view s) {
  std::size_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() ? v : 0;
}

/// Seconds in (0, 3600], or 0 when `s` is not that.
double seconds_arg(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v > 0 && v <= 3600 ? v : 0;
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s churn P K | accuracy N | idle SECONDS\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view workload = argc > 1 ? argv[1] : "";
  try {
    if (workload == "churn" && argc == 4) {
      const std::size_t p = count_arg(argv[2]);
      const std::size_t k = count_arg(argv[3]);
      return p && k ? churn(p, k) : usage(argv[0]);
    }
    if (workload == "accuracy" && argc == 3) {
      const std::size_t n = count_arg(argv[2]);
      return n ? accuracy(n) : usage(argv[0]);
    }
    if (workload == "idle" && argc == 3) {
      const double secs = seconds_arg(argv[2]);
      return secs > 0 ? idle(secs) : usage(argv[0]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "asio_timer_bench %s: %s\n", argv[1], e.what());
    return 1;
  }
  return usage(argv[0]);
}
