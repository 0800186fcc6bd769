// Client-side health checking (ClientOptions::health_check, gRPC's A17): a
// provider takes new calls only while its /grpc.health.v1.Health/Watch
// stream says SERVING. Each test's servers serve the Watch themselves
// (ServerOptions::health_service off, a scripted handler on health_codec),
// on both wires.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "base/health_codec.h"
#include "support/log_capture.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

namespace {

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using wheelrpc::test::IoThreads;
using wheelrpc::test::Outcome;
using wheelrpc::test::start;
using wheelrpc::test::wait_until;

constexpr const char* kWatch = "/grpc.health.v1.Health/Watch";
constexpr std::uint32_t kServing = 1;
constexpr std::uint32_t kNotServing = 2;

// One open Watch on the server: its writes one after another.
class Watcher : public std::enable_shared_from_this<Watcher> {
 public:
  explicit Watcher(rpc::ServerStream stream) : stream_(std::move(stream)) {}
  void send(std::string message) {
    {
      std::lock_guard lock(mu_);
      if (busy_) {
        queue_.push_back(std::move(message));
        return;
      }
      busy_ = true;
    }
    write(std::move(message));
  }
  void finish(rpc::StatusCode code, std::string why) { stream_.finish(code, std::move(why)); }

 private:
  void write(std::string message) {
    stream_.async_write(std::move(message), [self = shared_from_this()](error_code ec) {
      std::string next;
      {
        std::lock_guard lock(self->mu_);
        if (ec || self->queue_.empty()) {
          self->busy_ = false;
          self->queue_.clear();
          return;
        }
        next = std::move(self->queue_.front());
        self->queue_.erase(self->queue_.begin());
      }
      self->write(std::move(next));
    });
  }

  rpc::ServerStream stream_;
  std::mutex mu_;
  std::vector<std::string> queue_;
  bool busy_ = false;
};

// A provider's grpc.health.v1.Health/Watch, scripted by the test.
class ScriptedHealth {
 public:
  /// The status new watches are told, and open ones from now on.
  void set(std::uint32_t status) {
    std::vector<std::shared_ptr<Watcher>> watchers;
    {
      std::lock_guard lock(mu_);
      status_ = status;
      watchers = watchers_;
    }
    for (auto& w : watchers) w->send(wheelrpc::rpc::detail::encode_health_response(status));
  }
  /// The next `n` watches end with UNAVAILABLE before any answer.
  void fail_next(int n) { fail_next_ = n; }
  /// The first answer of each watch comes this late.
  void answer_after(std::chrono::milliseconds d) { answer_after_ = d; }

  void on_watch(rpc::ServerStream stream) {
    {
      std::lock_guard lock(mu_);
      open_times_.push_back(Clock::now());
    }
    opened_.fetch_add(1);
    stream.async_read([this, stream](error_code ec, std::optional<std::string> request) mutable {
      std::string service;
      if (ec || !request || !wheelrpc::rpc::detail::decode_health_request(*request, service)) {
        stream.finish(rpc::StatusCode::invalid_argument, "no HealthCheckRequest");
        return;
      }
      {
        std::lock_guard lock(mu_);
        services_.push_back(service);
      }
      if (fail_next_.fetch_sub(1) > 0) {
        {
          std::lock_guard lock(mu_);
          fail_times_.push_back(Clock::now());
        }
        stream.finish(rpc::StatusCode::unavailable, "scripted failure");
        return;
      }
      auto watcher = std::make_shared<Watcher>(stream);
      const auto delay = answer_after_.load();
      if (delay.count() == 0) return answer(watcher);
      auto t = std::make_shared<asio::steady_timer>(stream.get_executor(), delay);
      t->async_wait([this, t, watcher](error_code) { answer(watcher); });
    });
  }

  int opened() const { return opened_.load(); }
  std::vector<Clock::time_point> open_times() const {
    std::lock_guard lock(mu_);
    return open_times_;
  }
  std::vector<Clock::time_point> fail_times() const {
    std::lock_guard lock(mu_);
    return fail_times_;
  }
  std::optional<Clock::time_point> first_answer() const {
    std::lock_guard lock(mu_);
    return first_answer_;
  }
  std::vector<std::string> services() const {
    std::lock_guard lock(mu_);
    return services_;
  }

