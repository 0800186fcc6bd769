// wheelctl bench's engine (tools/wheelctl/bench.h) against an in-process
// rpc::Server on 127.0.0.1 port 0: closed and open loop, errors by status,
// latency from the intended start, the bounded end, SIGINT, the JSON line.

#include "bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "bench_report.h"
#include "bench_run.h"
#include "support/rpc_fixture.h"

namespace wheelrpc::wheelctl {
namespace {

using namespace std::chrono_literals;

std::uint64_t by_status(const BenchResult& r, rpc::StatusCode c) {
  return r.errors_by_status[static_cast<std::size_t>(c)];
}

/// Waits (bounded: 60 s) until `pred` holds; false if it never did.
template <class Pred>
bool eventually(Pred pred) {
  const auto limit = std::chrono::steady_clock::now() + 60s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

/// A server with the methods the tests call, on `io_threads` threads.
struct BenchServer {
  explicit BenchServer(int io_threads = 2) : threads(io_threads), server(threads.io.get_executor(), timer) {
    server.handle("/test.Bench/Echo", [this](rpc::Request req, rpc::Responder r) {
      ++handled;
      (void)r.reply(std::move(req.payload));
    });
    // Fails every 5th call it sees (the warm-up calls included) with NOT_FOUND.
    server.handle("/test.Bench/Flaky", [this](rpc::Request req, rpc::Responder r) {
      if (++handled % 5 == 0) {
        ++failed;
        (void)r.fail(rpc::StatusCode::not_found, "every fifth call");
      } else {
        (void)r.reply(std::move(req.payload));
      }
    });
    // Blocks its I/O thread for 600 ms on the call numbered stall_at.
    server.handle("/test.Bench/StallOnce", [this](rpc::Request req, rpc::Responder r) {
      if (++handled == stall_at) std::this_thread::sleep_for(600ms);
      (void)r.reply(std::move(req.payload));
    });
    // Answers the first call (the warm-up), then holds every call unanswered.
    server.handle("/test.Bench/Hold", [this](rpc::Request, rpc::Responder r) {
      if (++handled == 1) {
        (void)r.reply("");
        return;
      }
      std::lock_guard lock(mutex);
      held.push_back(std::move(r));
    });
    if (auto ec = server.listen(test::loopback0())) throw boost::system::system_error(ec);
  }
  ~BenchServer() {
    server.stop();
    threads.stop();
    std::lock_guard lock(mutex);
    held.clear();
  }

  BenchTarget target(const std::string& method, rpc::WireProtocol protocol = rpc::WireProtocol::native) const {
    BenchTarget t;
    t.host = "127.0.0.1";
    t.port = server.local_endpoint().port();
    t.protocol = protocol;
    t.method_path = method;
    t.request = "hello";
    t.timeout = 30s;  // generous: a loaded machine under TSan
    return t;
  }
  boost::asio::ip::tcp::endpoint endpoint() const { return server.local_endpoint(); }

  std::atomic<std::uint64_t> handled{0};
  std::atomic<std::uint64_t> failed{0};
  std::uint64_t stall_at = 0;
  std::mutex mutex;
  std::vector<rpc::Responder> held;

  timer::HashedWheelTimer timer;
  test::IoThreads threads;
  rpc::Server server;
};

BenchOptions quiet(unsigned concurrency, std::chrono::seconds duration, unsigned threads) {
  BenchOptions o;
  o.concurrency = concurrency;
  o.duration = duration;
  o.threads = threads;
  o.progress = false;
  o.handle_sigint = false;
  return o;
}

void expect_closed_loop_counts_errors_by_status(rpc::WireProtocol protocol) {
  BenchServer s;
  BenchRun run(s.target("/test.Bench/Flaky", protocol), quiet(4, 1s, 2), s.endpoint());
  std::ostringstream err;
  const BenchResult r = run.run(err);
  EXPECT_EQ(r.threads, 2u);
  EXPECT_GT(r.calls, 10u);
  EXPECT_EQ(r.ok + r.errors, r.calls);
  // The server saw every call the bench counted, plus one warm-up per thread
  // (which came first: the clock starts once both completed).
  EXPECT_EQ(s.handled.load(), r.calls + 2);
  EXPECT_EQ(r.errors, s.failed.load());
  EXPECT_EQ(by_status(r, rpc::StatusCode::not_found), s.failed.load());
  EXPECT_EQ(r.errors, (r.calls + 2) / 5);
  EXPECT_NE(r.first_error.find("every fifth call"), std::string::npos) << r.first_error;
  EXPECT_EQ(r.latency.count(), r.ok);
  EXPECT_GT(r.duration_s, 0.9);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.protocol, protocol);
}

TEST(Bench, ByDefaultAClosedLoopUsesOneThreadPer128CallsInFlightUpToOnePerCore) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  BenchOptions o;
  o.concurrency = 1;
  EXPECT_EQ(BenchRun::threads_for(o), 1u);
  o.concurrency = 128;
  EXPECT_EQ(BenchRun::threads_for(o), 1u) << "one connection carries 128 calls";
  o.concurrency = 129;
  EXPECT_EQ(BenchRun::threads_for(o), std::min(cores, 2u));
  o.concurrency = 100000;
  EXPECT_EQ(BenchRun::threads_for(o), std::min(cores, 64u));
  o.concurrency = 1;
  o.rate = 1000;
  EXPECT_EQ(BenchRun::threads_for(o), std::min(cores, 64u)) << "open loop: one per core";
  o.rate = 0;
  o.concurrency = 2;
  o.threads = 8;
  EXPECT_EQ(BenchRun::threads_for(o), 2u) << "an explicit count, at most one thread per call in flight";
}

TEST(Bench, ClosedLoopCountsCallsAndErrorsByStatusNative) {
  expect_closed_loop_counts_errors_by_status(rpc::WireProtocol::native);
}

TEST(Bench, ClosedLoopCountsCallsAndErrorsByStatusGrpc) {
  expect_closed_loop_counts_errors_by_status(rpc::WireProtocol::grpc);
}

TEST(Bench, ClosedLoopKeepsAtMostConcurrencyCallsInFlight) {
  BenchServer s;
  BenchTarget t = s.target("/test.Bench/Hold");
  t.timeout = 1s;
  // Three calls held by the server, no reply: each ends at its deadline and
  // none follows (the window is over by then); the run ends within it.
  BenchRun run(t, quiet(3, 1s, 2), s.endpoint());
  std::ostringstream err;
  const auto t0 = std::chrono::steady_clock::now();
  const BenchResult r = run.run(err);
  EXPECT_EQ(r.calls, 3u);
  EXPECT_EQ(by_status(r, rpc::StatusCode::deadline_exceeded), 3u);
  EXPECT_EQ(by_status(r, rpc::StatusCode::cancelled), 0u);  // not cut by the drain's safety net
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
  EXPECT_EQ(r.latency.count(), 0u);
}

TEST(Bench, OpenLoopStartsRateTimesDurationCalls) {
  BenchServer s;
  BenchOptions o = quiet(1, 2s, 2);
  o.rate = 200;
  BenchRun run(s.target("/test.Bench/Echo"), o, s.endpoint());
  std::ostringstream err;
  const BenchResult r = run.run(err);
  // 400 scheduled; every due call starts (no cap in reach), so the count is
  // the schedule's, whatever the machine's load.
  EXPECT_GE(r.calls, 390u);
  EXPECT_LE(r.calls, 410u);
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(r.unsent, 0u);
  EXPECT_EQ(r.max_in_flight, 10000u);
  EXPECT_GE(r.duration_s, 1.9);
  EXPECT_LT(r.calls_per_s(), 250.0);
}

TEST(Bench, OpenLoopCountsLatencyFromTheIntendedStart) {
  BenchServer s(1);
  s.stall_at = 20;  // the warm-up is call 1
  BenchOptions o = quiet(1, 3s, 1);
  o.rate = 100;
  o.max_in_flight = 1;
  BenchRun run(s.target("/test.Bench/StallOnce"), o, s.endpoint());
  std::ostringstream err;
  const BenchResult r = run.run(err);
  EXPECT_EQ(r.errors, 0u);
  // The 600 ms stall held one call; the ~60 calls due meanwhile waited for
  // the cap and then ran fast, but each counts from when it was due: many
  // show the queueing delay, not just the one that stalled.
  EXPECT_GE(r.latency.count_at_or_above(100'000'000), 10u) << "p99 " << r.latency.percentile(99);
  EXPECT_GE(r.latency.max(), 500'000'000u);
  EXPECT_GE(r.cap_hits, 10u);
}

TEST(Bench, SigintStopsEarlyAndStillReports) {
  BenchServer s;
  BenchOptions o = quiet(2, 60s, 2);
  o.handle_sigint = true;
  BenchRun run(s.target("/test.Bench/Echo"), o, s.endpoint());  // catches SIGINT from here on
  std::thread interrupter([&] {
    if (eventually([&] { return s.handled.load() >= 50; })) std::raise(SIGINT);
  });
  std::ostringstream err;
  const BenchResult r = run.run(err);
  interrupter.join();
  EXPECT_TRUE(r.interrupted);
  EXPECT_LT(r.duration_s, 50.0);
  EXPECT_GE(r.calls, 40u);
  EXPECT_EQ(r.errors, 0u);
}

TEST(Bench, SecondInterruptCancelsTheCallsInFlight) {
  BenchServer s;
  BenchTarget t = s.target("/test.Bench/Hold");
  t.timeout = 60s;
  BenchRun run(t, quiet(4, 60s, 1), s.endpoint());
  std::thread interrupter([&] {
    if (eventually([&] {
          std::lock_guard lock(s.mutex);
          return s.held.size() >= 4;
        })) {
      run.interrupt();  // stops starting calls; the four held ones would wait out their 60 s
      run.interrupt();  // fails them now
    }
  });
  std::ostringstream err;
  const auto t0 = std::chrono::steady_clock::now();
  const BenchResult r = run.run(err);
  interrupter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 50s);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.calls, 4u);
  EXPECT_EQ(by_status(r, rpc::StatusCode::cancelled), 4u);
}

