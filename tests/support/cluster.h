#pragma once
// Several providers, each a Server behind its own FaultProxy (to kill,
// black-hole or slow it), and one Client of all of them, on 127.0.0.1 port 0.
//
// Two ways to run the client:
// - `Cluster(modes)`: everything on real time, one shared HashedWheelTimer and
//   two I/O threads;
// - `Cluster(ManualTime{}, modes)`: the client's timer is a ManualTimer and
//   ClientOptions::clock its ManualClock, so its deadlines, attempt timeouts,
//   hedges and retry backoffs move only when the test calls `advance()`. The
//   client gets its own executor, run by one thread, so `flush()` can wait for
//   everything the timer posted. The servers share that timer and clock
//   (ServerOptions::clock), so the budgets they are sent run out on the same
//   clock, never before the client's own timeouts; their I/O is real.
//
// Bounded waits only.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "support/manual_timer.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

namespace wheelrpc::test {

/// How a provider answers "work".
enum class Mode { reply, hold, delay, overloaded };

/// One provider: a Server behind a FaultProxy. "work" replies with the
/// provider's name (at once, after `delay`, or never: `hold` keeps the
/// Responder until the test ends), or refuses it unprocessed
/// (`overloaded`: errc::resource_exhausted); "budget" replies with the milliseconds
/// left before the request's deadline as the server sees it. The server
/// reads `clock` (nullptr: the steady clock), the one `timer` reads.
struct Provider {
  using Clock = std::chrono::steady_clock;

  Provider(IoThreads& io, timer::Timer& timer, const timer::Clock* clock, std::string n, Mode m)
      : name(std::move(n)), mode(m), server(io.io.get_executor(), timer, server_options(clock)) {
    server.handle("work", [this, &io](rpc::Request, rpc::Responder r) {
      switch (mode.load()) {
        case Mode::reply: r.reply(name); break;
        case Mode::hold: {
          std::lock_guard lock(mu);
          held.push_back(std::move(r));
          break;
        }
        case Mode::delay: {
          auto t = std::make_shared<boost::asio::steady_timer>(io.io, delay);
          t->async_wait([t, r = std::move(r), n = name](const boost::system::error_code&) mutable { r.reply(n); });
          break;
        }
        case Mode::overloaded: r.fail(rpc::errc::too_many_pending, name + " is overloaded"); break;
      }
    });
    server.handle("budget", [clock](rpc::Request req, rpc::Responder r) {
      const auto now = clock ? clock->now() : Clock::now();
      const auto left = req.deadline ? std::chrono::duration_cast<std::chrono::milliseconds>(*req.deadline - now)
                                     : std::chrono::milliseconds(-1);
      r.reply(std::to_string(left.count()));
    });
    if (auto ec = server.listen(loopback0())) throw boost::system::system_error(ec);
    proxy.emplace(io.io.get_executor(), loopback0(), server.local_endpoint());
    if (auto ec = proxy->start()) throw boost::system::system_error(ec);
  }
  static rpc::ServerOptions server_options(const timer::Clock* clock) {
    rpc::ServerOptions o;
    o.keepalive.heartbeat = std::chrono::milliseconds(100);
    o.clock = clock;
    return o;
  }
  int requests() const { return static_cast<int>(server.stats().requests); }
  std::size_t held_count() {
    std::lock_guard lock(mu);
    return held.size();
  }
  void stop() {
    proxy->stop();
    server.stop();
    std::lock_guard lock(mu);
    held.clear();  // their destructors answer server_error to closed channels
  }

