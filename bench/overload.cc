/// rpc_bench overload: does a server past its capacity keep serving what it
/// can finish by the deadline, or does it collapse?
///
///   rpc_bench overload [--load 1,2,4] [--no-limiter] [--no-admission] [--cost-us 100]
///                      [--handler-threads 1] [--deadline-ms 100] [--warmup 1] [--duration 5]
///                      [--capacity CALLS_PER_S]
///
/// One process, three kinds of threads: the server's I/O thread (an
/// io_context, decoding, admitting, answering), its handler executor (a
/// thread pool of --handler-threads), and the client's I/O thread; the
/// calling thread generates the load. The method's handler spins --cost-us
/// of its thread's CPU time, so the server's nominal capacity is known:
/// handler_threads / cost calls a second (10 000/s by default: one core of
/// the machine's two, leaving the other to the I/O threads). On a machine
/// shared with other work the handler thread gets less than a whole core, so
/// "1x" is the capacity measured first, in the same run (measure_capacity:
/// a closed loop that keeps the handler busy), unless --capacity gives it.
///
/// For each load factor f: a fresh server (ServerOptions::overload.max_concurrency =
/// automatic() unless --no-limiter, deadline_admission unless
/// --no-admission) and client; calls are issued open-loop at f x capacity
/// (evenly spaced; a call is never held back because others are slow), each
/// with a --deadline-ms deadline and no retries; --warmup seconds are not
/// measured, then --duration seconds are. Counted over the calls issued in
/// the window, once all of them completed:
///   offered_per_s   calls issued / duration
///   goodput_per_s   calls that succeeded within their deadline / duration
///   timeouts        calls that ended by their deadline: no answer in time
///                   (client_timeouts) or answered server_timeout (server_timeouts,
///                   shed ones included)
///   shed            the server's ServerStats::shed over the window
///   refused         calls answered resource_exhausted (the concurrency limit)
///   p99_us          of the successful calls (p50_us, max_us too)
///   cpu_s           CPU of the whole process over the window (handler_cpu_s:
///                   of the handler threads alone)
/// One JSON line per load factor; "check" is "ok" unless a call failed
/// otherwise or the run stalled.

#include "overload.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <latch>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "bench_util.h"

namespace wheelrpc::bench {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

struct Settings {
  std::vector<double> loads;
  bool limiter = true;
  bool admission = true;
  std::chrono::microseconds cost{100};
  int handler_threads = 1;
  std::chrono::milliseconds deadline{100};
  double warmup_s = 1;
  double duration_s = 5;

