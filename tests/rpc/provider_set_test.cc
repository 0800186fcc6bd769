// A client that follows a provider source: providers join and leave at run
// time, those that leave drain and close, an empty set is ignored under empty
// protection, and every call completes exactly once through it all. The
// source here is the test itself (a registry or DNS source reports the same
// way). Bounded waits only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <wheelrpc/rpc/provider_source.h>

#include "support/cluster.h"
#include "support/log_capture.h"
#include "support/toxic.h"

#include "support/cluster_preamble.h"
using boost::asio::ip::tcp;

namespace {

/// A provider source the test drives by hand.
class ManualSource : public wheelrpc::rpc::ProviderSource {
 public:
  void start(Listener listener) override {
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
    started_ = true;
  }
  void stop() override {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  void connect_failed(const tcp::endpoint& ep) override {
    std::lock_guard lock(mu_);
    failed_.push_back(ep);
  }
  std::string describe() const override { return "test source"; }

  void report(std::vector<tcp::endpoint> eps) {
    std::lock_guard lock(mu_);
    ASSERT_TRUE(started_);
    listener_({}, std::move(eps), "");
  }
  void report_error(std::string why) {
    std::lock_guard lock(mu_);
    listener_(make_error_code(boost::system::errc::host_unreachable), {}, std::move(why));
  }
  bool stopped() {
    std::lock_guard lock(mu_);
    return stopped_;
  }
  std::size_t connect_failures() {
    std::lock_guard lock(mu_);
    return failed_.size();
  }

 private:
  std::mutex mu_;
  Listener listener_;
  bool started_ = false, stopped_ = false;
  std::vector<tcp::endpoint> failed_;
};

/// A cluster whose client follows a ManualSource instead of a fixed list.
struct SourcedCluster {
  explicit SourcedCluster(std::vector<Mode> modes, wheelrpc::rpc::ClientOptions co = wheelrpc::test::client_options())
      : c(std::move(modes)), source(std::make_shared<ManualSource>()) {
    c.client.emplace(c.io.io.get_executor(), c.timer, source, co);
  }
  tcp::endpoint ep(std::size_t i) const { return c.providers[i]->proxy->local_endpoint(); }
  std::string peer(std::size_t i) const { return ep(i).address().to_string() + ":" + std::to_string(ep(i).port()); }
  /// The client's providers of the current set ("removed" ones excluded).
  std::vector<std::string> current() const {
    std::vector<std::string> out;
    for (const auto& p : c.client->providers()) {
      if (!p.removed) out.push_back(p.peer);
    }
    return out;
  }
  /// Starts a call (20 s, 2 retries) that provider 0 (in `hold` mode) keeps,
  /// then reports a set of provider 1 alone: the call drains on a provider
  /// that left.
  std::future<Outcome> call_held_by_a_provider_that_leaves() {
    source->report({ep(0)});
    c.connect_all();
    CallOptions o = wheelrpc::test::opts(std::chrono::seconds(20));
    o.retries = 2;
    auto f = start(c, "work", "", o);
    EXPECT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
    source->report({ep(1)});
    return f;
  }
  Outcome call(CallOptions o = wheelrpc::test::opts(5s)) {
    auto f = start(c, "work", "", o);
    return wheelrpc::test::wait(f);
  }

