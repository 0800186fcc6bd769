// Retries, failover across providers, the retry budget, hedging, failback,
// load balancing and deadline propagation, on 127.0.0.1 with in-process
// servers, each behind its own FaultProxy (to kill, black-hole or slow it).
// Bounded waits only; every timing assertion has a generous margin.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/rpc/deadline.h>

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
using wheelrpc::rpc::DeadlineScope;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::LoadBalance;
using wheelrpc::rpc::Request;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::Response;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::test::IoThreads;
using wheelrpc::test::toxic;
using wheelrpc::test::wait_until;

namespace {

// Generous: sanitizer builds and a busy 2-core machine delay handlers.
constexpr auto kSlack = 300ms;

/// How a provider answers "work".
enum class Mode { reply, hold, delay };

/// One provider: a Server behind a FaultProxy. "work" replies with the
/// provider's name (at once, after `delay`, or never: `hold` keeps the
/// Responder until the test ends); "budget" replies with the milliseconds
/// left before the request's deadline as the server sees it.
struct Provider {
  Provider(IoThreads& io, wheelrpc::timer::Timer& timer, std::string n, Mode m)
      : name(std::move(n)), mode(m), server(io.io.get_executor(), timer, server_options()) {
    server.handle("work", [this, &io](Request, Responder r) {
      times.push(Clock::now());
      switch (mode.load()) {
        case Mode::reply:
          r.reply(name);
          break;
        case Mode::hold: {
          std::lock_guard lock(mu);
          held.push_back(std::move(r));
          break;
        }
        case Mode::delay: {
          auto t = std::make_shared<boost::asio::steady_timer>(io.io, delay);
          t->async_wait([t, r = std::move(r), n = name](const error_code&) mutable { r.reply(n); });
          break;
        }
      }
    });
    server.handle("budget", [](Request req, Responder r) {
      const auto left = req.deadline ? std::chrono::duration_cast<std::chrono::milliseconds>(*req.deadline - Clock::now())
                                     : std::chrono::milliseconds(-1);
      r.reply(std::to_string(left.count()));
    });
    if (auto ec = server.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
    proxy.emplace(io.io.get_executor(), wheelrpc::test::loopback0(), server.local_endpoint());
    if (auto ec = proxy->start()) throw boost::system::system_error(ec);
  }
  static ServerOptions server_options() {
    ServerOptions o;
    o.heartbeat = 100ms;
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

  /// Arrival times of "work" requests.
  struct Times {
    void push(Clock::time_point t) {
      std::lock_guard lock(mu);
      v.push_back(t);
    }
    std::vector<Clock::time_point> get() {
      std::lock_guard lock(mu);
      return v;
    }
    std::mutex mu;
    std::vector<Clock::time_point> v;
  } times;

  const std::string name;
  std::atomic<Mode> mode;
  std::chrono::milliseconds delay{0};
  Server server;
  std::optional<FaultProxy> proxy;
  std::mutex mu;
  std::vector<Responder> held;
};

ClientOptions client_options() {
  ClientOptions o;
  o.heartbeat = 100ms;
  o.connect_timeout = 300ms;
  o.reconnect.initial = 50ms;
  o.reconnect.max = 200ms;
  return o;
}

/// N providers and a client of all of them (through their proxies).
struct Cluster {
  explicit Cluster(std::vector<Mode> modes, ClientOptions co = client_options()) {
    for (std::size_t i = 0; i < modes.size(); ++i) {
      providers.push_back(std::make_unique<Provider>(io, timer, "p" + std::to_string(i), modes[i]));
    }
    std::vector<boost::asio::ip::tcp::endpoint> eps;
    for (auto& p : providers) eps.push_back(p->proxy->local_endpoint());
    client.emplace(io.io.get_executor(), timer, eps, co);
  }
  ~Cluster() {
    client->close();
    for (auto& p : providers) p->stop();
    io.stop();
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

  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  std::vector<std::unique_ptr<Provider>> providers;
  std::optional<Client> client;
};

struct Outcome {
  error_code ec;
  Response response;
  Clock::duration took{};
};

/// Starts a call; the future holds its outcome (a second completion would
/// throw std::future_error: exactly once).
std::future<Outcome> start(Client& client, std::string method, std::string payload, CallOptions o) {
  auto p = std::make_shared<std::promise<Outcome>>();
  auto f = p->get_future();
  const auto t0 = Clock::now();
  client.async_call(std::move(method), std::move(payload), std::move(o), [p, t0](error_code ec, Response r) {
    p->set_value(Outcome{ec, std::move(r), Clock::now() - t0});
  });
  return f;
}

Outcome wait(std::future<Outcome>& f) {
  if (f.wait_for(20s) != std::future_status::ready) {
    ADD_FAILURE() << "call never completed";
    return {};
  }
  return f.get();
}

CallOptions opts(std::chrono::milliseconds timeout, bool idempotent = false) {
  CallOptions o;
  o.timeout = timeout;
  o.idempotent = idempotent;
  return o;
}


bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------- failover

TEST(Retry, OneOfThreeProvidersKilledUnderLoadEveryCallSucceeds) {
  Cluster c({Mode::delay, Mode::delay, Mode::delay});
  for (auto& p : c.providers) p->delay = 5ms;  // calls stay in flight long enough to be caught by the kill
  c.connect_all();
  constexpr int kCalls = 900;
  constexpr int kConcurrency = 24;
  std::atomic<int> issued{0}, ok{0}, failed{0}, completions{0};
  std::mutex mu;
  std::vector<int> completed(kCalls, 0);
  std::string first_error;
  std::function<void()> issue = [&] {
    const int id = issued.fetch_add(1);
    if (id >= kCalls) return;
    c.client->async_call("work", "", opts(5s), [&, id](error_code ec, Response r) {
      {
        std::lock_guard lock(mu);
        ++completed[static_cast<std::size_t>(id)];
        if (ec && first_error.empty()) first_error = ec.message() + ": " + r.error_message;
      }
      (ec ? failed : ok).fetch_add(1);
      issue();
      completions.fetch_add(1);  // last: once all are counted, nothing here touches `issue` again
    });
  };
  for (int i = 0; i < kConcurrency; ++i) issue();
  ASSERT_TRUE(wait_until([&] { return completions.load() >= kCalls / 3; }, 30s));
  ASSERT_GT(c.providers[1]->requests(), 0);
  c.providers[1]->proxy->down();  // killed: its connections drop, new ones are refused
  ASSERT_TRUE(wait_until([&] { return completions.load() == kCalls; }, 30s)) << completions.load();
  EXPECT_EQ(ok.load(), kCalls) << first_error;
  EXPECT_EQ(failed.load(), 0);
  for (int n : completed) EXPECT_EQ(n, 1);
  const auto s = c.client->stats();
  EXPECT_GE(s.retries, 1u) << "the calls in flight on the killed provider were retried elsewhere";
  EXPECT_EQ(s.attempts, static_cast<std::uint64_t>(kCalls) + s.retries);
  EXPECT_EQ(s.pending, 0u);
  EXPECT_FALSE(c.client->providers()[1].ready);
}

TEST(Retry, AllProvidersDownCallsFailWithUnavailableByTheirDeadlines) {
  Cluster c({Mode::reply, Mode::reply, Mode::reply});
  for (auto& p : c.providers) p->proxy->down();
  std::vector<std::future<Outcome>> fs;
  for (int i = 0; i < 10; ++i) fs.push_back(start(*c.client, "work", "", opts(300ms)));
  for (auto& f : fs) {
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
    EXPECT_TRUE(contains(out.response.error_message, "cannot connect")) << out.response.error_message;
    EXPECT_GE(out.took, 300ms);
    EXPECT_LT(out.took, 300ms + kSlack);
  }
  EXPECT_EQ(c.total_requests(), 0);
}

TEST(Retry, WithoutWaitForReadyAnUnavailableCallIsRetriedThenFailsNamingItsAttempts) {
  Cluster c({Mode::reply, Mode::reply});
  for (auto& p : c.providers) p->proxy->down();
  auto o = opts(2s);
  o.wait_for_ready = false;
  auto f = start(*c.client, "work", "", o);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::unavailable);
  EXPECT_TRUE(contains(out.response.error_message, "attempt 3 of 3")) << out.response.error_message;
  EXPECT_LT(out.took, 1s) << "fails after its retries, not at its deadline";
  const auto s = c.client->stats();
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.retries, 2u);
}

TEST(Retry, ApplicationErrorsAreNeverRetried) {
  Cluster c({Mode::reply, Mode::reply, Mode::reply});
  c.connect_all();
  auto f = start(*c.client, "no_such_method", "", opts(1s, /*idempotent=*/true));
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::method_not_found);
  EXPECT_EQ(c.total_requests(), 1);
  EXPECT_EQ(c.client->stats().retries, 0u);
}

TEST(Retry, AbsurdCallOptionsFailAtOnceWithBadRequest) {
  Cluster c({Mode::reply});
  auto o = opts(1s);
  o.retries = 99;
  auto f1 = start(*c.client, "work", "", o);
  auto out = wait(f1);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_TRUE(contains(out.response.error_message, "retries")) << out.response.error_message;
  auto h = opts(1s, /*idempotent=*/false);
  h.hedge_delay = 10ms;
  auto f2 = start(*c.client, "work", "", h);
  out = wait(f2);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_TRUE(contains(out.response.error_message, "idempotent")) << out.response.error_message;
  auto t = opts(std::chrono::hours(24 * 365 * 1000));  // would overflow the clock
  auto f3 = start(*c.client, "work", "", t);
  out = wait(f3);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_TRUE(contains(out.response.error_message, "timeout must be at most")) << out.response.error_message;
  auto a = opts(1s, /*idempotent=*/true);
  a.hedge_delay = std::chrono::milliseconds::max();
  auto f4 = start(*c.client, "work", "", a);
  out = wait(f4);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_EQ(c.total_requests(), 0);
}

TEST(Retry, ChaosOnOneProviderAtATimeEveryCallCompletesExactlyOnceByItsDeadline) {
  const char* env = std::getenv("WHEELRPC_CHAOS_SECONDS");
  const auto soak = std::chrono::seconds(env ? std::max(1, std::atoi(env)) : 8);
  Cluster c({Mode::delay, Mode::delay, Mode::delay});
  for (auto& p : c.providers) p->delay = 2ms;
  c.connect_all();
  constexpr auto kDeadline = 300ms;
  struct Record {
    std::atomic<int> completions{0};
    Clock::time_point deadline;
    Clock::time_point completed_at;
    error_code ec;
  };
  std::mutex mu;
  std::vector<std::unique_ptr<Record>> records;
  std::atomic<bool> stop{false};
  // 9 callers, a call at a time each: plain calls (failover on connection
  // failures only), idempotent ones (attempt timeouts retried) and hedged ones.
  std::vector<std::thread> callers;
  for (int k = 0; k < 9; ++k) {
    callers.emplace_back([&, k] {
      while (!stop.load()) {
        auto o = opts(kDeadline, /*idempotent=*/k % 3 != 0);
        if (k % 3 == 2) o.hedge_delay = 30ms;
        Record* r;
        {
          std::lock_guard lock(mu);
          records.push_back(std::make_unique<Record>());
          r = records.back().get();
        }
        r->deadline = Clock::now() + kDeadline;
        auto done = std::make_shared<std::promise<void>>();
        c.client->async_call("work", "", o, [r, done](error_code ec, Response) {
          r->ec = ec;
          r->completed_at = Clock::now();
          if (r->completions.fetch_add(1) == 0) done->set_value();
        });
        done->get_future().wait_for(5s);
      }
    });
  }
  std::mt19937 rng(2027);
  const auto end = Clock::now() + soak;
  int step = 0;
  while (Clock::now() < end) {
    auto& proxy = *c.providers[rng() % c.providers.size()]->proxy;
    const std::string name = "t" + std::to_string(step++);
    Toxic t;
    switch (rng() % 5) {
      case 0: t = toxic(name, Stream::downstream, wheelrpc::fault::Latency{std::chrono::milliseconds(rng() % 200), 20ms}); break;
      case 1: t = toxic(name, Stream::both, wheelrpc::fault::Blackhole{}); break;
      case 2: t = toxic(name, Stream::both, wheelrpc::fault::ResetPeer{std::chrono::milliseconds(rng() % 50)}); break;
      case 3: t = toxic(name, Stream::downstream, wheelrpc::fault::LimitData{rng() % 2000}); break;
      default: t = {}; break;
    }
    if (!t.name.empty()) {
      ASSERT_FALSE(proxy.add_toxic(t));
    } else {
      proxy.down();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 300));
    if (!t.name.empty()) {
      ASSERT_FALSE(proxy.remove_toxic(t.name));
    } else {
      ASSERT_TRUE(wait_until([&] { return !proxy.up(); }));  // bounded: the port may briefly be taken
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 100));
  }
  stop = true;
  for (auto& t : callers) t.join();
  std::lock_guard lock(mu);
  ASSERT_TRUE(wait_until([&] {
    return std::all_of(records.begin(), records.end(), [](const auto& r) { return r->completions.load() >= 1; });
  })) << "a call never completed";
  int ok = 0;
  for (const auto& r : records) {
    EXPECT_EQ(r->completions.load(), 1);
    EXPECT_LE(r->completed_at - r->deadline, kSlack) << "completed late: " << r->ec.message();
    if (!r->ec) {
      ++ok;
    } else {
      EXPECT_TRUE(r->ec == errc::timeout || r->ec == errc::connection_lost || r->ec == errc::unavailable)
          << r->ec.message();
    }
  }
  EXPECT_GT(ok, static_cast<int>(records.size()) / 2) << "two of three providers were healthy at any time";
  const auto s = c.client->stats();
  EXPECT_EQ(s.pending, 0u);
  EXPECT_EQ(s.calls, records.size());
  RecordProperty("calls", static_cast<int>(records.size()));
  RecordProperty("ok", ok);
  RecordProperty("retries", static_cast<int>(s.retries));
  RecordProperty("hedges", static_cast<int>(s.hedges));
}

