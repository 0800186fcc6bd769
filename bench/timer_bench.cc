/// Timer workloads against wheelrpc::timer::HashedWheelTimer, mirroring the
/// peer benchmarks bench/peers/asio_timer_bench.cc (Boost.Asio steady_timer)
/// and bench/peers/NettyTimerBench.java (Netty's HashedWheelTimer): same
/// command line, same JSON fields, same splitmix64 delays (seed 42), same
/// measurement method. One JSON object per line on stdout; exit status 0 when
/// the run's self-check passed, 1 when it failed, 2 on a usage error.
///
///   timer_bench churn P K      pre-fill P timeouts, then K x (schedule one, cancel oldest)
///   timer_bench churn_mt P K   the same with 2 producer threads on one shared timer
///   timer_bench accuracy N     N timeouts in [10 ms, 1000 ms], lateness distribution
///   timer_bench idle SECONDS   one timeout 1 h away, CPU and wakeups while idle

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/timer/timeout.h>

#include "bench_util.h"
#include "fast_clock.h"  // timer/src: what the timer reads when scheduling

namespace {

namespace wb = wheelrpc::bench;
using wheelrpc::timer::HashedWheelTimer;
using wheelrpc::timer::HashedWheelTimerOptions;
using wheelrpc::timer::Timeout;
using namespace std::chrono_literals;

#ifndef WHEELRPC_BENCH_VERSION
#define WHEELRPC_BENCH_VERSION "0.1.0"
#endif

constexpr std::string_view kSystem = "wheelrpc";
constexpr std::string_view kVersion = WHEELRPC_BENCH_VERSION;

/// Churn runs on Netty's configuration in the peer bench: 10 ms x 512.
constexpr std::chrono::milliseconds kChurnTick{10};
constexpr std::size_t kChurnWheel = 512;

/// Accuracy runs on Netty's accuracy configuration: 1 ms x 1024.
constexpr std::chrono::milliseconds kAccuracyTick{1};
constexpr std::size_t kAccuracyWheel = 1024;

/// Callables the timer stores without allocating (one trivially copyable word).
template <class F>
constexpr bool kInlineTask = wheelrpc::timer::detail::kStoredInline<F>;

long long tick_ms(const HashedWheelTimer& timer) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(timer.tick_duration()).count();
}

/// A JSON line with the fields every result starts with.
wb::JsonLine result_line(std::string_view workload) {
  wb::JsonLine line;
  line.str("system", kSystem).str("version", kVersion).str("workload", workload);
  return line;
}

/// Starts the timer's worker (it starts lazily on the first new_timeout), like
/// Netty's `timer.start()` in the peer bench, so that thread creation stays
/// out of what is measured afterwards.
void start_worker(HashedWheelTimer& timer) {
  timer.new_timeout([] {}, 1h).cancel();
}

// ---- T1 churn ---------------------------------------------------------------

/// A churn delay: uniform in [30 s, 60 s], µs granularity (as the peers).
std::chrono::microseconds churn_delay(wb::SplitMix64& rng) {
  return std::chrono::microseconds(rng.uniform(30'000'000, 60'000'000));
}

/// The churn task: counts expiries, which must not happen. Captures one
/// pointer, so the timer stores it inline, without allocation.
auto make_churn_task(std::atomic<std::uint64_t>& fired) {
  return [fired_ptr = &fired](Timeout&) noexcept { fired_ptr->fetch_add(1, std::memory_order_relaxed); };
}
using ChurnTask = decltype(make_churn_task(std::declval<std::atomic<std::uint64_t>&>()));
static_assert(kInlineTask<ChurnTask>, "the churn task must be stored inline");

/// Fills ring[0 .. size-2] with pending timeouts; the last slot stays free.
void churn_fill(HashedWheelTimer& timer, std::vector<Timeout>& ring, const ChurnTask& task, wb::SplitMix64& rng) {
  for (std::size_t i = 0; i + 1 < ring.size(); ++i) ring[i] = timer.new_timeout(task, churn_delay(rng));
}

/// K times: schedule one timeout into the free slot, cancel the oldest pending
/// one (FIFO ring of P+1 handles, as in the peers). Returns successful cancels.
std::uint64_t churn_loop(HashedWheelTimer& timer, std::vector<Timeout>& ring, const ChurnTask& task,
                         wb::SplitMix64& rng, std::size_t iterations) {
  const std::size_t p = ring.size() - 1;
  std::size_t head = 0;  // oldest pending slot; the free slot is the one before it
  std::uint64_t cancelled = 0;
  for (std::size_t k = 0; k < iterations; ++k) {
    ring[head == 0 ? p : head - 1] = timer.new_timeout(task, churn_delay(rng));
    cancelled += ring[head].cancel() ? 1 : 0;
    head = head == p ? 0 : head + 1;
  }
  return cancelled;
}