 private:
  void answer(const std::shared_ptr<Watcher>& watcher) {
    std::uint32_t status = 0;
    {
      std::lock_guard lock(mu_);
      if (!first_answer_) first_answer_ = Clock::now();
      watchers_.push_back(watcher);
      status = status_;
    }
    watcher->send(wheelrpc::rpc::detail::encode_health_response(status));
  }

  mutable std::mutex mu_;
  std::uint32_t status_ = kServing;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  std::vector<Clock::time_point> open_times_, fail_times_;
  std::optional<Clock::time_point> first_answer_;
  std::vector<std::string> services_;
  std::atomic<int> opened_{0};
  std::atomic<int> fail_next_{0};
  std::atomic<std::chrono::milliseconds> answer_after_{0ms};
};

// What a provider's server does with the Watch path.
enum class WatchKind { scripted, none, unary };

struct Provider {
  std::string name;
  WatchKind kind = WatchKind::scripted;
  ScriptedHealth health;
  std::unique_ptr<rpc::Server> server;
  std::vector<std::unique_ptr<rpc::Server>> stopped;  // kept until the end (their executor's work)
  std::string peer;                                   // "127.0.0.1:port"
  std::atomic<int> calls{0};
  std::mutex held_mu;
  std::vector<rpc::Responder> held;
  std::optional<Clock::time_point> first_call;

  std::size_t held_count() {
    std::lock_guard lock(held_mu);
    return held.size();
  }
  void release_held() {
    std::vector<rpc::Responder> out;
    {
      std::lock_guard lock(held_mu);
      out.swap(held);
    }
    for (auto& r : out) r.reply(name);
  }
};

class HealthCluster {
 public:
  HealthCluster(std::vector<WatchKind> kinds, rpc::ClientOptions co) {
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      auto p = std::make_unique<Provider>();
      p->name = "p" + std::to_string(i);
      p->kind = kinds[i];
      serve(*p, 0);
      const auto ep = p->server->local_endpoint();
      p->peer = ep.address().to_string() + ":" + std::to_string(ep.port());
      endpoints.push_back(ep);
      providers.push_back(std::move(p));
    }
    client.emplace(threads.io.get_executor(), timer, endpoints, co);
  }
  ~HealthCluster() {
    if (client) client->close();
    for (auto& p : providers) p->server->stop();
    threads.stop();
  }

  /// Provider `i`'s server stops (its connections close) and a new one
  /// listens on the same port (once the old one's socket closed: its stop
  /// closes it on the executor).
  bool restart(std::size_t i) {
    Provider& p = *providers[i];
    p.server->stop();
    return wait_until([&] {
      p.stopped.push_back(std::move(p.server));
      return !serve(p, endpoints[i].port(), /*may_fail=*/true);
    });
  }

  /// Makes `p`'s server and listens on `port` (0: any); its error.
  error_code serve(Provider& p, unsigned short port, bool may_fail = false) {
    rpc::ServerOptions so;
    so.health_service = false;  // the test's own Watch (or none)
    p.server = std::make_unique<rpc::Server>(threads.io.get_executor(), timer, so);
    Provider* raw = &p;
    {
      p.server->handle("who", [raw](rpc::Request, rpc::Responder r) {
        {
          std::lock_guard lock(raw->held_mu);
          if (!raw->first_call) raw->first_call = Clock::now();
        }
        raw->calls.fetch_add(1);
        r.reply(raw->name);
      });
      p.server->handle("hold", [raw](rpc::Request, rpc::Responder r) {
        std::lock_guard lock(raw->held_mu);
        raw->held.push_back(std::move(r));
      });
      if (p.kind == WatchKind::scripted) {
        p.server->handle_stream(kWatch, [raw](rpc::ServerStream s) { raw->health.on_watch(std::move(s)); });
      } else if (p.kind == WatchKind::unary) {
        p.server->handle(kWatch, [](rpc::Request, rpc::Responder r) { r.reply(""); });
      }
    }
    auto at = wheelrpc::test::loopback0();
    at.port(port);
    const auto ec = p.server->listen(at);
    if (ec && !may_fail) throw boost::system::system_error(ec);
    return ec;
  }

