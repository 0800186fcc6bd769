// Outlier detection and load-aware balancing (docs/load_balancing.md): the
// pure parts (what counts as a provider's failure, failures in a row,
// probation, setting outliers aside in a pick, the load-aware order), the
// review on a real timer (who is ejected and why, the share limit, the
// ejection's end and its doubling, load factors), and end to end on both
// wires with real servers: a flaky provider is ejected with no failed call
// and comes back once healed, a slow one is ejected by latency, load-aware
// balancing sends a slow one little. Real time, generous deadlines.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "base/orca_load_report.h"
#include "client/load_balancer.h"
#include "client/outlier_stats.h"
#include "client/provider_review.h"
#include "support/driven_source.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

namespace {

using namespace std::chrono_literals;
namespace rpc = wheelrpc::rpc;
using rpc::Status;
using rpc::WireProtocol;
using rpc::detail::OutlierStats;
using rpc::detail::ProviderReview;
using rpc::detail::ProviderSnapshot;
using wheelrpc::test::IoThreads;
using wheelrpc::test::wait_until;
using Verdict = OutlierStats::Verdict;
using State = OutlierStats::State;

Status code_status(rpc::StatusCode c) {
  return static_cast<Status>(static_cast<int>(Status::first_code) + static_cast<int>(c));
}

TEST(OutlierStats, AFailureOfTheServerCountsAndOneOfTheCallerDoesNot) {
  for (auto s : {Status::server_timeout, Status::server_error, Status::overloaded,
                 code_status(rpc::StatusCode::internal), code_status(rpc::StatusCode::unavailable),
                 code_status(rpc::StatusCode::unknown), code_status(rpc::StatusCode::resource_exhausted),
                 code_status(rpc::StatusCode::deadline_exceeded), code_status(rpc::StatusCode::data_loss)}) {
    EXPECT_TRUE(OutlierStats::provider_failure(s)) << static_cast<int>(s);
  }
  for (auto s : {Status::ok, Status::method_not_found, Status::bad_request, Status::shutting_down,
                 code_status(rpc::StatusCode::not_found), code_status(rpc::StatusCode::invalid_argument),
                 code_status(rpc::StatusCode::permission_denied), code_status(rpc::StatusCode::unauthenticated)}) {
    EXPECT_FALSE(OutlierStats::provider_failure(s)) << static_cast<int>(s);
  }
  EXPECT_TRUE(OutlierStats::neutral(Status::shutting_down));
}

TEST(OutlierStats, TheLimitOfFailuresInARowAsksForALookOnceAndASuccessStartsOver) {
  OutlierStats s;
  EXPECT_EQ(s.record(true, -1, 3, 2), Verdict::none);
  EXPECT_EQ(s.record(true, -1, 3, 2), Verdict::none);
  EXPECT_EQ(s.record(false, 1000, 3, 2), Verdict::none);  // starts over
  EXPECT_EQ(s.record(true, -1, 3, 2), Verdict::none);
  EXPECT_EQ(s.record(true, -1, 3, 2), Verdict::none);
  EXPECT_EQ(s.record(true, -1, 3, 2), Verdict::look_now);
  EXPECT_EQ(s.record(true, -1, 3, 2), Verdict::none) << "asked once";
  const auto iv = s.take();
  EXPECT_EQ(iv.failed, 6u);
  EXPECT_EQ(iv.ok, 1u);
  EXPECT_EQ(iv.replied, 1u);
  EXPECT_EQ(iv.latency_ns, 1000u);
  EXPECT_EQ(s.take().ended(), 0u) << "taken and reset";
  EXPECT_EQ(OutlierStats().record(true, -1, 0, 2), Verdict::none) << "0 turns the check off";
}

TEST(OutlierStats, ProbationEndsAfterEnoughGoodProbesAndFailsOnABadOrSlowOne) {
  OutlierStats s;
  s.set_state(State::probation);
  EXPECT_EQ(s.record(false, 10, 0, 3), Verdict::none);
  EXPECT_EQ(s.record(false, 10, 0, 3), Verdict::none);
  EXPECT_EQ(s.record(false, 10, 0, 3), Verdict::probe_ok);
  s.set_state(State::probation);
  EXPECT_EQ(s.record(true, -1, 0, 3), Verdict::probe_failed);
  s.set_state(State::probation);
  s.set_probe_latency_limit(1'000'000);
  EXPECT_EQ(s.record(false, 5'000'000, 0, 3), Verdict::probe_failed) << "too slow";
  s.set_state(State::ejected);
  EXPECT_EQ(s.record(true, -1, 1, 3), Verdict::none) << "ejected: attempts sent before it end quietly";
}

TEST(OutlierStats, ALoadReportIsReadFromItsAttachmentAndAMalformedOneIgnored) {
  rpc::detail::LoadReport r;
  r.cpu_utilization = 0.5;
  r.rps_fractional = 200;
  OutlierStats s;
  EXPECT_TRUE(s.read_report({{"x", "y"}, {std::string(rpc::detail::kLoadReportKey), encode(r)}}, 42));
  EXPECT_DOUBLE_EQ(s.report_utilization(), 0.5);
  EXPECT_DOUBLE_EQ(s.report_rps(), 200);
  EXPECT_EQ(s.report_at_ns(), 42);
  r.application_utilization = 0.25;  // the application's wins over the CPU's
  EXPECT_TRUE(s.read_report({{std::string(rpc::detail::kLoadReportKey), encode(r)}}, 43));
  EXPECT_DOUBLE_EQ(s.report_utilization(), 0.25);
  EXPECT_FALSE(s.read_report({{std::string(rpc::detail::kLoadReportKey), "\x09\x01"}}, 44)) << "truncated";
  EXPECT_EQ(s.report_at_ns(), 43) << "the last good one stands";
  EXPECT_FALSE(s.read_report({}, 45));
}

TEST(SetAsideOutliers, TheEjectedServeOnlyWhenNoOtherCanAndAProbeGoesOneAtATime) {
  std::array<ProviderSnapshot, 3> p{};
  for (auto& x : p) x.ready = true;
  p[0].ejected = true;
  rpc::detail::set_aside_outliers(p, {});
  EXPECT_FALSE(p[0].ready);
  EXPECT_TRUE(p[1].ready && p[2].ready);

  std::array<ProviderSnapshot, 2> q{};
  q[0].ready = true;
  q[0].ejected = true;
  q[1].ready = false;  // the only other one is down: the ejected one serves
  rpc::detail::set_aside_outliers(q, {});
  EXPECT_TRUE(q[0].ready);

  std::array<ProviderSnapshot, 2> r{};
  r[0].ready = r[1].ready = true;
  r[0].ejected = true;
  const std::array<std::size_t, 1> exclude{1};  // the call already waits on the other
  rpc::detail::set_aside_outliers(r, exclude);
  EXPECT_TRUE(r[0].ready);

  std::array<ProviderSnapshot, 2> probe{};
  probe[0].ready = probe[1].ready = true;
  probe[0].probing = true;
  probe[0].active = 1;
  rpc::detail::set_aside_outliers(probe, {});
  EXPECT_FALSE(probe[0].ready) << "its probe is in flight";
  probe[0].ready = true;
  probe[0].active = 0;
  rpc::detail::set_aside_outliers(probe, {});
  EXPECT_TRUE(probe[0].ready) << "no probe in flight: it may get one";
}

TEST(LoadAwareBalancer, SharesFollowTheScaledWeightsInASmoothOrder) {
  auto lb = rpc::detail::make_load_balancer(rpc::LoadBalance::load_aware);
  EXPECT_EQ(lb->policy(), rpc::LoadBalance::load_aware);
  std::array<ProviderSnapshot, 3> p{};
  for (auto& x : p) x.ready = true;
  p[0].weight = 100;
  p[1].weight = 100;
  p[2].weight = 2;  // a load factor of 2 per cent
  std::array<int, 3> n{};
  for (int i = 0; i < 2020; ++i) ++n[*lb->choose(p)];
  EXPECT_EQ(n[2], 20);
  EXPECT_EQ(n[0], 1000);
  EXPECT_EQ(rpc::parse_load_balance("load_aware"), rpc::LoadBalance::load_aware);
  EXPECT_STREQ(rpc::to_string(rpc::LoadBalance::load_aware), "load_aware");
}

TEST(LoadAwareBalancer, AProviderWithCallsInFlightYieldsItsTurnToAnIdlerOne) {
  auto lb = rpc::detail::make_load_balancer(rpc::LoadBalance::load_aware);
  std::array<ProviderSnapshot, 3> p{};
  for (auto& x : p) x.ready = true;
  p[0].weight = 100;
  p[1].weight = 100;
  p[2].weight = 2;  // slow: its floor share
  // Busy client: the slow one holds a call; its turns go to the others.
  p[0].active = 10;
  p[1].active = 12;
  p[2].active = 1;  // 1 / 2 per unit of weight, far above 10 / 100
  std::array<int, 3> n{};
  for (int i = 0; i < 2020; ++i) ++n[*lb->choose(p)];
  EXPECT_EQ(n[2], 0);
  EXPECT_EQ(n[0] + n[1], 2020);
  EXPECT_GT(n[0], 1000) << "the slow one's turns went to the least loaded";
  // Once its call ended, it has its floor share again (its recovery is seen).
  p[2].active = 0;
  n = {};
  for (int i = 0; i < 2020; ++i) ++n[*lb->choose(p)];
  EXPECT_EQ(n[2], 20);
  // Equal weights, in-flight counts within a factor of two: the smooth order stands.
  p[2].weight = 100;
  p[0].active = 10;
  p[1].active = 12;
  p[2].active = 15;
  n = {};
  for (int i = 0; i < 300; ++i) ++n[*lb->choose(p)];
  EXPECT_EQ(n, (std::array<int, 3>{100, 100, 100}));
  // One holding over twice the others' load: its turns go to the least loaded.
  p[2].active = 30;
  n = {};
  for (int i = 0; i < 300; ++i) ++n[*lb->choose(p)];
  EXPECT_EQ(n, (std::array<int, 3>{200, 100, 0}));
}

// ---------------------------------------------------------------- the review, on a real timer

struct ReviewRig {
  explicit ReviewRig(rpc::OutlierDetectionOptions o, std::size_t n = 3) {
    review = std::make_shared<ProviderReview>(io.io.get_executor(), timer, nullptr, o, true);
    std::vector<rpc::detail::Reviewed> tracked;
    for (std::size_t i = 0; i < n; ++i) {
      stats.push_back(std::make_shared<OutlierStats>());
      tracked.push_back({stats.back(), "p" + std::to_string(i)});
    }
    review->track(tracked);
  }
  ~ReviewRig() { review->close(); }
  /// `ok` replies of `latency` and `failed` failures on provider `i`.
  void feed(std::size_t i, int ok, int failed, std::chrono::nanoseconds latency = 200us) {
    for (int k = 0; k < ok; ++k) stats[i]->record(false, latency.count(), 0, 3);
    for (int k = 0; k < failed; ++k) stats[i]->record(true, -1, 0, 3);
  }
  State state(std::size_t i) const { return stats[i]->state(); }