// ---------------------------------------------------------------- timeouts

TEST(Retry, ATimeoutIsRetriedOnlyForIdempotentCalls) {
  Cluster c({Mode::hold, Mode::hold});
  c.connect_all();
  // Not idempotent: one attempt, which times out with the call.
  auto f = start(*c.client, "work", "", opts(300ms));
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_GE(out.took, 300ms);
  ASSERT_TRUE(wait_until([&] { return c.total_held() == 1; }));
  EXPECT_EQ(c.client->stats().retries, 0u);

  // Idempotent: three attempts of 200 ms each (the 600 ms split over them),
  // never twice in a row on the same provider.
  auto g = start(*c.client, "work", "", opts(600ms, /*idempotent=*/true));
  out = wait(g);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "attempt 3 of 3")) << out.response.error_message;
  EXPECT_GE(out.took, 600ms);
  EXPECT_LT(out.took, 600ms + kSlack);
  ASSERT_TRUE(wait_until([&] { return c.total_held() == 4; }));
  EXPECT_EQ(c.providers[0]->held_count() + c.providers[1]->held_count(), 4u);
  EXPECT_GE(c.providers[0]->held_count(), 2u);
  EXPECT_GE(c.providers[1]->held_count(), 2u);
  const auto s = c.client->stats();
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.attempt_timeouts, 2u);  // the third attempt ran to the call's deadline
}