  double nominal_capacity() const { return handler_threads * 1e6 / static_cast<double>(cost.count()); }
  double capacity = 0;                     ///< calls/s that "1x" stands for
  std::string capacity_from = "measured";  ///< "measured" (measure_capacity) or "given" (--capacity)
};

std::vector<double> parse_loads(const std::string& text) {
  std::vector<double> out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const auto comma = text.find(',', from);
    const std::string item = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !(v > 0) || v > 100) {
      throw UsageError("--load must be a comma-separated list of factors in (0, 100], e.g. 1,2,4");
    }
    out.push_back(v);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

std::int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Burns `cost` of this thread's CPU time (not wall time: a handler
/// preempted by another process still costs the same work).
void spin_cpu(std::chrono::nanoseconds cost) noexcept {
  const auto start = thread_cpu_ns();
  while (thread_cpu_ns() - start < cost.count()) {
  }
}

/// The client's view of the calls issued in the window. Written only by the
/// client's I/O thread (completions), read once they are all done.
struct Outcomes {
  LatencyHistogram hist;  ///< ns, successful calls within the deadline
  std::uint64_t ok = 0, late = 0, client_timeouts = 0, server_timeouts = 0, refused = 0, errors = 0;
};

struct LoadResult {
  double load_factor = 0;
  std::uint64_t offered = 0;
  Outcomes out;
  std::uint64_t shed = 0;
  std::uint64_t limit_end = 0;
  double cpu_s = 0;
  double handler_cpu_s = 0;
  bool stalled = false;
};

/// A server (its I/O thread and handler pool) and a client (its I/O
/// thread) in this process, connected; stopped in order by the destructor.
class Rig {
 public:
  Rig(const Settings& s, bool limiter, bool admission, timer::HashedWheelTimer& timer)
      : pool_(static_cast<std::size_t>(s.handler_threads)),
        server_(server_io_.get_executor(), timer, server_options(pool_, limiter, admission)) {
    // The pool's thread ids, for their CPU time: one job per thread, each
    // held until all have started (so no thread runs two).
    std::latch all(s.handler_threads);
    std::mutex mu;
    for (int i = 0; i < s.handler_threads; ++i) {
      asio::post(pool_, [&] {
        {
          std::lock_guard lock(mu);
          handler_tids_.push_back(static_cast<pid_t>(::syscall(SYS_gettid)));
        }
        all.arrive_and_wait();
      });
    }
    all.wait();
    const auto cost = s.cost;
    server_.handle("work", [cost](rpc::Request req, rpc::Responder r) {
      spin_cpu(cost);
      r.reply(std::move(req.payload));
    });
    if (const error_code ec = server_.listen(endpoint_of("127.0.0.1", 0))) {
      throw std::runtime_error("cannot listen: " + ec.message());
    }
    server_thread_ = std::thread([this] { server_io_.run(); });
    client_thread_ = std::thread([this] { client_io_.run(); });
    client_.emplace(client_io_.get_executor(), timer, std::vector{server_.local_endpoint()});
    client_->connect();
    const auto ready_by = now_ns() + 10'000'000'000;
    while (now_ns() < ready_by) {
      const auto ps = client_->providers();
      if (!ps.empty() && ps[0].ready) break;
      std::this_thread::sleep_for(1ms);
    }
  }
  ~Rig() {
    client_->close();
    server_.stop();
    pool_.stop();
    pool_.join();
    client_work_.reset();
    server_work_.reset();
    client_io_.stop();
    server_io_.stop();
    client_thread_.join();
    server_thread_.join();
  }
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  rpc::Server& server() { return server_; }
  rpc::Client& client() { return *client_; }
  asio::io_context& client_io() { return client_io_; }
  /// CPU seconds the handler threads have used so far.
  double handler_cpu_s() const {
    double sum = 0;
    for (const auto tid : handler_tids_) sum += std::max(thread_cpu_s(tid), 0.0);
    return sum;
  }

 private:
  static rpc::ServerOptions server_options(asio::thread_pool& pool, bool limiter, bool admission) {
    rpc::ServerOptions so;
    so.handler_executor = pool.get_executor();
    so.overload.deadline_admission = admission;
    so.overload.max_concurrency = limiter ? rpc::ConcurrencyLimit::automatic() : rpc::ConcurrencyLimit::none();
    return so;
  }