  wheelrpc::timer::HashedWheelTimer timer;  // outlives the thread that may still use it
  IoThreads io{1};
  std::vector<std::shared_ptr<OutlierStats>> stats;
  std::shared_ptr<ProviderReview> review;
};

rpc::OutlierDetectionOptions review_options() {
  rpc::OutlierDetectionOptions o;
  o.enabled = true;
  o.interval = 1h;  // the tests call review() themselves
  o.base_ejection_time = 1h;
  o.max_ejection_time = 4h;
  return o;
}

TEST(ProviderReview, AProviderFailingThirtyPercentIsEjectedAndItsPeersAreNot) {
  ReviewRig rig(review_options());
  rig.feed(0, 70, 30);
  rig.feed(1, 100, 1);
  rig.feed(2, 100, 0);
  rig.review->review(std::chrono::steady_clock::now());
  EXPECT_EQ(rig.state(0), State::ejected);
  EXPECT_EQ(rig.state(1), State::healthy);
  EXPECT_EQ(rig.state(2), State::healthy);
  const auto v = rig.review->view(*rig.stats[0]);
  EXPECT_EQ(v.state, "ejected");
  EXPECT_NE(v.why.find("failed 30 of 100 attempts (30 %)"), std::string::npos) << v.why;
  EXPECT_GT(v.for_ms, 3'500'000);
  EXPECT_EQ(rig.review->ejections(), 1u);
  EXPECT_EQ(rig.review->ejected_now(), 1u);
}

TEST(ProviderReview, FewAttemptsOrFailuresAsCommonAsThePeersEjectNobody) {
  ReviewRig rig(review_options());
  rig.feed(0, 2, 5);  // below minimum_requests
  rig.feed(1, 85, 15);
  rig.feed(2, 85, 15);  // 15 %, but so do its peers
  rig.review->review(std::chrono::steady_clock::now());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(rig.state(i), State::healthy) << i;
}

TEST(ProviderReview, ALatencyOutlierIsEjectedAndAMerelySlowerPeerIsNot) {
  ReviewRig rig(review_options(), 4);
  rig.feed(0, 50, 0, 50ms);
  rig.feed(1, 50, 0, 300us);
  rig.feed(2, 50, 0, 250us);
  rig.feed(3, 50, 0, 600us);  // twice its peers, but far under the gap
  rig.review->review(std::chrono::steady_clock::now());
  EXPECT_EQ(rig.state(0), State::ejected);
  EXPECT_NE(rig.review->view(*rig.stats[0]).why.find("mean latency 50.0 ms"), std::string::npos)
      << rig.review->view(*rig.stats[0]).why;
  EXPECT_EQ(rig.state(3), State::healthy);
}

TEST(ProviderReview, NoMoreThanTheAllowedShareIsEjectedAtOnce) {
  auto o = review_options();
  o.max_ejection_percent = 50;
  ReviewRig rig(o, 3);
  for (std::size_t i = 0; i < 3; ++i) rig.feed(i, 30, 70 + static_cast<int>(i));
  rig.review->review(std::chrono::steady_clock::now());
  EXPECT_EQ(rig.review->ejected_now(), 1u) << "50 % of 3, rounded down";
  EXPECT_EQ(rig.state(2), State::ejected) << "the worst first";
}

TEST(ProviderReview, AnEjectionEndsInProbationAGoodProbeBringsItBackABadOneDoublesIt) {
  auto o = review_options();
  o.base_ejection_time = 100ms;
  o.max_ejection_time = 150ms;
  o.probe_successes = 2;
  ReviewRig rig(o);
  rig.feed(0, 40, 60);
  rig.review->review(std::chrono::steady_clock::now());
  ASSERT_EQ(rig.state(0), State::ejected);
  ASSERT_TRUE(wait_until([&] { return rig.state(0) == State::probation; }, 20s)) << "its ejection ends on the wheel";
  // A probe fails: ejected again, for twice as long (capped at 150 ms).
  rig.review->on_verdict(rig.stats[0], rig.stats[0]->record(true, -1, 0, 2));
  ASSERT_TRUE(wait_until([&] { return rig.review->ejections() == 2; }, 20s));
  EXPECT_LE(rig.review->view(*rig.stats[0]).for_ms, 150);
  ASSERT_TRUE(wait_until([&] { return rig.state(0) == State::probation; }, 20s));
  rig.review->on_verdict(rig.stats[0], rig.stats[0]->record(false, 1000, 0, 2));
  rig.review->on_verdict(rig.stats[0], rig.stats[0]->record(false, 1000, 0, 2));
  ASSERT_TRUE(wait_until([&] { return rig.state(0) == State::healthy; }, 20s)) << "two good probes";
  EXPECT_EQ(rig.review->view(*rig.stats[0]).state, "");
}

TEST(ProviderReview, FailuresInARowEjectAtOnce) {
  auto o = review_options();
  o.consecutive_failures = 4;
  ReviewRig rig(o);
  Verdict last = Verdict::none;
  for (int i = 0; i < 4; ++i) last = rig.stats[1]->record(true, -1, o.consecutive_failures, 3);
  ASSERT_EQ(last, Verdict::look_now);
  rig.review->on_verdict(rig.stats[1], last);
  ASSERT_TRUE(wait_until([&] { return rig.state(1) == State::ejected; }, 20s));
  EXPECT_NE(rig.review->view(*rig.stats[1]).why.find("4 failed attempts in a row"), std::string::npos);
}

TEST(ProviderReview, LoadFactorsFollowLatencyAndLoadReports) {
  auto o = review_options();
  o.latency_gap = 0ms;  // no latency ejection
  o.failure_percentage = 0;
  ReviewRig rig(o);
  rig.feed(0, 20, 0, 1ms);
  rig.feed(1, 20, 0, 1ms);
  rig.feed(2, 20, 0, 4ms);
  const auto now = std::chrono::steady_clock::now();
  rig.review->review(now);
  EXPECT_EQ(rig.stats[0]->load_factor(), 1000u);
  EXPECT_EQ(rig.stats[2]->load_factor(), 63u) << "(1/4)^2: a quarter of the best one's rate at a quarter of its speed";
  // Reports: p1 does as many calls per second at half the utilization.
  const auto at = now.time_since_epoch().count();
  rig.stats[0]->set_report(0.8, 100, at);
  rig.stats[1]->set_report(0.4, 100, at);
  rig.stats[2]->set_report(0.4, 100, at);
  rig.feed(0, 20, 0, 1ms);
  rig.feed(1, 20, 0, 1ms);
  rig.feed(2, 20, 0, 4ms);
  rig.review->review(now);
  EXPECT_EQ(rig.stats[1]->load_factor(), 1000u);
  EXPECT_EQ(rig.stats[0]->load_factor(), 500u) << "min(1, 0.5): its report";
  EXPECT_EQ(rig.stats[2]->load_factor(), 63u) << "min(1/16, 1): its latency";
}

// ---------------------------------------------------------------- end to end, both wires

/// A server whose "work" fails a share of calls (resource_exhausted: not
/// processed, so clients retry it) or answers late.
struct OddProvider {
  OddProvider(IoThreads& io, wheelrpc::timer::Timer& timer, std::string n)
      : name(std::move(n)), server(io.io.get_executor(), timer, options()) {
    server.handle("work", [this, &io](rpc::Request, rpc::Responder r) {
      const auto k = count.fetch_add(1);
      if (static_cast<int>(k % 100) < fail_percent.load()) {
        r.fail(rpc::errc::resource_exhausted, name + " fails this one");
        return;
      }
      const auto d = delay.load();
      if (d == 0ms) {
        r.reply(name);
        return;
      }
      auto t = std::make_shared<boost::asio::steady_timer>(io.io, d);
      t->async_wait([t, r = std::move(r), n = name](const boost::system::error_code&) mutable { r.reply(n); });
    });
    if (auto ec = server.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
  }
  static rpc::ServerOptions options() {
    rpc::ServerOptions o;
    o.keepalive.heartbeat = 200ms;
    return o;
  }
  const std::string name;
  rpc::Server server;
  std::atomic<std::uint64_t> count{0};
  std::atomic<int> fail_percent{0};
  std::atomic<std::chrono::milliseconds> delay{0ms};
};

struct OddFleet {
  OddFleet(WireProtocol wire, rpc::ClientOptions co, int n = 3) {
    std::vector<boost::asio::ip::tcp::endpoint> eps;
    for (int i = 0; i < n; ++i) {
      providers.push_back(std::make_unique<OddProvider>(io, timer, "p" + std::to_string(i)));
      eps.push_back(providers.back()->server.local_endpoint());
    }
    co.protocol = wire;
    co.heartbeat = 200ms;
    co.retry.budget_ratio = 1.0;
    client.emplace(io.io.get_executor(), timer, eps, co);
  }
  ~OddFleet() {
    client->close();
    for (auto& p : providers) p->server.stop();
  }
  /// `n` calls one after another; by provider name, and the failures.
  std::map<std::string, int> calls(int n, int& failed) {
    std::map<std::string, int> by;
    rpc::CallOptions o;
    o.timeout = 10s;
    o.idempotent = true;
    o.retries = 3;
    for (int i = 0; i < n; ++i) {
      auto out = wheelrpc::test::call_and_wait(*client, "work", "", o);
      if (out.ec) {
        ++failed;
        ADD_FAILURE() << out.response.error_message;
      } else {
        ++by[out.response.payload];
      }
    }
    return by;
  }
  rpc::ProviderStats stats_of(const std::string& name) {
    const auto port = providers[static_cast<std::size_t>(name[1] - '0')]->server.local_endpoint().port();
    for (auto& p : client->providers()) {
      if (p.peer == "127.0.0.1:" + std::to_string(port)) return p;
    }
    return {};
  }

