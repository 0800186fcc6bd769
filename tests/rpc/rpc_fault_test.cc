// RPC under injected faults, through an in-process FaultProxy between the
// client and the server: half-open peers, resets, truncated streams, latency,
// and a chaos soak. Every call completes exactly once, by its deadline plus a
// small bound, and the client recovers by itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <optional>
#include <vector>

#include <wheelrpc/fault/fault_proxy.h>

#include "support/rpc_fixture.h"
#include "support/toxic.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using wheelrpc::fault::FaultProxy;
using wheelrpc::fault::Stream;
using wheelrpc::fault::Toxic;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Response;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::test::IoThreads;
using wheelrpc::test::toxic;
using wheelrpc::test::wait_until;

namespace {

/// Server <- FaultProxy <- Client, millisecond-scale heartbeats (30 ms: the
/// client's idle timeout is 90 ms, the server's 90 ms too).
struct FaultFixture {
  explicit FaultFixture(const ServerOptions& so = server_options(), const ClientOptions& co = client_options())
      : server(io.io.get_executor(), timer, so),
        proxy(io.io.get_executor(), wheelrpc::test::loopback0(), listen_server()) {
    if (auto ec = proxy.start()) throw boost::system::system_error(ec);
    client.emplace(io.io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{proxy.local_endpoint()},
                   co);
  }
  ~FaultFixture() {
    client->close();
    proxy.stop();
    server.stop();
    io.stop();
  }
  static ServerOptions server_options() {
    ServerOptions o;
    o.keepalive.heartbeat = 30ms;
    return o;
  }
  static ClientOptions client_options() {
    ClientOptions o;
    o.heartbeat = 30ms;
    o.connect_timeout = 300ms;
    o.reconnect.initial = 30ms;
    o.reconnect.max = 200ms;
    return o;
  }
  boost::asio::ip::tcp::endpoint listen_server() {
    wheelrpc::test::register_test_methods(server, io.io);
    if (auto ec = server.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
    return server.local_endpoint();
  }

  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  Server server;
  FaultProxy proxy;
  std::optional<Client> client;
};

/// Outcome of one call, with how long after its deadline it completed.
struct Result {
  error_code ec;
  std::string message;
  std::chrono::microseconds overrun{0};
};

/// Calls and records each outcome; counts completions per call to catch a
/// double completion.
class Recorder {
 public:
  // These tests watch what one connection's faults do to the calls on it, so
  // a call makes one attempt unless a test says otherwise (retries across
  // providers have their own tests, in retry_test.cc).
  int retries = 0;

  void call(Client& client, std::string method, std::string payload, std::chrono::milliseconds timeout,
            std::function<void()> on_done = {}) {
    const std::size_t id = issue();
    CallOptions o;
    o.timeout = timeout;
    o.retries = retries;
    const auto deadline = Clock::now() + timeout;
    client.async_call(std::move(method), std::move(payload), o,
                      [this, id, deadline, on_done = std::move(on_done)](error_code ec, Response r) {
                        const auto overrun =
                            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - deadline);
                        {
                          std::lock_guard lock(mu_);
                          if (++completions_[id] == 1) results_[id] = Result{ec, r.error_message, overrun};
                        }
                        if (on_done) on_done();
                      });
  }
  std::size_t issued() {
    std::lock_guard lock(mu_);
    return completions_.size();
  }
  bool all_completed() {
    std::lock_guard lock(mu_);
    return std::all_of(completions_.begin(), completions_.end(), [](int n) { return n > 0; });
  }
  /// Checks every call completed exactly once with one of `allowed`, none more
  /// than `max_overrun` after its deadline; returns the outcomes.
  std::vector<Result> check(const std::vector<error_code>& allowed, std::chrono::milliseconds max_overrun) {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < completions_.size(); ++i) {
      EXPECT_EQ(completions_[i], 1) << "call " << i << " completed " << completions_[i] << " times";
      const auto& r = results_[i];
      if (r.ec) {
        EXPECT_NE(std::find(allowed.begin(), allowed.end(), r.ec), allowed.end())
            << "call " << i << ": " << r.ec.message() << " (" << r.message << ")";
      }
      EXPECT_LE(r.overrun, max_overrun) << "call " << i << " completed late: " << r.message;
    }
    return results_;
  }

 private:
  std::size_t issue() {
    std::lock_guard lock(mu_);
    completions_.push_back(0);
    results_.emplace_back();
    return completions_.size() - 1;
  }
  std::mutex mu_;
  std::vector<int> completions_;
  std::vector<Result> results_;
};

// Generous: sanitizer builds and a busy 2-core machine delay handlers.
constexpr auto kMaxOverrun = 300ms;