  Cluster c;
  std::shared_ptr<ManualSource> source;
};

TEST(ProviderSet, CallsWaitForTheFirstSetThenGoToIt) {
  SourcedCluster s({Mode::reply});
  auto f = start(s.c, "work", "", wheelrpc::test::opts(10s));
  EXPECT_FALSE(wheelrpc::test::done(f)) << "no provider yet: the call waits";
  s.source->report({s.ep(0)});
  auto out = wheelrpc::test::wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p0");
  EXPECT_EQ(s.c.client->stats().provider_sets, 1u);
}

TEST(ProviderSet, SourceStateSaysAtOnceWhetherThereIsNothingToWaitFor) {
  {
    SourcedCluster s({Mode::reply});
    auto st = s.c.client->source_state();
    EXPECT_EQ(st.source, "test source");
    EXPECT_FALSE(st.reported);
    EXPECT_TRUE(st.error.empty()) << "no answer yet: nothing known, nothing wrong";
    s.source->report_error("host name 'x.invalid' does not resolve: Host not found");
    st = s.c.client->source_state();
    EXPECT_FALSE(st.reported);
    EXPECT_EQ(st.providers, 0u);
    EXPECT_EQ(st.error, "test source: host name 'x.invalid' does not resolve: Host not found");
    s.source->report({s.ep(0)});
    st = s.c.client->source_state();
    EXPECT_TRUE(st.reported);
    EXPECT_EQ(st.providers, 1u);
    EXPECT_TRUE(st.error.empty()) << st.error;
  }
  // An empty first set (empty protection on: nothing to keep) is known to be
  // empty, and says why.
  wheelrpc::test::LogCapture log("wheelrpc.rpc");
  SourcedCluster s({Mode::reply});
  s.source->report({});
  const auto st = s.c.client->source_state();
  EXPECT_TRUE(st.reported);
  EXPECT_EQ(st.providers, 0u);
  EXPECT_EQ(st.error, "test source has no providers");
  EXPECT_EQ(log.count("test source has no providers"), 1u);
  EXPECT_EQ(log.count("empty protection"), 0u) << "nothing was ever known: nothing is kept";
  auto out = s.call(wheelrpc::test::opts(5s));
  EXPECT_EQ(out.ec, wheelrpc::rpc::errc::unavailable);
  EXPECT_TRUE(wheelrpc::test::contains(out.response.error_message, "no provider: test source has no providers"))
      << out.response.error_message;
}

TEST(ProviderSet, ASourceThatFailsFirstFailsCallsThatDoNotWaitForReady) {
  SourcedCluster s({Mode::reply});
  s.source->report_error("no such host: example.invalid");
  auto out = s.call(wheelrpc::test::opts(5s));
  EXPECT_EQ(out.ec, wheelrpc::rpc::errc::unavailable);
  EXPECT_TRUE(wheelrpc::test::contains(out.response.error_message, "no provider yet")) << out.response.error_message;
  EXPECT_TRUE(wheelrpc::test::contains(out.response.error_message, "example.invalid")) << out.response.error_message;
  EXPECT_LT(out.took, 4s) << "failed fast, not at the deadline";
  // A set that comes later is used.
  s.source->report({s.ep(0)});
  out = s.call();
  EXPECT_FALSE(out.ec) << out.response.error_message;
}

TEST(ProviderSet, ANewProviderGetsCallsAndARemovedOneGetsNoMore) {
  SourcedCluster s({Mode::reply, Mode::reply});
  s.source->report({s.ep(0)});
  ASSERT_FALSE(s.call().ec);
  s.source->report({s.ep(0), s.ep(1)});
  // The client is in use: the new provider is connected at once.
  ASSERT_TRUE(wait_until([&] {
    auto ps = s.c.client->providers();
    return ps.size() == 2 && ps[1].ready;
  }));
  int p1 = 0;
  for (int i = 0; i < 20; ++i) p1 += s.call().response.payload == "p1";
  EXPECT_GE(p1, 5) << "round robin reaches the new provider";

  s.source->report({s.ep(1)});
  EXPECT_EQ(s.current(), std::vector<std::string>{s.peer(1)});
  const int before = s.c.providers[0]->requests();
  for (int i = 0; i < 20; ++i) {
    auto out = s.call();
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "p1");
  }
  EXPECT_EQ(s.c.providers[0]->requests(), before) << "no attempt goes to a provider that left";
  // Nothing was in flight on p0: its connection is closed and forgotten.
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->server.stats().connections == 0; }));
  // It is listed as removed, with its counters.
  auto ps = s.c.client->providers();
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_TRUE(ps[1].removed);
  EXPECT_EQ(ps[1].peer, s.peer(0));
  EXPECT_GE(ps[1].attempts, 10u);
  const auto st = s.c.client->stats();
  EXPECT_EQ(st.provider_sets, 3u);
  EXPECT_EQ(st.providers_added, 2u);
  EXPECT_EQ(st.providers_removed, 1u);
}

TEST(ProviderSet, CallsInFlightOnARemovedProviderFinishThenItsChannelCloses) {
  // p0 holds the calls until the test has seen them drain (a reply after a
  // fixed delay could come before a slow test thread looked).
  SourcedCluster s({Mode::hold, Mode::reply});
  s.source->report({s.ep(0)});
  s.c.connect_all();
  std::vector<std::future<Outcome>> inflight;
  for (int i = 0; i < 4; ++i) inflight.push_back(start(s.c, "work", "", wheelrpc::test::opts(10s)));
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->held_count() == 4; }));
  s.source->report({s.ep(1)});
  auto ps = s.c.client->providers();
  ASSERT_EQ(ps.size(), 2u) << "p0 drains";
  EXPECT_TRUE(ps[1].removed);
  EXPECT_EQ(ps[1].active, 4u);
  {
    std::lock_guard lock(s.c.providers[0]->mu);
    for (auto& h : s.c.providers[0]->held) h.reply("p0");
  }
  for (auto& f : inflight) {
    auto out = wheelrpc::test::wait(f);
    EXPECT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "p0") << "finished where it was sent";
  }
  // Drained: closed at once, not after the grace.
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->server.stats().connections == 0; }, 5s));
  ASSERT_TRUE(wait_until([&] { return s.c.client->providers().back().active == 0; }));
}