  wheelrpc::timer::HashedWheelTimer timer;  // outlives the threads that may still use it
  IoThreads io{2};
  std::vector<std::unique_ptr<OddProvider>> providers;
  std::optional<rpc::Client> client;
};

rpc::ClientOptions ejecting_options() {
  rpc::ClientOptions co;
  co.outlier_detection.enabled = true;
  co.outlier_detection.interval = 100ms;
  co.outlier_detection.base_ejection_time = 300ms;
  co.outlier_detection.max_ejection_time = 600ms;
  co.outlier_detection.minimum_requests = 5;
  return co;
}

class OutlierWire : public ::testing::TestWithParam<WireProtocol> {};

TEST_P(OutlierWire, AFlakyProviderIsEjectedNoCallFailsAndItComesBackOnceHealed) {
  OddFleet fleet(GetParam(), ejecting_options());
  fleet.providers[1]->fail_percent = 30;
  int failed = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        fleet.calls(20, failed);
        return fleet.client->stats().ejections >= 1;
      },
      60s));
  EXPECT_EQ(failed, 0) << "retried elsewhere";
  auto s = fleet.stats_of("p1");
  EXPECT_GE(s.ejections, 1u);
  EXPECT_NE(s.ejected_why.find("attempts"), std::string::npos) << s.ejected_why;
  EXPECT_EQ(fleet.stats_of("p0").ejections, 0u);
  EXPECT_EQ(fleet.stats_of("p2").ejections, 0u);
  // Healed: it passes its probation and takes its share again.
  fleet.providers[1]->fail_percent = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        fleet.calls(10, failed);
        return fleet.stats_of("p1").ejection.empty();
      },
      60s));
  const auto by = fleet.calls(90, failed);
  EXPECT_EQ(failed, 0);
  EXPECT_GE(by.count("p1") ? by.at("p1") : 0, 20) << "its share back";
}