  /// What the client's connection to provider `i` says of its health ("": none).
  std::string health(std::size_t i) const {
    for (const auto& c : client->connections()) {
      if (c.remote == providers[i]->peer) return c.health;
    }
    return "(no connection)";
  }
  /// The client takes provider `i` as ready for calls.
  bool ready(std::size_t i) const {
    for (const auto& p : client->providers()) {
      if (p.peer == providers[i]->peer) return p.ready;
    }
    return false;
  }
  std::string who(std::chrono::milliseconds timeout = 10s) {
    rpc::CallOptions o;
    o.timeout = timeout;
    auto out = wheelrpc::test::call_and_wait(*client, "who", "", o);
    EXPECT_FALSE(out.ec) << out.response.error_message;
    return out.response.payload;
  }

  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads threads;
  std::vector<std::unique_ptr<Provider>> providers;
  std::vector<asio::ip::tcp::endpoint> endpoints;
  std::optional<rpc::Client> client;
};

rpc::ClientOptions health_options(rpc::WireProtocol wire, std::string service = {}) {
  rpc::ClientOptions co;
  co.protocol = wire;
  co.health_check.enabled = true;
  co.health_check.service = std::move(service);
  return co;
}

class ClientHealthCheck : public ::testing::TestWithParam<rpc::WireProtocol> {};

std::string wire_name(const ::testing::TestParamInfo<rpc::WireProtocol>& info) {
  return info.param == rpc::WireProtocol::grpc ? "Grpc" : "Native";
}

// ---------------------------------------------------------------- NOT_SERVING and back

TEST_P(ClientHealthCheck, ANotServingProviderGetsNoNewCallsWhileItsCallInFlightFinishes) {
  HealthCluster c({WatchKind::scripted, WatchKind::scripted}, health_options(GetParam(), "echo.Echo"));
  c.client->connect();
  ASSERT_TRUE(wait_until([&] { return c.ready(0) && c.ready(1); })) << c.health(0) << " " << c.health(1);
  EXPECT_EQ(c.health(0), "serving");
  EXPECT_EQ(c.health(1), "serving");
  for (auto& p : c.providers) {
    ASSERT_EQ(p->health.opened(), 1);  // exactly one watch per connection
    EXPECT_EQ(p->health.services(), std::vector<std::string>{"echo.Echo"});
  }

  // A call in flight on one provider...
  rpc::CallOptions o;
  o.timeout = 30s;
  auto held = start(*c.client, "hold", "", o);
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() + c.providers[1]->held_count() == 1; }));
  const std::size_t a = c.providers[0]->held_count() == 1 ? 0 : 1, b = 1 - a;

  // ...which then says NOT_SERVING: every new call goes to the other.
  c.providers[a]->health.set(kNotServing);
  ASSERT_TRUE(wait_until([&] { return !c.ready(a) && c.health(a) == "not_serving"; })) << c.health(a);
  const int calls_before = c.providers[a]->calls.load();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(c.who(), c.providers[b]->name);
  EXPECT_EQ(c.providers[a]->calls.load(), calls_before);

  // The call in flight on it finishes normally.
  c.providers[a]->release_held();
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
  auto out = held.get();
  EXPECT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, c.providers[a]->name);

  // SERVING again: it gets calls again.
  c.providers[a]->health.set(kServing);
  ASSERT_TRUE(wait_until([&] { return c.ready(a) && c.health(a) == "serving"; })) << c.health(a);
  int to_a = 0;
  for (int i = 0; i < 20; ++i) to_a += c.who() == c.providers[a]->name;
  EXPECT_GE(to_a, 5);                             // round robin: about half
  EXPECT_EQ(c.providers[a]->health.opened(), 1);  // the same watch said it all
}