/// T1. One producer thread: new_timeout and cancel are called directly; the
/// worker only sleeps (nothing is due within the run).
int churn(std::size_t p, std::size_t k) {
  wb::SplitMix64 rng(42);
  std::atomic<std::uint64_t> fired{0};
  const ChurnTask task = make_churn_task(fired);
  HashedWheelTimer timer(kChurnTick, kChurnWheel);
  start_worker(timer);

  // The handles (16 bytes each) are allocated inside the RSS window: they are
  // per-timeout memory, as the peers' steady_timer ring is.
  const long rss0 = wb::rss_bytes();
  std::vector<Timeout> ring(p + 1);
  churn_fill(timer, ring, task, rng);
  const long rss1 = wb::rss_bytes();

  const double c0 = wb::process_cpu_s();
  const std::int64_t t0 = wb::now_ns();
  const std::uint64_t cancelled = churn_loop(timer, ring, task, rng, k);
  const std::int64_t t1 = wb::now_ns();
  const double c1 = wb::process_cpu_s();
  // Netty's measurement also counts 3 ticks after the loop (its worker applies
  // cancels once per tick); reported separately, in case our worker had work.
  std::this_thread::sleep_for(3 * kChurnTick);
  const double c2 = wb::process_cpu_s();

  const auto stats = timer.stats();
  const std::size_t wheel = timer.ticks_per_wheel();
  const std::size_t shards = timer.shard_count();
  const std::size_t pending_at_end = timer.stop().size();
  const std::uint64_t fired_count = fired.load();

  wb::Check check;
  check.expect(cancelled == k, "cancelled != iterations");
  check.expect(fired_count == 0, "a timeout fired");
  check.expect(stats.pending == p, "stats().pending != P before stop");
  check.expect(pending_at_end == p, "stop() did not return exactly P timeouts");

  const double ns = static_cast<double>(t1 - t0) / static_cast<double>(k);
  result_line("churn")
      .str("mode", "producer calls new_timeout/cancel directly")
      .num("tick_ms", tick_ms(timer))
      .num("ticks_per_wheel", wheel)
      .num("shards", shards)
      .num("pending", p)
      .num("iterations", k)
      .num("ns_per_pair", ns, 1)
      .num("pairs_per_s", 1e9 / ns, 0)
      .num("cpu_s", c1 - c0)
      .num("cpu_ns_per_pair", (c1 - c0) * 1e9 / static_cast<double>(k), 1)
      .num("cpu_ns_per_pair_3ticks", (c2 - c0) * 1e9 / static_cast<double>(k), 1)
      .num("bytes_per_pending", static_cast<double>(rss1 - rss0) / static_cast<double>(p), 1)
      .num("sizeof_timeout", sizeof(Timeout))
      .num("cancelled", cancelled)
      .num("fired", fired_count)
      .num("stats_pending", stats.pending)
      .num("pending_at_end", pending_at_end)
      .str("check", check.text())
      .print();
  return check.ok() ? 0 : 1;
}