TEST_P(OutlierWire, ASlowProviderIsEjectedByItsLatency) {
  auto co = ejecting_options();
  co.outlier_detection.interval = 500ms;          // a dozen replies of the slow one per review
  co.outlier_detection.base_ejection_time = 60s;  // stays out for the test
  co.outlier_detection.max_ejection_time = 60s;
  OddFleet fleet(GetParam(), co);
  fleet.providers[2]->delay = 40ms;
  int failed = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        fleet.calls(15, failed);
        return fleet.stats_of("p2").ejection == "ejected";
      },
      60s));
  EXPECT_NE(fleet.stats_of("p2").ejected_why.find("mean latency"), std::string::npos);
  const auto by = fleet.calls(60, failed);
  EXPECT_EQ(by.count("p2"), 0u) << "ejected: no call goes there";
  EXPECT_EQ(failed, 0);
  const auto conns = fleet.client->connections();
  EXPECT_TRUE(std::any_of(conns.begin(), conns.end(), [](const auto& c) { return c.ejection == "ejected"; }));
}

TEST_P(OutlierWire, LoadAwareBalancingSendsASlowProviderLittle) {
  rpc::ClientOptions co;
  co.load_balance = rpc::LoadBalance::load_aware;
  OddFleet fleet(GetParam(), co);
  fleet.providers[0]->delay = 20ms;
  int failed = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        fleet.calls(20, failed);
        return fleet.stats_of("p0").load_factor < 200;
      },
      60s));
  const auto by = fleet.calls(200, failed);
  EXPECT_LE(by.count("p0") ? by.at("p0") : 0, 30) << "at most a small share";
  EXPECT_EQ(failed, 0);
}