  const std::string name;
  std::atomic<Mode> mode;
  std::chrono::milliseconds delay{0};
  rpc::Server server;
  std::optional<fault::FaultProxy> proxy;
  std::mutex mu;
  std::vector<rpc::Responder> held;
};

/// Millisecond-scale heartbeats and reconnects, for real-time clusters.
inline rpc::ClientOptions client_options() {
  using namespace std::chrono_literals;
  rpc::ClientOptions o;
  o.heartbeat = 100ms;
  o.connect_timeout = 300ms;
  o.reconnect.initial = 50ms;
  o.reconnect.max = 200ms;
  return o;
}

/// For a client on manual time. Its heartbeat and reconnect tasks run on the
/// manual timer but judge idleness by real time: a long heartbeat keeps a
/// test that waits in real time without advancing the clock from seeing its
/// connections as idle. Retry backoffs without jitter, so they are exact.
inline rpc::ClientOptions manual_client_options() {
  using namespace std::chrono_literals;
  rpc::ClientOptions o;
  o.heartbeat = 30s;
  o.connect_timeout = 10s;
  o.reconnect.initial = 50ms;
  o.reconnect.max = 200ms;
  o.retry.backoff.jitter = 0;
  return o;
}

/// Tag: the client runs on a manual clock (see the top of this file).
struct ManualTime {};

/// N providers and a client of all of them (through their proxies).
struct Cluster {
  explicit Cluster(std::vector<Mode> modes, rpc::ClientOptions co = client_options()) {
    add_providers(modes, timer, nullptr);
    client.emplace(io.io.get_executor(), timer, endpoints(), co);
  }
  Cluster(ManualTime, std::vector<Mode> modes, rpc::ClientOptions co = manual_client_options())
      : manual(std::make_unique<ManualTimer>()), client_io(std::make_unique<IoThreads>(1)) {
    add_providers(modes, manual->timer, &manual->clock);
    co.clock = &manual->clock;
    client.emplace(client_io->io.get_executor(), manual->timer, endpoints(), co);
  }
  ~Cluster() {
    client->close();
    for (auto& p : providers) p->stop();
    io.stop();
    if (client_io) client_io->stop();
  }
  /// Connects to every provider and waits until all are ready.
  void connect_all() {
    client->connect();
    ASSERT_TRUE(wait_until([&] {
      auto ps = client->providers();
      return std::all_of(ps.begin(), ps.end(), [](const auto& p) { return p.ready; });
    }));
  }
  int total_requests() const {
    int n = 0;
    for (const auto& p : providers) n += p->requests();
    return n;
  }
  std::size_t total_held() {
    std::size_t n = 0;
    for (auto& p : providers) n += p->held_count();
    return n;
  }

  // ---- manual time only

  /// Runs everything posted to the client's executor so far, and what that
  /// posts in turn, a few posts deep (a timeout posts its work, which posts
  /// the completion handler). One thread runs the executor, so a marker
  /// posted now runs after all that was posted before it.
  void flush() {
    for (int round = 0; round < 4; ++round) {
      Latch done(1);
      boost::asio::post(client_io->io, [&] { done.count_down(); });
      ASSERT_TRUE(done.wait_for(std::chrono::seconds(20))) << "the client's executor is stuck";
    }
  }
  /// Moves the client's clock forward by `d`, in steps of `step`, letting the
  /// client finish what each step made due before the next: the timeouts due
  /// at a step run with the clock at that step, as on a real clock.
  void advance(std::chrono::nanoseconds d, std::chrono::nanoseconds step = std::chrono::milliseconds(1)) {
    flush();
    while (d.count() > 0) {
      const auto s = std::min(d, step);
      manual->advance(s);
      flush();
      d -= s;
    }
  }
  /// Time on the client's clock since the cluster was made.
  std::chrono::milliseconds elapsed() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(manual->clock.now() - manual_start);
  }
  /// The clock the client reads (its manual clock, or the steady clock).
  const timer::Clock* clock() const { return manual ? &manual->clock : nullptr; }

  timer::HashedWheelTimer timer;        // the servers' (and a real-time client's); outlives the I/O threads
  std::unique_ptr<ManualTimer> manual;  // a manual-time client's
  const timer::Clock::time_point manual_start = manual ? manual->clock.now() : timer::Clock::time_point{};
  IoThreads io;
  std::unique_ptr<IoThreads> client_io;  // a manual-time client's executor
  std::vector<std::unique_ptr<Provider>> providers;
  std::optional<rpc::Client> client;

 private:
  void add_providers(const std::vector<Mode>& modes, timer::Timer& t, const timer::Clock* clock) {
    for (std::size_t i = 0; i < modes.size(); ++i) {
      providers.push_back(std::make_unique<Provider>(io, t, clock, "p" + std::to_string(i), modes[i]));
    }
  }
  std::vector<boost::asio::ip::tcp::endpoint> endpoints() const {
    std::vector<boost::asio::ip::tcp::endpoint> eps;
    for (const auto& p : providers) eps.push_back(p->proxy->local_endpoint());
    return eps;
  }
};

/// Starts a call on the cluster's client, timed on the client's clock.
inline std::future<Outcome> start(Cluster& c, std::string method, std::string payload, rpc::CallOptions o) {
  return start(*c.client, std::move(method), std::move(payload), std::move(o), c.clock());
}

/// Waits (bounded) for a call's outcome.
inline Outcome wait(std::future<Outcome>& f) {
  if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "call never completed";
    return {};
  }
  return f.get();
}

inline rpc::CallOptions opts(std::chrono::milliseconds timeout, bool idempotent = false) {
  rpc::CallOptions o;
  o.timeout = timeout;
  o.idempotent = idempotent;
  return o;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace wheelrpc::test