  asio::io_context server_io_{1}, client_io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> server_work_{server_io_.get_executor()},
      client_work_{client_io_.get_executor()};
  asio::thread_pool pool_;
  rpc::Server server_;
  std::optional<rpc::Client> client_;
  std::thread server_thread_, client_thread_;
  std::vector<pid_t> handler_tids_;
};

/// The server's capacity as this machine delivers it now: the throughput of
/// a closed loop keeping 8 calls per handler thread in flight (no deadline,
/// no limiter) over 2 s after 0.5 s of warm-up. On a shared machine the
/// handler threads get less than whole cores; nominal capacity would then
/// overload the server at "1x" already.
double measure_capacity(const Settings& s, timer::HashedWheelTimer& timer) {
  Rig rig(s, /*limiter=*/false, /*admission=*/false, timer);
  const std::int64_t t_measure = now_ns() + 500'000'000;
  const std::int64_t t_end = t_measure + 2'000'000'000;
  std::atomic<std::uint64_t> done_in_window{0};
  std::atomic<int> running{0};
  std::function<void()> issue = [&] {
    rpc::CallOptions o;
    o.timeout = rpc::CallOptions::kNoDeadline;
    o.retries = 0;
    rig.client().async_call("work", std::string(64, 'x'), std::move(o), [&](error_code, rpc::Response) {
      const auto t = now_ns();
      if (t >= t_measure && t < t_end) done_in_window.fetch_add(1, std::memory_order_relaxed);
      if (t < t_end) {
        issue();
      } else {
        running.fetch_sub(1, std::memory_order_acq_rel);
      }
    });
  };
  const int in_flight = 8 * s.handler_threads;
  running.store(in_flight);
  asio::post(rig.client_io(), [&] {
    for (int i = 0; i < in_flight; ++i) issue();
  });
  const auto give_up = t_end + 10'000'000'000;
  while (running.load(std::memory_order_acquire) > 0 && now_ns() < give_up) std::this_thread::sleep_for(1ms);
  if (running.load(std::memory_order_acquire) > 0) throw std::runtime_error("the capacity run stalled");
  return static_cast<double>(done_in_window.load()) / 2.0;
}

LoadResult run_load(const Settings& s, double factor, timer::HashedWheelTimer& timer) {
  LoadResult res;
  res.load_factor = factor;
  Rig rig(s, s.limiter, s.admission, timer);
  rpc::Server& server = rig.server();
  rpc::Client& client = rig.client();

  Outcomes out;
  std::atomic<std::int64_t> outstanding{0};
  const std::string payload(64, 'x');
  const std::int64_t deadline_ns = std::chrono::nanoseconds(s.deadline).count();
  const double rate = factor * s.capacity;
  const double interval_ns = 1e9 / rate;
  const std::int64_t t0 = now_ns() + 1'000'000;
  const std::int64_t t_measure = t0 + static_cast<std::int64_t>(s.warmup_s * 1e9);
  const std::int64_t t_end = t_measure + static_cast<std::int64_t>(s.duration_s * 1e9);
  std::uint64_t shed_at_measure = 0;
  double cpu_at_measure = 0, handler_cpu_at_measure = 0;
  bool measuring = false;
  for (std::uint64_t i = 0;; ++i) {
    const auto due = t0 + static_cast<std::int64_t>(static_cast<double>(i) * interval_ns);
    if (due >= t_end) break;
    if (!measuring && due >= t_measure) {
      measuring = true;
      shed_at_measure = server.stats().shed;
      cpu_at_measure = process_cpu_s();
      handler_cpu_at_measure = rig.handler_cpu_s();
    }
    // Sleep while well ahead; a late wake-up sends the calls due at once
    // (open loop: the schedule never waits for replies).
    const auto ahead = due - now_ns();
    if (ahead > 200'000) std::this_thread::sleep_for(std::chrono::nanoseconds(ahead - 100'000));
    const bool counted = measuring;
    if (counted) ++res.offered;
    rpc::CallOptions o;
    o.timeout = s.deadline;
    o.retries = 0;
    outstanding.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t sent = now_ns();
    client.async_call("work", payload, std::move(o),
                      [&out, &outstanding, sent, counted, deadline_ns](error_code ec, rpc::Response r) {
                        const std::int64_t took = now_ns() - sent;
                        if (counted) {
                          if (!ec) {
                            ++out.ok;
                            if (took <= deadline_ns) {
                              out.hist.record(static_cast<std::uint64_t>(took));
                            } else {
                              ++out.late;
                            }
                          } else if (ec == rpc::errc::timeout) {
                            ++out.client_timeouts;
                          } else if (ec == rpc::errc::server_timeout) {
                            ++out.server_timeouts;
                          } else if (ec == rpc::errc::resource_exhausted) {
                            ++out.refused;
                          } else if (out.errors++ == 0) {
                            std::fprintf(stderr, "rpc_bench overload: first error: %s\n",
                                         (r.error_message.empty() ? ec.message() : r.error_message).c_str());
                          }
                        }
                        outstanding.fetch_sub(1, std::memory_order_acq_rel);
                      });
  }
  const auto ended = now_ns();
  res.shed = server.stats().shed - shed_at_measure;
  res.cpu_s = process_cpu_s() - cpu_at_measure;
  res.handler_cpu_s = rig.handler_cpu_s() - handler_cpu_at_measure;
  res.limit_end = server.stats().concurrency_limit;
  // Every call ends by its deadline; allow a generous margin.
  while (outstanding.load(std::memory_order_acquire) > 0) {
    if (now_ns() - ended > deadline_ns + 10'000'000'000) {
      res.stalled = true;
      break;
    }
    std::this_thread::sleep_for(1ms);
  }
  if (!res.stalled) res.out = out;  // complete: no completion runs any more
  return res;
}