TEST_P(ClientHealthCheck, EveryPolicySkipsAnUnhealthyProvider) {
  for (auto lb : {rpc::LoadBalance::round_robin, rpc::LoadBalance::least_active, rpc::LoadBalance::power_of_two}) {
    auto co = health_options(GetParam());
    co.load_balance = lb;
    HealthCluster c({WatchKind::scripted, WatchKind::scripted, WatchKind::scripted}, co);
    c.providers[1]->health.set(kNotServing);
    c.client->connect();
    ASSERT_TRUE(wait_until([&] { return c.ready(0) && c.ready(2) && c.health(1) == "not_serving"; }));
    for (int i = 0; i < 30; ++i) EXPECT_NE(c.who(), "p1") << rpc::to_string(lb);
    EXPECT_EQ(c.providers[1]->calls.load(), 0) << rpc::to_string(lb);
    EXPECT_GT(c.providers[0]->calls.load(), 0) << rpc::to_string(lb);
    EXPECT_GT(c.providers[2]->calls.load(), 0) << rpc::to_string(lb);
  }
}

TEST_P(ClientHealthCheck, WhenEveryProviderIsUnhealthyCallsFailAsWithNoneConnected) {
  HealthCluster c({WatchKind::scripted, WatchKind::scripted}, health_options(GetParam()));
  for (auto& p : c.providers) p->health.set(kNotServing);
  c.client->connect();
  ASSERT_TRUE(wait_until([&] { return c.health(0) == "not_serving" && c.health(1) == "not_serving"; }));

  // Not waiting for ready: UNAVAILABLE at once, saying why.
  rpc::CallOptions fast;
  fast.timeout = 20s;
  const auto t0 = Clock::now();
  auto out = wheelrpc::test::call_and_wait(*c.client, "who", "", fast);
  EXPECT_EQ(out.ec, rpc::errc::unavailable) << out.response.error_message;
  EXPECT_NE(out.response.error_message.find("NOT_SERVING"), std::string::npos) << out.response.error_message;
  std::cout << "fail fast: " << out.response.error_message << "\n";
  EXPECT_LT(Clock::now() - t0, 10s);

  // Waiting for ready: until its deadline, not past it.
  rpc::CallOptions patient;
  patient.timeout = 300ms;
  patient.wait_for_ready = true;
  const auto t1 = Clock::now();
  out = wheelrpc::test::call_and_wait(*c.client, "who", "", patient);
  EXPECT_TRUE(out.ec == rpc::errc::unavailable || out.ec == rpc::errc::timeout) << out.response.error_message;
  EXPECT_GE(Clock::now() - t1, 250ms);
  EXPECT_LT(Clock::now() - t1, 10s);

  // One waiting call goes as soon as a provider says SERVING.
  patient.timeout = 30s;
  auto waiting = start(*c.client, "who", "", patient);
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
  c.providers[1]->health.set(kServing);
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  out = waiting.get();
  EXPECT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  EXPECT_EQ(c.providers[0]->calls.load(), 0);
}

// ---------------------------------------------------------------- the first answer