TEST(Retry, AnIdempotentCallTimingOutOnABlackholedProviderSucceedsOnAnother) {
  // A 1 s heartbeat: the half-open connection is not detected (3 s idle
  // timeout) before the attempt's own timeout ends it.
  auto co = client_options();
  co.heartbeat = 1s;
  Cluster c({Mode::reply, Mode::reply}, co);
  c.connect_all();
  // Round robin starts with p0: black-hole it (a half-open peer).
  ASSERT_FALSE(c.providers[0]->proxy->add_toxic(toxic("hole", Stream::both, wheelrpc::fault::Blackhole{})));
  auto f = start(*c.client, "work", "", opts(900ms, /*idempotent=*/true));
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  EXPECT_GE(out.took, 300ms) << "the first attempt had a third of the budget";
  EXPECT_LT(out.took, 300ms + kSlack);
  const auto s = c.client->stats();
  EXPECT_EQ(s.attempt_timeouts, 1u);
  EXPECT_EQ(s.retries, 1u);
}

TEST(Retry, BackoffBetweenAttemptsIsBoundedByTheDeadline) {
  {
    // A 5 s backoff cannot fit in what is left of 400 ms: no retry, and the
    // call ends at once with its error instead of waiting for the deadline.
    auto co = client_options();
    co.retry.backoff.first = 5s;
    co.retry.backoff.initial = 5s;
    co.retry.backoff.max = 5s;
    Cluster c({Mode::hold, Mode::hold}, co);
    c.connect_all();
    auto o = opts(400ms, /*idempotent=*/true);
    o.attempt_timeout = 50ms;
    auto f = start(*c.client, "work", "", o);
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout);
    EXPECT_TRUE(contains(out.response.error_message, "no time left to retry")) << out.response.error_message;
    EXPECT_GE(out.took, 50ms);
    EXPECT_LT(out.took, 400ms);
    EXPECT_EQ(c.client->stats().retries, 0u);
    EXPECT_EQ(c.total_requests(), 1);
  }
  {
    // A 150 ms backoff fits: the second attempt arrives one attempt timeout
    // plus the backoff after the first.
    auto co = client_options();
    co.retry.backoff.first = 150ms;
    co.retry.backoff.initial = 150ms;
    co.retry.backoff.jitter = 0;
    Cluster c({Mode::hold, Mode::hold}, co);
    c.connect_all();
    auto o = opts(1000ms, /*idempotent=*/true);
    o.attempt_timeout = 100ms;
    auto f = start(*c.client, "work", "", o);
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout);
    EXPECT_LT(out.took, 1000ms + kSlack);
    auto t0 = c.providers[0]->times.get();
    auto t1 = c.providers[1]->times.get();
    ASSERT_FALSE(t0.empty());
    ASSERT_FALSE(t1.empty());
    const auto first = std::min(t0.front(), t1.front());
    const auto second = std::max(t0.front(), t1.front());
    EXPECT_GE(second - first, 250ms - 20ms);  // 100 ms attempt + 150 ms backoff (the wheel is never early)
    EXPECT_EQ(c.client->stats().attempts, 3u);
  }
}