TEST(ProviderSet, ADrainingConnectionKeepsItsHeartbeatsSoNeitherSideClosesItAsIdle) {
  // The servers idle-close a connection that sends nothing for three
  // heartbeats (900 ms here: a 300 ms heartbeat, so a stall on a loaded
  // machine is not mistaken for silence); the call below is held far longer.
  auto co = wheelrpc::test::client_options();
  co.heartbeat = 300ms;
  SourcedCluster s({Mode::hold, Mode::reply}, co);
  auto f = s.call_held_by_a_provider_that_leaves();
  auto heartbeats_to_p0 = [&]() -> std::uint64_t {
    for (const auto& row : s.c.client->connections()) {
      if (row.remote == s.peer(0)) return row.heartbeats_sent;
    }
    return 0;
  };
  const auto before = heartbeats_to_p0();
  ASSERT_TRUE(wait_until([&] { return heartbeats_to_p0() >= before + 5; }, 15s))
      << "a provider that left still heartbeats while a call drains on it";
  EXPECT_EQ(s.c.providers[0]->server.stats().idle_closes, 0u);
  EXPECT_EQ(s.c.providers[0]->server.stats().connections, 1u);
  {
    std::lock_guard lock(s.c.providers[0]->mu);
    s.c.providers[0]->held.front().reply("p0");
  }
  auto out = wheelrpc::test::wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p0") << "finished where it was sent";
  EXPECT_EQ(s.c.client->stats().retries, 0u);
  // Drained: closed at once, not after the grace.
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->server.stats().connections == 0; }, 5s));
}

TEST(ProviderSet, ARemovedProvidersCallsBeyondTheGraceAreRetriedElsewhere) {
  auto co = wheelrpc::test::client_options();
  co.removal_grace = 200ms;
  SourcedCluster s({Mode::hold, Mode::reply}, co);
  auto f = s.call_held_by_a_provider_that_leaves();
  // The CloseTimerTask closes p0's channel 200 ms after it left the set
  // (heartbeats or not); the call, lost with it, is retried on p1.
  auto out = wheelrpc::test::wait(f);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p1");
  EXPECT_EQ(s.c.client->stats().retries, 1u);
  EXPECT_EQ(s.current(), std::vector<std::string>{s.peer(1)});
}

TEST(ProviderSet, AProviderThatLeftAndCameBackGoesOnCountingFromWhereItWas) {
  SourcedCluster s({Mode::reply, Mode::reply});
  s.source->report({s.ep(0), s.ep(1)});
  // Round robin goes over the ready providers only: both connect first, or
  // on a slow machine every call could go to p1 while p0 is still connecting.
  s.c.connect_all();
  for (int i = 0; i < 10; ++i) ASSERT_FALSE(s.call().ec);
  s.source->report({s.ep(1)});
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->server.stats().connections == 0; }));
  const auto before = s.c.client->providers().back().attempts;
  EXPECT_GE(before, 1u);
  s.source->report({s.ep(0), s.ep(1)});
  s.c.connect_all();  // p0 back and connected again
  for (int i = 0; i < 10; ++i) ASSERT_FALSE(s.call().ec);
  auto ps = s.c.client->providers();
  ASSERT_EQ(ps.size(), 2u) << "back in the set, no longer listed as left";
  EXPECT_FALSE(ps[0].removed);
  EXPECT_GT(ps[0].attempts, before) << "counted on from " << before;
}

TEST(ProviderSet, AProviderBackBeforeItClosedKeepsItsConnection) {
  // A 1 s heartbeat (3 s idle timeouts on both sides): a stall on a loaded
  // machine must not close the connection this test expects to be kept.
  auto co = wheelrpc::test::client_options();
  co.heartbeat = 1s;
  SourcedCluster s({Mode::delay, Mode::reply}, co);
  s.c.providers[0]->delay = 500ms;
  s.source->report({s.ep(0), s.ep(1)});
  s.c.connect_all();
  const auto connects = s.c.client->stats().connects;
  auto f = start(s.c, "work", "", wheelrpc::test::opts(10s));
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->requests() == 1; }));
  s.source->report({s.ep(1)});
  s.source->report({s.ep(0), s.ep(1)});
  EXPECT_EQ(s.current().size(), 2u);
  auto out = wheelrpc::test::wait(f);
  EXPECT_FALSE(out.ec) << out.response.error_message;
  s.c.providers[0]->mode = Mode::reply;
  for (int i = 0; i < 10; ++i) ASSERT_FALSE(s.call().ec);
  EXPECT_EQ(s.c.client->stats().connects, connects) << "the same connection, not a new one";
  EXPECT_EQ(s.c.providers[0]->server.stats().accepted, 1u);
}