TEST_P(ClientHealthCheck, ANewClientsFirstCallWaitsForTheFirstAnswer) {
  HealthCluster c({WatchKind::scripted}, health_options(GetParam()));
  c.providers[0]->health.answer_after(300ms);
  // Not waiting for ready: a provider whose watch has not answered yet is
  // worth waiting for (as a connection being made), not a reason to fail.
  rpc::CallOptions o;
  o.timeout = 20s;
  auto out = wheelrpc::test::call_and_wait(*c.client, "who", "", o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p0");
  const auto answered = c.providers[0]->health.first_answer();
  ASSERT_TRUE(answered.has_value());
  std::lock_guard lock(c.providers[0]->held_mu);
  ASSERT_TRUE(c.providers[0]->first_call.has_value());
  EXPECT_GE(*c.providers[0]->first_call, *answered);  // it went once the watch said SERVING
}

// ---------------------------------------------------------------- UNIMPLEMENTED

TEST_P(ClientHealthCheck, AProviderWithoutAHealthServiceIsUsedAndSaidOnce) {
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  // p0 has no Watch at all; p1 has the path as a unary method.
  HealthCluster c({WatchKind::none, WatchKind::unary}, health_options(GetParam()));
  c.client->connect();
  ASSERT_TRUE(wait_until([&] { return c.ready(0) && c.ready(1); })) << c.health(0) << " " << c.health(1);
  EXPECT_EQ(c.health(0), "unimplemented");
  EXPECT_EQ(c.health(1), "unimplemented");
  int to[2] = {0, 0};
  for (int i = 0; i < 20; ++i) ++to[c.who() == "p0" ? 0 : 1];
  EXPECT_GT(to[0], 0);
  EXPECT_GT(to[1], 0);
  EXPECT_EQ(log.count(c.providers[0]->peer + " has no health service"), 1u);
  EXPECT_EQ(log.count(c.providers[1]->peer + " has no health service"), 1u);
  for (const auto& line : log.lines()) {
    if (line.find("health") != std::string::npos) std::cout << line;
  }
}

// ---------------------------------------------------------------- restarts

TEST_P(ClientHealthCheck, AWatchThatFailsIsOpenedAgainAfterTheBackoff) {
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  auto co = health_options(GetParam());
  co.reconnect.initial = 400ms;  // the watch's backoff (ClientOptions::reconnect)
  co.reconnect.max = 400ms;
  co.reconnect.jitter = 0;
  HealthCluster c({WatchKind::scripted}, co);
  c.providers[0]->health.fail_next(1);
  c.client->connect();
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->health.fail_times().size() == 1; }));
  // Failed before any answer: no calls meanwhile.
  ASSERT_TRUE(wait_until([&] { return c.health(0) == "not_serving"; })) << c.health(0);
  EXPECT_FALSE(c.ready(0));
  ASSERT_TRUE(wait_until([&] { return c.ready(0); })) << c.health(0);
  EXPECT_EQ(c.health(0), "serving");
  const auto opens = c.providers[0]->health.open_times();
  const auto fails = c.providers[0]->health.fail_times();
  ASSERT_EQ(opens.size(), 2u);
  EXPECT_GE(opens[1] - fails[0], 400ms);  // the wait, on the client's timer
  EXPECT_EQ(c.who(), "p0");
  EXPECT_EQ(c.client->stats().calls, 1u);  // the watch is not a call
  EXPECT_EQ(c.client->stats().streams.opened, 0u);
  for (const auto& line : log.lines()) {
    if (line.find("health") != std::string::npos || line.find("no new calls") != std::string::npos) std::cout << line;
  }
}

TEST_P(ClientHealthCheck, TheWatchEndsWithItsConnectionAndStartsAgainOnTheNext) {
  auto co = health_options(GetParam());
  co.reconnect.initial = 50ms;  // reconnects come quickly
  co.reconnect.max = 100ms;
  HealthCluster c({WatchKind::scripted}, co);
  c.client->connect();
  ASSERT_TRUE(wait_until([&] { return c.ready(0); }));
  ASSERT_EQ(c.providers[0]->health.opened(), 1);
  c.providers[0]->health.set(kNotServing);
  ASSERT_TRUE(wait_until([&] { return !c.ready(0) && c.health(0) == "not_serving"; }));

  // A new server on the same port, SERVING: the new connection's own watch
  // decides (the old one's NOT_SERVING went with it).
  ASSERT_TRUE(c.restart(0));
  c.providers[0]->health.set(kServing);
  ASSERT_TRUE(wait_until([&] { return c.ready(0); })) << c.health(0);
  EXPECT_EQ(c.health(0), "serving");
  EXPECT_EQ(c.providers[0]->health.opened(), 2);  // one per connection
  EXPECT_EQ(c.who(), "p0");
}

// ---------------------------------------------------------------- off by default

TEST_P(ClientHealthCheck, OffByDefaultNoWatchIsOpened) {
  rpc::ClientOptions co;
  co.protocol = GetParam();
  HealthCluster c({WatchKind::scripted, WatchKind::scripted}, co);
  for (int i = 0; i < 10; ++i) c.who();
  EXPECT_EQ(c.providers[0]->health.opened(), 0);
  EXPECT_EQ(c.providers[1]->health.opened(), 0);
  EXPECT_EQ(c.health(0), "");
  EXPECT_EQ(c.client->stats().streams.opened, 0u);
}

INSTANTIATE_TEST_SUITE_P(Wires, ClientHealthCheck,
                         ::testing::Values(rpc::WireProtocol::native, rpc::WireProtocol::grpc), wire_name);

}  // namespace