// ---------------------------------------------------------------- budget

TEST(Retry, TheRetryBudgetCapsRetriesWhenEveryProviderFails) {
  auto co = client_options();
  co.retry.budget_ratio = 0.2;
  co.retry.budget_min_per_second = 0;
  Cluster c({Mode::hold, Mode::hold, Mode::hold}, co);
  c.connect_all();
  constexpr int kCalls = 100;
  auto o = opts(5s, /*idempotent=*/true);
  o.attempt_timeout = 50ms;
  std::vector<std::future<Outcome>> fs;
  for (int i = 0; i < kCalls; ++i) fs.push_back(start(*c.client, "work", "", o));
  int refused = 0;
  for (auto& f : fs) {
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::timeout);
    EXPECT_LT(out.took, 2s) << "a refused retry ends the call with its error, not at its deadline";
    if (contains(out.response.error_message, "retry budget")) ++refused;
  }
  const auto s = c.client->stats();
  // Without the budget: 300 attempts. With it: the calls plus 20 % of them.
  EXPECT_LE(s.retries, static_cast<std::uint64_t>(kCalls) / 5);
  EXPECT_GE(s.retries, 1u);
  EXPECT_EQ(s.attempts, static_cast<std::uint64_t>(kCalls) + s.retries);
  EXPECT_EQ(refused, kCalls);
  EXPECT_EQ(s.budget_refusals, static_cast<std::uint64_t>(kCalls));
  ASSERT_TRUE(wait_until([&] { return c.total_held() == s.attempts; }));
}