TEST(ProviderSet, EmptyProtectionKeepsTheLastSet) {
  SourcedCluster s({Mode::reply});
  s.source->report({s.ep(0)});
  ASSERT_FALSE(s.call().ec);
  s.source->report({});
  EXPECT_EQ(s.current(), std::vector<std::string>{s.peer(0)});
  auto out = s.call();
  EXPECT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(s.c.client->stats().empty_sets_ignored, 1u);
}

TEST(ProviderSet, WithoutEmptyProtectionAnEmptySetFailsCallsFast) {
  auto co = wheelrpc::test::client_options();
  co.empty_protection = false;
  SourcedCluster s({Mode::reply}, co);
  s.source->report({s.ep(0)});
  ASSERT_FALSE(s.call().ec);
  s.source->report({});
  EXPECT_TRUE(s.current().empty());
  auto out = s.call(wheelrpc::test::opts(5s));
  EXPECT_EQ(out.ec, wheelrpc::rpc::errc::unavailable);
  EXPECT_TRUE(wheelrpc::test::contains(out.response.error_message, "test source has no providers"))
      << out.response.error_message;
  EXPECT_LT(out.took, 4s);
  // A call that waits for ready is served once a provider comes back.
  CallOptions o = wheelrpc::test::opts(10s);
  o.wait_for_ready = true;
  auto f = start(s.c, "work", "", o);
  EXPECT_FALSE(wheelrpc::test::done(f));
  s.source->report({s.ep(0)});
  out = wheelrpc::test::wait(f);
  EXPECT_FALSE(out.ec) << out.response.error_message;
}

TEST(ProviderSet, AFailedConnectIsToldToTheSource) {
  SourcedCluster s({Mode::reply});
  s.c.providers[0]->proxy->stop();  // nothing listens there any more
  s.source->report({s.ep(0)});
  auto out = s.call(wheelrpc::test::opts(5s));
  EXPECT_EQ(out.ec, wheelrpc::rpc::errc::unavailable);
  EXPECT_GE(s.source->connect_failures(), 1u);
}

TEST(ProviderSet, ASetReportedOnAnIoThreadClosesTheProvidersThatLeft) {
  // A registry reports on its strand, an I/O thread: closing a provider that
  // left may then run the channel's close handler inline.
  SourcedCluster s({Mode::reply, Mode::reply});
  s.source->report({s.ep(0), s.ep(1)});
  s.c.connect_all();
  std::promise<void> reported;
  boost::asio::post(s.c.io.io, [&] {
    s.source->report({s.ep(1)});
    reported.set_value();
  });
  ASSERT_EQ(reported.get_future().wait_for(10s), std::future_status::ready) << "the report never returned";
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->server.stats().connections == 0; }));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.call().response.payload, "p1");
}

TEST(ProviderSet, CloseStopsTheSource) {
  SourcedCluster s({Mode::reply});
  s.c.client->close();
  EXPECT_TRUE(s.source->stopped());
  s.source->report({s.ep(0)});  // ignored after close
  EXPECT_TRUE(s.c.client->providers().empty());
}

TEST(ProviderSet, ACallWaitingForASetWithNoReadyProviderGoesWhenAReadyOneComesBack) {
  // p0 leaves while a call is in flight on it (so its channel stays open,
  // ready, draining); the set is then p1 alone, which is down, so a new call
  // waits. When p0 comes back it is ready at once, with no HELLO exchange to
  // wake the waiting call: the new set must.
  SourcedCluster s({Mode::delay, Mode::reply});
  s.c.providers[0]->delay = 1500ms;
  s.c.providers[1]->proxy->down();
  s.source->report({s.ep(0)});
  auto x = start(s.c, "work", "", wheelrpc::test::opts(20s));
  ASSERT_TRUE(wait_until([&] { return s.c.providers[0]->server.stats().in_flight == 1; }));
  s.source->report({s.ep(1)});
  CallOptions o = wheelrpc::test::opts(20s);
  o.wait_for_ready = true;
  auto y = start(s.c, "work", "", o);
  ASSERT_TRUE(wait_until([&] { return s.c.client->stats().connect_failures >= 1; }));
  EXPECT_FALSE(wheelrpc::test::done(y)) << "p1 is down: the call waits";
  s.source->report({s.ep(0)});
  const auto out_y = wheelrpc::test::wait(y);
  ASSERT_FALSE(out_y.ec) << out_y.response.error_message;
  EXPECT_EQ(out_y.response.payload, "p0");
  EXPECT_LT(out_y.took, 15s) << "it went when p0 came back, not at its deadline";
  EXPECT_FALSE(wheelrpc::test::wait(x).ec);
}