TEST(Bench, JsonLineHasEveryField) {
  BenchServer s;
  BenchOptions o = quiet(2, 1s, 2);
  o.json = true;
  std::ostringstream out, err;
  EXPECT_EQ(run_bench(s.target("/test.Bench/Flaky", rpc::WireProtocol::grpc), o, out, err), 1) << err.str();
  const std::string text = out.str();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "exactly one line";
  const boost::json::object j = boost::json::parse(text).as_object();
  for (const char* field : {"calls", "calls_per_s", "errors", "errors_by_status", "p50_us", "p90_us", "p99_us",
                            "p999_us", "max_us", "concurrency", "duration_s", "rate", "protocol"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  EXPECT_GT(j.at("calls").to_number<std::uint64_t>(), 0u);
  EXPECT_EQ(j.at("errors").to_number<std::uint64_t>(),
            j.at("errors_by_status").as_object().at("NOT_FOUND").to_number<std::uint64_t>());
  EXPECT_GT(j.at("calls_per_s").to_number<double>(), 0);
  EXPECT_LE(j.at("p50_us").to_number<double>(), j.at("p99_us").to_number<double>());
  EXPECT_LE(j.at("p99_us").to_number<double>(), j.at("max_us").to_number<double>());
  EXPECT_EQ(j.at("concurrency").to_number<unsigned>(), 2u);
  EXPECT_EQ(j.at("rate").to_number<double>(), 0.0);
  EXPECT_EQ(j.at("protocol").as_string(), "grpc");
}

TEST(Bench, TextReportAndExitStatusZeroWhenEveryCallSucceeded) {
  BenchServer s;
  std::ostringstream out, err;
  EXPECT_EQ(run_bench(s.target("/test.Bench/Echo"), quiet(2, 1s, 1), out, err), 0) << err.str();
  for (const char* part : {"calls/s:", "p50", "p90", "p99", "p99.9", "max", "Histogram (us):", "#"}) {
    EXPECT_NE(out.str().find(part), std::string::npos) << part << "\n" << out.str();
  }
  EXPECT_EQ(out.str().find("Errors by status"), std::string::npos);
}

TEST(Bench, InvalidTargetOrOptionsExitWithTwo) {
  BenchTarget t;
  t.port = 1;
  t.method_path = "/x.Y/Z";
  BenchOptions o = quiet(1, 1s, 1);
  EXPECT_EQ(bench_problem(t, o), "");
  std::ostringstream out, err;
  o.rate = -1;
  EXPECT_EQ(run_bench(t, o, out, err), 2);
  EXPECT_NE(err.str().find("--rate"), std::string::npos) << err.str();
  o.rate = 0;
  o.concurrency = 0;
  EXPECT_NE(bench_problem(t, o), "");
  o.concurrency = 1;
  t.timeout = 0ms;
  EXPECT_NE(bench_problem(t, o), "");
  t.timeout = 1s;
  t.method_path.clear();
  EXPECT_NE(bench_problem(t, o), "");
  EXPECT_TRUE(out.str().empty());
}

TEST(Bench, UnreachableServerCountsUnavailable) {
  // A port nobody listens on: bind one, close it.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, test::loopback0());
  const auto port = a.local_endpoint().port();
  a.close();
  BenchTarget t;
  t.port = port;
  t.method_path = "/test.Bench/Echo";
  t.timeout = 5s;
  BenchRun run(t, quiet(1, 1s, 1), {boost::asio::ip::make_address("127.0.0.1"), port});
  std::ostringstream err;
  const BenchResult r = run.run(err);
  EXPECT_GT(r.calls, 0u);
  EXPECT_EQ(r.errors, r.calls);
  EXPECT_EQ(by_status(r, rpc::StatusCode::unavailable), r.calls);
}

}  // namespace
}  // namespace wheelrpc::wheelctl