// ---------------------------------------------------------------- hedging

TEST(Retry, HedgingCutsTailLatencyWhenOneProviderIsSlow) {
  Cluster c({Mode::delay, Mode::reply});
  c.providers[0]->delay = 1000ms;
  c.connect_all();
  auto o = opts(3s, /*idempotent=*/true);
  o.hedge_delay = 50ms;
  auto f = start(*c.client, "work", "", o);  // round robin: p0, the slow one, first
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1") << "the hedge on the fast provider wins";
  EXPECT_GE(out.took, 50ms);
  EXPECT_LT(out.took, 50ms + kSlack) << "not the slow provider's 1000 ms";
  auto s = c.client->stats();
  EXPECT_EQ(s.hedges, 1u);
  EXPECT_EQ(s.attempts, 2u);
  EXPECT_EQ(s.attempts_cancelled, 1u) << "the slow attempt was cancelled";
  EXPECT_EQ(c.providers[0]->requests(), 1);
  // The slow provider was told (CANCEL): when its handler replies, at 1000 ms,
  // the server drops the reply instead of sending it.
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->server.stats().cancelled == 1; }));
  EXPECT_EQ(c.providers[0]->server.stats().replies, 0u);
  EXPECT_EQ(c.client->stats().late_replies, 0u);
  EXPECT_EQ(c.client->stats().ok, 1u);
}

TEST(Retry, TheLosingHedgesHandlerSeesItsRequestCancelled) {
  Cluster c({Mode::hold, Mode::reply});
  c.connect_all();
  auto o = opts(3s, /*idempotent=*/true);
  o.hedge_delay = 30ms;
  auto f = start(*c.client, "work", "", o);  // round robin: p0, which holds it
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  ASSERT_EQ(c.providers[0]->held_count(), 1u);
  auto& p0 = *c.providers[0];
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(p0.mu);
    return p0.held[0].cancelled();
  })) << "the handler may stop its work";
  std::lock_guard lock(p0.mu);
  EXPECT_FALSE(p0.held[0].reply("too late")) << "the reply of a cancelled request is dropped";
}