INSTANTIATE_TEST_SUITE_P(Wires, OutlierWire, ::testing::Values(WireProtocol::native, WireProtocol::grpc),
                         [](const auto& p) { return p.param == WireProtocol::native ? "native" : "grpc"; });

TEST(OutlierOptions, AbsurdValuesAreRefused) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io(1);
  auto refused = [&](auto change) {
    rpc::ClientOptions co;
    co.outlier_detection.enabled = true;
    change(co.outlier_detection);
    try {
      rpc::Client c(io.io.get_executor(), timer,
                    std::vector<boost::asio::ip::tcp::endpoint>{wheelrpc::test::loopback0()}, co);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what()).find("outlier_detection.") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused([](auto& o) { o.interval = 0ms; }));
  EXPECT_TRUE(refused([](auto& o) { o.max_ejection_time = o.base_ejection_time - 1ms; }));
  EXPECT_TRUE(refused([](auto& o) { o.max_ejection_percent = 101; }));
  EXPECT_TRUE(refused([](auto& o) { o.failure_percentage = 101; }));
  EXPECT_TRUE(refused([](auto& o) { o.relative_factor = 1.0; }));
  EXPECT_TRUE(refused([](auto& o) { o.latency_gap = -1ms; }));
  EXPECT_TRUE(refused([](auto& o) { o.minimum_requests = 0; }));
  EXPECT_TRUE(refused([](auto& o) { o.probe_successes = 0; }));
  EXPECT_FALSE(refused([](auto&) {}));
}