TEST(Fault, BlackholeIsDetectedReconnectedAndNoCallWaitsPastItsDeadline) {
  FaultFixture fx;
  // The idle time counts from the client's last read before the hole: this
  // call's reply or a later heartbeat's, so after this instant. (Read after
  // the hole is made, it could be late by however long adding the hole took.)
  const auto before_last_read = Clock::now();
  ASSERT_EQ(fx.client->call("echo", "up").payload, "up");
  ASSERT_FALSE(fx.proxy.add_toxic(toxic("hole", Stream::both, wheelrpc::fault::Blackhole{})));
  const auto t0 = Clock::now();
  Recorder rec;
  for (int i = 0; i < 20; ++i) rec.call(*fx.client, "echo", "x", 200ms);
  // Heartbeats go unanswered: the client gives the connection up after its idle
  // timeout (90 ms) plus one check (10 ms), and tries again (through the hole,
  // so the new handshakes time out too).
  ASSERT_TRUE(wait_until([&] { return fx.proxy.stats().connections_accepted >= 2; }, 10s));
  const auto seen = Clock::now();
  EXPECT_GE(seen - before_last_read, 90ms) << "given up before the idle timeout";
  EXPECT_LT(seen - t0, 90ms + 10ms + 400ms) << "idle timeout + one check interval (+ slack)";
  ASSERT_TRUE(wait_until([&] { return rec.all_completed(); }, 10s));
  rec.check({errc::timeout, errc::connection_lost}, kMaxOverrun);
  ASSERT_FALSE(fx.proxy.remove_toxic("hole"));
  // Back to health by itself.
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          return fx.client->call("echo", "again", CallOptions{}).payload == "again";
        } catch (const std::exception&) {
          return false;
        }
      },
      10s));
}

TEST(Fault, ResetPeerMidStreamFailsPendingCallsAndTheClientReconnects) {
  FaultFixture fx;
  ASSERT_EQ(fx.client->call("echo", "up").payload, "up");
  Recorder rec;
  for (int i = 0; i < 20; ++i) rec.call(*fx.client, "sleep", "2000", 5000ms);
  ASSERT_TRUE(wait_until([&] { return fx.server.stats().requests >= 21; }));
  const auto t0 = Clock::now();
  ASSERT_FALSE(fx.proxy.add_toxic(toxic("rst", Stream::both, wheelrpc::fault::ResetPeer{0ms})));
  ASSERT_TRUE(wait_until([&] { return rec.all_completed(); }, 10s));
  EXPECT_LT(Clock::now() - t0, 1500ms) << "pending calls fail at the reset, not at their deadlines";
  for (const auto& r : rec.check({errc::connection_lost}, kMaxOverrun)) EXPECT_EQ(r.ec, errc::connection_lost);
  ASSERT_FALSE(fx.proxy.remove_toxic("rst"));
  ASSERT_TRUE(wait_until([&] { return fx.client->stats().connects >= 2; }, 10s));
  EXPECT_EQ(fx.client->call("echo", "back").payload, "back");
}

TEST(Fault, LimitDataClosesTheStreamPendingCallsFailCleanly) {
  FaultFixture fx;
  ASSERT_EQ(fx.client->call("echo", "up").payload, "up");
  // Let a few replies through, then cut the server -> client stream.
  ASSERT_FALSE(fx.proxy.add_toxic(toxic("cut", Stream::downstream, wheelrpc::fault::LimitData{300})));
  Recorder rec;
  for (int i = 0; i < 30; ++i) rec.call(*fx.client, "echo", std::string(40, 'x'), 2000ms);
  ASSERT_TRUE(wait_until([&] { return rec.all_completed(); }, 10s));
  int ok = 0, lost = 0;
  for (const auto& r : rec.check({errc::connection_lost, errc::timeout}, kMaxOverrun)) {
    ok += !r.ec;
    lost += r.ec == errc::connection_lost;
  }
  EXPECT_GT(lost, 0) << "the cut must fail the calls whose replies it swallowed";
  EXPECT_LT(ok, 30);
  ASSERT_FALSE(fx.proxy.remove_toxic("cut"));
  ASSERT_TRUE(wait_until([&] { return fx.client->stats().connects >= 2; }, 10s));
  EXPECT_EQ(fx.client->call("echo", "back").payload, "back");
}