TEST(Retry, ACallCancelledByItsCallerIsCancelledOnTheServer) {
  Cluster c({Mode::hold});
  c.connect_all();
  boost::asio::cancellation_signal signal;
  std::promise<error_code> p;
  auto fut = p.get_future();
  c.client->async_call("work", "", opts(5s),
                       boost::asio::bind_cancellation_slot(signal.slot(), [&p](error_code ec, Response) { p.set_value(ec); }));
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  signal.emit(boost::asio::cancellation_type::terminal);
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(fut.get(), boost::asio::error::operation_aborted);
  auto& p0 = *c.providers[0];
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(p0.mu);
    return p0.held[0].cancelled();
  }));
}

TEST(Retry, NoHedgeWhenTheFirstReplyComesInTime) {
  Cluster c({Mode::reply, Mode::reply});
  c.connect_all();
  auto o = opts(3s, /*idempotent=*/true);
  o.hedge_delay = 500ms;
  for (int i = 0; i < 20; ++i) {
    auto f = start(*c.client, "work", "", o);
    auto out = wait(f);
    ASSERT_FALSE(out.ec) << out.response.error_message;
  }
  EXPECT_EQ(c.client->stats().hedges, 0u);
  EXPECT_EQ(c.total_requests(), 20);
}

// ---------------------------------------------------------------- load balancing

// Sends `n` calls one after another; p0 holds each call it gets, p1 answers.
// Returns how many p0 holds.
std::size_t held_by_the_busy_provider(LoadBalance lb, int n) {
  auto co = client_options();
  co.load_balance = lb;
  Cluster c({Mode::hold, Mode::reply}, co);
  c.connect_all();
  std::vector<std::future<Outcome>> fs;
  for (int i = 0; i < n; ++i) {
    const auto held_before = c.providers[0]->held_count();
    fs.push_back(start(*c.client, "work", "", opts(10s)));
    auto& f = fs.back();
    EXPECT_TRUE(wait_until([&] {
      return f.wait_for(0s) == std::future_status::ready || c.providers[0]->held_count() > held_before;
    }));
  }
  return c.providers[0]->held_count();
}

TEST(LoadBalance, LeastActivePrefersTheIdleProvider) {
  EXPECT_EQ(held_by_the_busy_provider(LoadBalance::round_robin, 20), 10u);  // the contrast
  EXPECT_LE(held_by_the_busy_provider(LoadBalance::least_active, 20), 1u);
}

TEST(LoadBalance, PowerOfTwoChoicesAvoidsTheBusyProvider) {
  EXPECT_LE(held_by_the_busy_provider(LoadBalance::power_of_two, 20), 1u);
}

TEST(LoadBalance, ProvidersWhoseConnectionIsNotReadyAreSkipped) {
  for (auto lb : {LoadBalance::round_robin, LoadBalance::least_active, LoadBalance::power_of_two}) {
    auto co = client_options();
    co.load_balance = lb;
    Cluster c({Mode::reply, Mode::reply, Mode::reply}, co);
    c.providers[1]->proxy->down();
    c.client->connect();
    ASSERT_TRUE(wait_until([&] {
      auto ps = c.client->providers();
      return ps[0].ready && ps[2].ready && !ps[1].last_error.empty();
    }));
    for (int i = 0; i < 30; ++i) {
      auto f = start(*c.client, "work", "", opts(2s));
      auto out = wait(f);
      ASSERT_FALSE(out.ec) << to_string(lb) << ": " << out.response.error_message;
      EXPECT_NE(out.response.payload, "p1");
    }
    EXPECT_EQ(c.client->stats().retries, 0u) << to_string(lb);
    EXPECT_GT(c.providers[0]->requests(), 0) << to_string(lb);
    EXPECT_GT(c.providers[2]->requests(), 0) << to_string(lb);
  }
}

// ---------------------------------------------------------------- deadline propagation