void print(const Settings& s, const LoadResult& r) {
  const double secs = s.duration_s;
  const auto good = r.out.hist.count();
  auto us = [](double ns) { return ns / 1e3; };
  Check check;
  check.expect(!r.stalled, "calls still in flight 10 s after their deadline");
  check.expect(r.out.errors == 0, "calls failed with other errors");
  JsonLine()
      .str("system", "wheelrpc")
      .str("workload", "overload")
      .num("load_factor", r.load_factor, 2)
      .str("limiter", s.limiter ? "auto" : "off")
      .str("admission", s.admission ? "on" : "off")
      .num("offered_per_s", static_cast<double>(r.offered) / secs, 0)
      .num("goodput_per_s", static_cast<double>(good) / secs, 0)
      .num("shed", r.shed)
      .num("timeouts", r.out.client_timeouts + r.out.server_timeouts)
      .num("p99_us", us(r.out.hist.quantile(0.99)), 1)
      .num("p50_us", us(r.out.hist.quantile(0.50)), 1)
      .num("max_us", us(static_cast<double>(r.out.hist.max())), 1)
      .num("capacity_per_s", s.capacity, 0)
      .str("capacity_from", s.capacity_from)
      .num("nominal_capacity_per_s", s.nominal_capacity(), 0)
      .num("cost_us", static_cast<long long>(s.cost.count()))
      .num("handler_threads", s.handler_threads)
      .num("deadline_ms", static_cast<long long>(s.deadline.count()))
      .num("duration_s", secs, 1)
      .num("offered", r.offered)
      .num("ok", r.out.ok)
      .num("late", r.out.late)
      .num("client_timeouts", r.out.client_timeouts)
      .num("server_timeouts", r.out.server_timeouts)
      .num("refused", r.out.refused)
      .num("errors", r.out.errors)
      .num("limit_end", r.limit_end)
      .num("cpu_s", r.cpu_s, 2)
      .num("handler_cpu_s", r.handler_cpu_s, 2)
      .str("check", check.text())
      .print();
}

}  // namespace

int overload(const Flags& flags) {
  flags.check_known({"load", "no-limiter", "no-admission", "cost-us", "handler-threads", "deadline-ms", "warmup",
                     "duration", "capacity"});
  Settings s;
  s.loads = parse_loads(flags.str("load", "1,2,4"));
  s.limiter = !flags.has("no-limiter");
  s.admission = !flags.has("no-admission");
  s.cost = std::chrono::microseconds(flags.integer("cost-us", 100, 1, 1'000'000));
  s.handler_threads = static_cast<int>(flags.integer("handler-threads", 1, 1, 64));
  s.deadline = std::chrono::milliseconds(flags.integer("deadline-ms", 100, 1, 60'000));
  s.warmup_s = flags.seconds("warmup", 1);
  s.duration_s = flags.seconds("duration", 5);
  if (!(s.duration_s > 0)) throw UsageError("--duration must be > 0");

  timer::HashedWheelTimer timer;  // shared by every server and client of the run
  if (flags.has("capacity")) {
    s.capacity = static_cast<double>(flags.integer("capacity", 0, 1, 10'000'000));
    s.capacity_from = "given";
  } else {
    s.capacity = measure_capacity(s, timer);
  }
  bool ok = true;
  for (const double f : s.loads) {
    const auto r = run_load(s, f, timer);
    print(s, r);
    ok = ok && !r.stalled;
  }
  return ok ? 0 : 1;
}

}  // namespace wheelrpc::bench