// p0's connection is still in its handshake when p0 leaves the set and comes
// back before the close for leaving has run. That close is this client's own
// doing, not a failed connect: p0 must not be put in backoff, and a call that
// does not wait for ready must not fail fast with "every provider is in
// backoff" (seen with a churning set on a loaded machine).
TEST(ProviderSet, AProviderBackBeforeItsHandshakeWasClosedIsNotInBackoff) {
  auto co = wheelrpc::test::client_options();
  co.connect_timeout = 30s;  // the handshake below stays in progress, however slow the machine
  SourcedCluster s({Mode::reply, Mode::reply}, co);
  // The server's HELLO answer never reaches the client while this is on.
  ASSERT_FALSE(s.c.providers[0]->proxy->add_toxic(
      wheelrpc::test::toxic("no_hello", wheelrpc::fault::Stream::downstream, wheelrpc::fault::Blackhole{})));
  s.source->report({s.ep(0)});
  s.c.client->connect();  // (not connect_all: that waits for ready)
  ASSERT_TRUE(wait_until([&] {
    const auto conns = s.c.client->connections();
    return conns.size() == 1 && conns[0].state == wheelrpc::rpc::ConnectionInfo::State::connecting &&
           !conns[0].local.empty();  // TCP connected, HELLO sent, no answer yet
  }));
  // Every io thread held (let go on any way out of this test), so the close
  // that leaving asks for runs only after p0 is back.
  struct Release {
    std::promise<void> promise;
    bool done = false;
    void operator()() {
      if (!std::exchange(done, true)) promise.set_value();
    }
    ~Release() { (*this)(); }
  } release;
  std::shared_future<void> released = release.promise.get_future().share();
  std::atomic<int> held{0};
  for (int i = 0; i < s.c.io.size(); ++i) {
    boost::asio::post(s.c.io.io, [&held, released] {
      held.fetch_add(1);
      released.wait();
    });
  }
  ASSERT_TRUE(wait_until([&] { return held.load() == s.c.io.size(); }));
  s.source->report({s.ep(1)});  // p0 leaves (an empty set would be ignored)
  s.source->report({s.ep(0)});  // and is back
  release();
  ASSERT_FALSE(s.c.providers[0]->proxy->remove_toxic("no_hello"));
  // The close lands. p0 is not in backoff: the call waits for it to reconnect.
  const auto out = s.call(wheelrpc::test::opts(10s));  // does not wait for ready
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p0");
  for (const auto& p : s.c.client->providers()) {
    if (!p.removed) {
      EXPECT_EQ(p.last_error, "") << p.peer;
    }
  }
}

TEST(ProviderSet, EveryCallCompletesOnceWhileTheSetChurns) {
  SourcedCluster s({Mode::delay, Mode::delay, Mode::delay});
  for (auto& p : s.c.providers) p->delay = 2ms;
  s.source->report({s.ep(0), s.ep(1), s.ep(2)});
  s.c.connect_all();
  CallOptions o = wheelrpc::test::opts(10s);
  o.retries = 2;
  const std::vector<std::vector<std::size_t>> sets = {{0, 1}, {1, 2}, {2}, {0, 2}, {0, 1, 2}, {1}};
  std::vector<std::future<Outcome>> fs;
  for (int round = 0; round < 30; ++round) {
    for (int i = 0; i < 8; ++i) fs.push_back(start(s.c, "work", "", o));
    std::vector<tcp::endpoint> eps;
    for (auto i : sets[round % sets.size()]) eps.push_back(s.ep(i));
    s.source->report(eps);
  }
  int ok = 0;
  for (auto& f : fs) {
    auto out = wheelrpc::test::wait(f);  // a second completion would throw
    ok += !out.ec;
    EXPECT_FALSE(out.ec) << out.response.error_message;
  }
  EXPECT_EQ(ok, static_cast<int>(fs.size()));
  const auto st = s.c.client->stats();
  EXPECT_EQ(st.calls, fs.size() + 0u);
  EXPECT_EQ(st.pending, 0u);
}

}  // namespace