TEST(DeadlinePropagation, AChainOfThreeServersSeesTheFirstCallersBudgetMinusElapsed) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  // client -> s1 -> s2 -> s3. s1 works 100 ms (on a timer) before its nested
  // call and hands the request's deadline on with a DeadlineScope; s2 works
  // 100 ms (synchronously, in the handler) and its nested call inherits the
  // deadline by itself. The nested calls use default options (1000 ms
  // timeouts), so only the propagated deadline can make s3 see less.
  Server s3(io.io.get_executor(), timer);
  s3.handle("budget", [](Request req, Responder r) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*req.deadline - Clock::now());
    r.reply(std::to_string(left.count()));
  });
  ASSERT_FALSE(s3.listen(wheelrpc::test::loopback0()));
  Client to_s3(io.io.get_executor(), timer, {s3.local_endpoint()});

  auto reply_with = [](Responder r) {
    return [r = std::move(r)](error_code ec, Response resp) mutable {
      if (ec) {
        r.fail(errc::server_error, ec.message() + ": " + resp.error_message);
      } else {
        r.reply(std::move(resp.payload));
      }
    };
  };
  Server s2(io.io.get_executor(), timer);
  s2.handle("chain", [&](Request req, Responder r) {
    std::this_thread::sleep_for(100ms);  // the handler's own work
    to_s3.async_call("budget", std::move(req.payload), CallOptions{}, reply_with(std::move(r)));
  });
  ASSERT_FALSE(s2.listen(wheelrpc::test::loopback0()));
  Client to_s2(io.io.get_executor(), timer, {s2.local_endpoint()});

  Server s1(io.io.get_executor(), timer);
  s1.handle("chain", [&](Request req, Responder r) {
    auto t = std::make_shared<boost::asio::steady_timer>(io.io, 100ms);
    t->async_wait([&, t, req = std::move(req), r = std::move(r)](const error_code&) mutable {
      DeadlineScope scope(req.deadline);  // continued later, elsewhere: say whose work this is
      to_s2.async_call("chain", std::move(req.payload), CallOptions{}, reply_with(std::move(r)));
    });
  });
  ASSERT_FALSE(s1.listen(wheelrpc::test::loopback0()));
  Client to_s1(io.io.get_executor(), timer, {s1.local_endpoint()});

  for (Client* c : {&to_s1, &to_s2, &to_s3}) c->connect();
  ASSERT_TRUE(wait_until([&] {
    return to_s1.providers()[0].ready && to_s2.providers()[0].ready && to_s3.providers()[0].ready;
  }));

  auto f = start(to_s1, "chain", "", opts(600ms));
  auto out = wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  const long long seen = std::stoll(out.response.payload);
  EXPECT_LE(seen, 600 - 200) << "s3 must see the first caller's budget minus the 200 ms spent upstream";
  EXPECT_GE(seen, 600 - 200 - 150) << "and not much less";

  to_s1.close();
  to_s2.close();
  to_s3.close();
  s1.stop();
  s2.stop();
  s3.stop();
  io.stop();
}

TEST(DeadlinePropagation, AnExpiredInheritedDeadlineFailsAtOnceWithoutSending) {
  Cluster c({Mode::reply});
  c.connect_all();
  std::future<Outcome> f;
  {
    DeadlineScope scope(Clock::now() - 5ms);
    f = start(*c.client, "work", "", opts(1s));
  }
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_TRUE(contains(out.response.error_message, "inherited")) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "not sent")) << out.response.error_message;
  EXPECT_LT(out.took, 100ms);
  EXPECT_EQ(c.total_requests(), 0);
}