/// T1 with two producer threads sharing one timer: each fills and churns its
/// own ring (half of P, half of K) from its own thread.
int churn_mt(std::size_t p, std::size_t k) {
  constexpr std::size_t kThreads = 2;
  struct Producer {
    std::size_t pending = 0;
    std::size_t iterations = 0;
    std::vector<Timeout> ring;
    std::uint64_t cancelled = 0;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::string error;
  };

  std::atomic<std::uint64_t> fired{0};
  const ChurnTask task = make_churn_task(fired);
  HashedWheelTimer timer(kChurnTick, kChurnWheel);
  start_worker(timer);

  std::array<Producer, kThreads> producers;
  for (std::size_t i = 0; i < kThreads; ++i) {
    producers[i].pending = p / kThreads + (i < p % kThreads ? 1 : 0);
    producers[i].iterations = k / kThreads + (i < k % kThreads ? 1 : 0);
  }

  std::latch started(kThreads);  // threads exist (their stacks are outside the RSS window)
  std::latch baseline(1);        // rss0 was read: fill
  std::latch filled(kThreads);   // both rings are full: rss1
  std::latch go(1);              // start both loops together
  std::vector<std::jthread> threads;
  threads.reserve(kThreads);
  for (std::size_t i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      Producer& me = producers[i];
      wb::SplitMix64 rng(42 + i);  // thread 0 draws the single-producer sequence
      started.count_down();
      baseline.wait();
      try {
        me.ring.resize(me.pending + 1);
        churn_fill(timer, me.ring, task, rng);
      } catch (const std::exception& e) {
        me.error = e.what();
      }
      filled.count_down();
      go.wait();
      me.start_ns = wb::now_ns();
      if (me.error.empty()) {
        try {
          me.cancelled = churn_loop(timer, me.ring, task, rng, me.iterations);
        } catch (const std::exception& e) {
          me.error = e.what();
        }
      }
      me.end_ns = wb::now_ns();
    });
  }

  started.wait();
  const long rss0 = wb::rss_bytes();
  baseline.count_down();
  filled.wait();
  const long rss1 = wb::rss_bytes();

  const double c0 = wb::process_cpu_s();
  go.count_down();
  for (auto& t : threads) t.join();
  const double c1 = wb::process_cpu_s();
  std::this_thread::sleep_for(3 * kChurnTick);
  const double c2 = wb::process_cpu_s();

  std::int64_t t0 = producers[0].start_ns;
  std::int64_t t1 = producers[0].end_ns;
  std::uint64_t cancelled = 0;
  wb::Check check;
  for (std::size_t i = 0; i < kThreads; ++i) {
    t0 = std::min(t0, producers[i].start_ns);
    t1 = std::max(t1, producers[i].end_ns);
    cancelled += producers[i].cancelled;
    check.expect(producers[i].error.empty(), "producer " + std::to_string(i) + " threw: " + producers[i].error);
  }

  const auto stats = timer.stats();
  const std::size_t wheel = timer.ticks_per_wheel();
  const std::size_t shards = timer.shard_count();
  const std::size_t pending_at_end = timer.stop().size();
  const std::uint64_t fired_count = fired.load();
  check.expect(cancelled == k, "cancelled != iterations");
  check.expect(fired_count == 0, "a timeout fired");
  check.expect(stats.pending == p, "stats().pending != P before stop");
  check.expect(pending_at_end == p, "stop() did not return exactly P timeouts");

  const double ns = static_cast<double>(t1 - t0) / static_cast<double>(k);
  result_line("churn_mt")
      .str("mode", "2 producer threads, one ring each, one shared timer")
      .num("threads", kThreads)
      .num("tick_ms", tick_ms(timer))
      .num("ticks_per_wheel", wheel)
      .num("shards", shards)
      .num("pending", p)
      .num("iterations", k)
      .num("ns_per_pair", ns, 1)
      .num("pairs_per_s", 1e9 / ns, 0)
      .num("cpu_s", c1 - c0)
      .num("cpu_ns_per_pair", (c1 - c0) * 1e9 / static_cast<double>(k), 1)
      .num("cpu_ns_per_pair_3ticks", (c2 - c0) * 1e9 / static_cast<double>(k), 1)
      .num("bytes_per_pending", static_cast<double>(rss1 - rss0) / static_cast<double>(p), 1)
      .num("sizeof_timeout", sizeof(Timeout))
      .num("cancelled", cancelled)
      .num("fired", fired_count)
      .num("stats_pending", stats.pending)
      .num("pending_at_end", pending_at_end)
      .str("check", check.text())
      .print();
  return check.ok() ? 0 : 1;
}

// ---- T2 accuracy ------------------------------------------------------------

struct AccuracyRun;

/// One timeout of the accuracy run. The task captures only a pointer to its
/// slot, so it is stored inline.
struct AccuracySlot {
  std::int64_t deadline_ns = 0;   ///< intended deadline (steady clock)
  std::int64_t fired_at_ns = -1;  ///< steady clock in the task; -1 = never ran
  AccuracyRun* run = nullptr;
};

/// Shared by all tasks: counts them; the last one wakes the main thread.
struct AccuracyRun {
  std::uint64_t expected = 0;
  std::atomic<std::uint64_t> fired{0};
  std::mutex mutex;
  std::condition_variable all_fired_cv;
  bool all_fired = false;
};

auto make_accuracy_task(AccuracySlot* slot) {
  return [slot](Timeout&) {
    slot->fired_at_ns = wb::now_ns();
    AccuracyRun& run = *slot->run;
    if (run.fired.fetch_add(1, std::memory_order_acq_rel) + 1 == run.expected) {
      const std::lock_guard lock(run.mutex);
      run.all_fired = true;
      run.all_fired_cv.notify_one();
    }
  };
}
static_assert(kInlineTask<decltype(make_accuracy_task(nullptr))>, "the accuracy task must be stored inline");