// ---------------------------------------------------------------- backoff reset

/// A client of one provider, through a source the test drives, with a
/// reconnect backoff that grows to 60 s after the second failed connect.
struct BackoffRig {
  BackoffRig() {
    // A port nothing listens on (yet).
    rpc::Server probe(io.io.get_executor(), timer);
    if (auto ec = probe.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
    endpoint = probe.local_endpoint();
    probe.stop();
    rpc::ClientOptions co;
    co.reconnect.initial = 300ms;
    co.reconnect.multiplier = 100;
    co.reconnect.jitter = 0;
    co.reconnect.max = 60s;
    co.empty_protection = false;
    client.emplace(io.io.get_executor(), timer, source, co);
  }
  ~BackoffRig() {
    client->close();
    if (server) server->stop();
  }
  rpc::ProviderInfo info(std::uint64_t epoch) const {
    rpc::ProviderInfo p(endpoint);
    p.epoch = epoch;
    return p;
  }
  /// Two refused connects: the next one is a minute away.
  void fail_twice() {
    rpc::CallOptions o;
    o.timeout = 5s;
    ASSERT_TRUE(wait_until(
        [&] {
          (void)wheelrpc::test::call_and_wait(*client, "echo", "x", o);
          const auto c = client->connections();
          return !c.empty() && c[0].next_attempt_in > 20s;
        },
        30s));
  }
  bool serve() {
    server.emplace(io.io.get_executor(), timer);
    wheelrpc::test::register_test_methods(*server, io.io);
    return !server->listen(endpoint);
  }

  wheelrpc::timer::HashedWheelTimer timer;  // outlives the threads that may still use it
  IoThreads io{2};
  std::shared_ptr<wheelrpc::test::DrivenSource> source = std::make_shared<wheelrpc::test::DrivenSource>();
  boost::asio::ip::tcp::endpoint endpoint;
  std::optional<rpc::Client> client;
  std::optional<rpc::Server> server;
};

TEST(BackoffReset, AProviderRegisteredAnewIsConnectedAtOnce) {
  BackoffRig rig;
  rig.source->report({rig.info(1)});
  rig.fail_twice();
  if (!rig.serve()) GTEST_SKIP() << "the port was taken meanwhile";
  rig.source->report({rig.info(1)});  // the same registration: the backoff stands
  rig.source->report({rig.info(2)});  // registered anew (a new epoch)
  ASSERT_TRUE(wait_until([&] { return rig.client->providers()[0].ready; }, 20s))
      << "connected long before the minute of backoff";
  EXPECT_FALSE(wheelrpc::test::call_and_wait(*rig.client, "echo", "x").ec);
}

TEST(BackoffReset, AProviderBackInTheSetIsConnectedAtOnce) {
  BackoffRig rig;
  rig.source->report({rig.info(0)});
  rig.fail_twice();
  if (!rig.serve()) GTEST_SKIP() << "the port was taken meanwhile";
  rig.source->report({});
  rig.source->report({rig.info(0)});  // back (no epoch known)
  ASSERT_TRUE(wait_until(
      [&] {
        for (const auto& p : rig.client->providers()) {
          if (p.ready) return true;
        }
        return false;
      },
      20s));
}

TEST(BackoffReset, WithoutNewsTheBackoffStands) {
  BackoffRig rig;
  rig.source->report({rig.info(1)});
  rig.fail_twice();
  if (!rig.serve()) GTEST_SKIP() << "the port was taken meanwhile";
  rig.source->report({rig.info(1)});
  const auto c = rig.client->connections();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_GT(c[0].next_attempt_in, 20s) << "the same registration changes nothing";
  EXPECT_NE(c[0].state, rpc::ConnectionInfo::State::ready);
}

}  // namespace