TEST(DeadlinePropagation, InheritedDeadlineBoundsTheCallAndStaysInForceInItsCompletion) {
  Cluster c({Mode::reply});
  c.connect_all();
  const auto outer = Clock::now() + 200ms;
  std::promise<std::pair<long long, std::optional<Clock::time_point>>> p;
  auto fut = p.get_future();
  {
    DeadlineScope scope(outer);
    c.client->async_call("budget", "", opts(5s), [&p](error_code ec, Response r) {
      p.set_value({ec ? -2 : std::stoll(r.payload), wheelrpc::rpc::current_deadline()});
    });
  }
  EXPECT_FALSE(wheelrpc::rpc::current_deadline().has_value()) << "the scope restored the previous one";
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  auto [seen, in_force] = fut.get();
  EXPECT_GT(seen, 0);
  EXPECT_LE(seen, 200);
  ASSERT_TRUE(in_force.has_value());
  EXPECT_EQ(*in_force, outer);

  // A call whose own timeout is shorter than the request's deadline: its
  // completion still runs with the request's deadline in force.
  std::promise<std::optional<Clock::time_point>> q;
  auto qf = q.get_future();
  const auto request_deadline = Clock::now() + 5s;
  {
    DeadlineScope scope(request_deadline);
    c.client->async_call("work", "", opts(1s), [&q](error_code, Response) { q.set_value(wheelrpc::rpc::current_deadline()); });
  }
  ASSERT_EQ(qf.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(qf.get(), std::optional<Clock::time_point>(request_deadline));

  // Opting out: the call's own 5 s budget.
  std::future<Outcome> f;
  {
    DeadlineScope scope(Clock::now() + 200ms);
    auto o = opts(5s);
    o.inherit_deadline = false;
    f = start(*c.client, "budget", "", o);
  }
  auto out = wait(f);
  ASSERT_FALSE(out.ec);
  EXPECT_GT(std::stoll(out.response.payload), 4000);
}

TEST(DeadlinePropagation, AnInheritedDeadlineThatPassesIsATimeoutNamingIt) {
  Cluster c({Mode::hold});
  c.connect_all();
  std::future<Outcome> f;
  {
    DeadlineScope scope(Clock::now() + 100ms);
    f = start(*c.client, "work", "", opts(5s));
  }
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_TRUE(contains(out.response.error_message, "inherited")) << out.response.error_message;
  EXPECT_LT(out.took, 100ms + kSlack);
}

// ---------------------------------------------------------------- failback

ClientOptions failback_options(std::chrono::milliseconds interval, unsigned retries, std::size_t max_pending) {
  auto co = client_options();
  co.failback.interval = interval;
  co.failback.retries = retries;
  co.failback.max_pending = max_pending;
  return co;
}

CallOptions fire_and_forget() {
  CallOptions o;
  o.timeout = 100ms;
  o.wait_for_ready = false;
  return o;
}

TEST(Failback, ARetryTaskDeliversOnceTheProviderIsBack) {
  Cluster c({Mode::reply}, failback_options(50ms, 50, 10));
  c.providers[0]->proxy->down();
  c.client->send_failback("work", "x", fire_and_forget());
  // Between two tries the delivery waits in one retry task.
  ASSERT_TRUE(wait_until([&] {
    const auto s = c.client->stats();
    return s.failback_retries >= 2 && s.failback_pending == 1;
  }));
  EXPECT_EQ(c.client->stats().failback_delivered, 0u);
  // Bounded retry: the freed port may briefly be another test's source port.
  ASSERT_TRUE(wait_until([&] { return !c.providers[0]->proxy->up(); }));
  ASSERT_TRUE(wait_until([&] { return c.client->stats().failback_delivered == 1; }));
  EXPECT_EQ(c.providers[0]->requests(), 1);
  EXPECT_EQ(c.client->stats().failback_pending, 0u);
  EXPECT_EQ(c.client->stats().failback_given_up, 0u);
}

TEST(Failback, ARetryTaskGivesUpAfterItsRetries) {
  Cluster c({Mode::reply}, failback_options(30ms, 3, 10));
  c.providers[0]->proxy->down();
  c.client->send_failback("work", "x", fire_and_forget());
  ASSERT_TRUE(wait_until([&] { return c.client->stats().failback_given_up == 1; }));
  const auto s = c.client->stats();
  EXPECT_EQ(s.failback_retries, 3u);
  EXPECT_EQ(s.failback_pending, 0u);
  EXPECT_EQ(s.failback_delivered, 0u);
}

TEST(Failback, PendingRetryTasksAreCapped) {
  Cluster c({Mode::reply}, failback_options(60s, 3, 2));
  c.providers[0]->proxy->down();
  for (int i = 0; i < 5; ++i) c.client->send_failback("work", "x", fire_and_forget());
  ASSERT_TRUE(wait_until([&] {
    const auto s = c.client->stats();
    return s.failback_pending == 2 && s.failback_dropped == 3;
  }));
  // close() cancels the waiting retry tasks.
  c.client->close();
  EXPECT_EQ(c.client->stats().failback_pending, 0u);
}

TEST(Failback, AnErrorRetryingCannotFixIsNotRetried) {
  Cluster c({Mode::reply}, failback_options(30ms, 3, 10));
  c.connect_all();
  c.client->send_failback("no_such_method", "x", fire_and_forget());
  ASSERT_TRUE(wait_until([&] { return c.client->stats().failback_given_up == 1; }));
  EXPECT_EQ(c.client->stats().failback_retries, 0u);
  EXPECT_EQ(c.providers[0]->requests(), 1);
}

}  // namespace