/// T2. The main thread schedules all N timeouts as fast as it can; tasks run on
/// the timer's worker and record when they ran.
int accuracy(std::size_t n) {
  wb::SplitMix64 rng(42);
  AccuracyRun run;
  run.expected = n;
  std::vector<AccuracySlot> slots(n, AccuracySlot{0, -1, &run});
  HashedWheelTimer timer(kAccuracyTick, kAccuracyWheel);  // after `slots`: destroyed first
  start_worker(timer);

  const double c0 = wb::process_cpu_s();
  const std::int64_t t0 = wb::now_ns();
  for (std::size_t i = 0; i < n; ++i) {
    const std::chrono::microseconds delay(rng.uniform(10'000, 1'000'000));
    slots[i].deadline_ns = wb::to_ns(std::chrono::steady_clock::now() + delay);
    timer.new_timeout(make_accuracy_task(&slots[i]), delay);
  }
  const std::int64_t t_sched = wb::now_ns();
  bool all_fired = false;
  {
    std::unique_lock lock(run.mutex);
    all_fired =
        run.all_fired_cv.wait_until(lock, std::chrono::steady_clock::now() + 10s, [&] { return run.all_fired; });
  }
  const std::int64_t t1 = wb::now_ns();
  const double c1 = wb::process_cpu_s();

  const auto stats = timer.stats();
  const std::size_t wheel = timer.ticks_per_wheel();
  const std::size_t unprocessed = timer.stop().size();  // joins the worker: slots are ours now
  const std::uint64_t fired = run.fired.load();

  std::vector<std::int64_t> late;
  late.reserve(n);
  for (const AccuracySlot& s : slots) {
    if (s.fired_at_ns >= 0) late.push_back(s.fired_at_ns - s.deadline_ns);
  }
  std::sort(late.begin(), late.end());
  const auto ms = [](std::int64_t ns) { return static_cast<double>(ns) / 1e6; };
  const std::int64_t min_late = late.empty() ? 0 : late.front();
  const std::int64_t max_late = late.empty() ? 0 : late.back();

  wb::Check check;
  check.expect(all_fired, "not all timeouts fired within 10 s of scheduling");
  check.expect(fired == n && late.size() == n, "fired != timeouts");
  check.expect(min_late >= 0, "a timeout fired early");

  result_line("accuracy")
      .str("mode", "tasks on the timer's worker, scheduled from main thread")
      .num("tick_ms", tick_ms(timer))
      .num("ticks_per_wheel", wheel)
      .num("timeouts", n)
      .num("fired", fired)
      .num("errors", n - std::min<std::uint64_t>(fired, n))
      .num("schedule_s", static_cast<double>(t_sched - t0) / 1e9)
      .num("wall_s", static_cast<double>(t1 - t0) / 1e9)
      .num("min_late_ms", ms(min_late), 3)
      .num("p50_late_ms", ms(wb::quantile_sorted(late, 0.50)), 3)
      .num("p99_late_ms", ms(wb::quantile_sorted(late, 0.99)), 3)
      .num("p999_late_ms", ms(wb::quantile_sorted(late, 0.999)), 3)
      .num("max_late_ms", ms(max_late), 3)
      .num("cpu_s", c1 - c0)
      .num("timer_p99_late_us", stats.lateness_quantile_us(0.99))
      .num("timer_wakeups", stats.wakeups)
      .num("unprocessed_at_stop", unprocessed)
      .str("check", check.text())
      .print();
  return check.ok() ? 0 : 1;
}

// ---- T3 idle ----------------------------------------------------------------

/// T3. One pending timeout 1 hour away on a default timer (1 ms tick): how much
/// does the timer cost while it has nothing to do?
int idle(double secs) {
  const HashedWheelTimerOptions options;  // defaults, named worker thread
  HashedWheelTimer timer(options);
  std::atomic<std::uint64_t> fired{0};
  Timeout timeout = timer.new_timeout(make_churn_task(fired), 1h);  // starts the worker
  std::this_thread::sleep_for(500ms);                               // settle

  const pid_t tid = wb::find_thread(options.thread_name.substr(0, 15));
  const auto s0 = timer.stats();
  const double c0 = wb::process_cpu_s();
  const double tc0 = tid > 0 ? wb::thread_cpu_s(tid) : -1;
  const long v0 = wb::voluntary_ctxsw();
  const long tv0 = tid > 0 ? wb::voluntary_ctxsw(tid) : -1;
  std::this_thread::sleep_for(std::chrono::duration<double>(secs));
  const double c1 = wb::process_cpu_s();
  const double tc1 = tid > 0 ? wb::thread_cpu_s(tid) : -1;
  const long v1 = wb::voluntary_ctxsw();
  const long tv1 = tid > 0 ? wb::voluntary_ctxsw(tid) : -1;
  const auto s1 = timer.stats();

  const bool cancelled = timeout.cancel();
  const std::size_t wheel = timer.ticks_per_wheel();
  timer.stop();
  const std::uint64_t fired_count = fired.load();

  wb::Check check;
  check.expect(tid > 0, "worker thread '" + options.thread_name + "' not found");
  check.expect(fired_count == 0, "the timeout fired");
  check.expect(cancelled, "cancel() returned false");

  result_line("idle")
      .num("tick_ms", tick_ms(timer))
      .num("ticks_per_wheel", wheel)
      .num("seconds", secs, 1)
      .num("cpu_s", c1 - c0, 6)
      .num("vol_ctxsw", v1 - v0)
      .num("timer_thread_cpu_s", tid > 0 ? tc1 - tc0 : -1.0, 6)
      .num("timer_thread_vol_ctxsw", tid > 0 ? tv1 - tv0 : -1L)
      .num("wakeups", s1.wakeups - s0.wakeups)
      .num("fired", fired_count)
      .num("cancelled", cancelled ? 1 : 0)
      .str("check", check.text())
      .print();
  return check.ok() ? 0 : 1;
}

// ---- command line -----------------------------------------------------------

/// A positive integer argument, or nothing if `s` is not one.
std::optional<std::size_t> parse_count(std::string_view s) {
  std::size_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v == 0) return std::nullopt;
  return v;
}

/// A positive number of seconds, or nothing.
std::optional<double> parse_seconds(const char* s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != std::string_view(s).size() || !(v > 0) || v > 3600) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// What the churn loop's floor is made of: the cost of one reading of each
/// clock, and of the benchmark's delay generator, per call (N calls each).
int clock_cost(std::size_t n) {
  wb::SplitMix64 rng(42);
  std::int64_t sink = 0;
  auto per_call = [n](auto&& body) {
    const std::int64_t t0 = wb::now_ns();
    for (std::size_t i = 0; i < n; ++i) body();
    return static_cast<double>(wb::now_ns() - t0) / static_cast<double>(n);
  };
  const double rng_ns = per_call([&] { sink += churn_delay(rng).count(); });
  const double steady_ns = per_call([&] { sink += std::chrono::steady_clock::now().time_since_epoch().count(); });
  const double fast_ns = per_call([&] { sink += wheelrpc::timer::detail::FastClock::now_ns(); });
  result_line("clock")
      .num("calls", static_cast<unsigned long long>(n))
      .num("rng_ns", rng_ns, 1)
      .num("steady_clock_ns", steady_ns, 1)
      .num("fast_clock_ns", fast_ns, 1)
      .str("fast_clock_source", wheelrpc::timer::detail::FastClock::uses_tsc() ? "tsc" : "steady_clock")
      .num("sink", static_cast<long long>(sink & 1))
      .str("check", "ok")
      .print();
  return 0;
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s churn P K | churn_mt P K | accuracy N | idle SECONDS | clock N\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view workload = argc > 1 ? argv[1] : "";
  try {
    if ((workload == "churn" || workload == "churn_mt") && argc == 4) {
      const auto p = parse_count(argv[2]);
      const auto k = parse_count(argv[3]);
      if (!p || !k) return usage(argv[0]);
      return workload == "churn" ? churn(*p, *k) : churn_mt(*p, *k);
    }
    if (workload == "accuracy" && argc == 3) {
      const auto n = parse_count(argv[2]);
      if (!n) return usage(argv[0]);
      return accuracy(*n);
    }
    if (workload == "clock" && argc == 3) {
      const auto n = parse_count(argv[2]);
      if (!n) return usage(argv[0]);
      return clock_cost(*n);
    }
    if (workload == "idle" && argc == 3) {
      const auto secs = parse_seconds(argv[2]);
      if (!secs) return usage(argv[0]);
      return idle(*secs);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "timer_bench %s: %s\n", std::string(workload).c_str(), e.what());
    return 1;
  }
  return usage(argv[0]);
}