TEST(Fault, LatencyAboveTheTimeoutTimesOutWhileSentBelowItAllSucceed) {
  // Idle timeouts of 600 ms here, not 90: with 50 ms of latency a stall of
  // 40 ms on a loaded machine would otherwise look like a dead peer.
  auto so = FaultFixture::server_options();
  so.keepalive.idle_timeout = 600ms;
  auto co = FaultFixture::client_options();
  co.idle_timeout = 600ms;
  FaultFixture fx(so, co);
  ASSERT_EQ(fx.client->call("echo", "up").payload, "up");
  // 50 ms: above the calls' 20 ms timeout, below the idle timeout (a latency
  // beyond the idle timeout looks like a dead peer, and is treated so).
  ASSERT_FALSE(fx.proxy.add_toxic(toxic("slow", Stream::downstream, wheelrpc::fault::Latency{50ms, 0ms})));
  Recorder above;
  for (int i = 0; i < 10; ++i) above.call(*fx.client, "echo", "x", 20ms);
  ASSERT_TRUE(wait_until([&] { return above.all_completed(); }, 10s));
  for (const auto& r : above.check({errc::timeout}, kMaxOverrun)) {
    EXPECT_EQ(r.ec, errc::timeout);
    EXPECT_NE(r.message.find("sent, waiting for the reply"), std::string::npos) << r.message;
  }
  Recorder below;
  for (int i = 0; i < 10; ++i) below.call(*fx.client, "echo", "x", 2000ms);
  ASSERT_TRUE(wait_until([&] { return below.all_completed(); }, 10s));
  for (const auto& r : below.check({}, kMaxOverrun)) EXPECT_FALSE(r.ec) << r.message;
}

TEST(Fault, ChaosSoakEveryCallCompletesExactlyOnceAndTheClientEndsHealthy) {
  const char* env = std::getenv("WHEELRPC_CHAOS_SECONDS");
  const auto soak = std::chrono::seconds(env ? std::max(1, std::atoi(env)) : 20);
  FaultFixture fx;
  ASSERT_EQ(fx.client->call("echo", "up").payload, "up");
  Recorder rec;
  std::atomic<bool> stop{false};
  // Steady load: 8 callers, each a call at a time with a 150 ms deadline,
  // at most one every 10 ms (while the proxy is down calls fail at once:
  // without the pause the callers would spin).
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&, c] {
      while (!stop.load()) {
        const auto next = Clock::now() + 10ms;
        auto done = std::make_shared<std::promise<void>>();
        rec.call(*fx.client, c % 2 ? "echo" : "sleep", c % 2 ? "payload" : "5", 150ms, [done] { done->set_value(); });
        done->get_future().wait_for(2s);  // a call at a time per caller (bounded)
        std::this_thread::sleep_until(next);
      }
    });
  }
  // Random toxics on and off, and the proxy down and up.
  std::mt19937 rng(2026);
  const auto end = Clock::now() + soak;
  int step = 0;
  while (Clock::now() < end) {
    const std::string name = "t" + std::to_string(step++);
    Toxic t;
    switch (rng() % 6) {
      case 0:
        t = toxic(name, Stream::downstream, wheelrpc::fault::Latency{std::chrono::milliseconds(rng() % 250), 20ms});
        break;
      case 1: t = toxic(name, Stream::both, wheelrpc::fault::Blackhole{}); break;
      case 2: t = toxic(name, Stream::both, wheelrpc::fault::ResetPeer{std::chrono::milliseconds(rng() % 100)}); break;
      case 3: t = toxic(name, Stream::downstream, wheelrpc::fault::LimitData{rng() % 2000}); break;
      case 4: t = toxic(name, Stream::both, wheelrpc::fault::Slicer{8, 4, std::chrono::microseconds(100)}); break;
      default: t = {}; break;
    }
    if (!t.name.empty()) {
      ASSERT_FALSE(fx.proxy.add_toxic(t));
    } else {
      fx.proxy.down();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 300));
    if (!t.name.empty()) {
      ASSERT_FALSE(fx.proxy.remove_toxic(t.name));
    } else {
      // Bounded retry: the freed port may briefly be another test's source port.
      ASSERT_TRUE(wait_until([&] { return !fx.proxy.up(); }));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 200));
  }
  stop = true;
  for (auto& t : callers) t.join();
  ASSERT_TRUE(wait_until([&] { return rec.all_completed(); }, 10s)) << "a call never completed";
  int ok = 0;
  for (const auto& r : rec.check({errc::timeout, errc::connection_lost, errc::unavailable}, kMaxOverrun)) ok += !r.ec;
  EXPECT_GT(ok, 0);
  EXPECT_EQ(fx.client->stats().pending, 0u);
  // Healthy at the end, by itself.
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          return fx.client->call("echo", "healthy", CallOptions{}).payload == "healthy";
        } catch (const std::exception&) {
          return false;
        }
      },
      10s));
  RecordProperty("calls", static_cast<int>(rec.issued()));
  RecordProperty("ok", ok);
}

}  // namespace
