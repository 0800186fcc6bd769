// resolved_providers() through a fake DNS (the detail seam), driven by a
// manual timer and an io_context polled on the test thread, so every step is
// deterministic; and once with real threads.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "client/resolved_providers.h"
#include "support/fake_dns.h"
#include "support/manual_timer.h"
#include "support/wait.h"

namespace wheelrpc::rpc {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;
using test::FakeDns;
using Recorder = test::ProviderRecorder;

tcp::endpoint ep(const char* address, unsigned short port) { return test::make_endpoint(address, port); }

/// The fixture: the source's executor is an io_context polled on the test
/// thread, its timer a manual one; settle() runs everything that is ready.
class ResolvedProvidersTest : public ::testing::Test {
 protected:
  std::shared_ptr<ProviderSource> make(std::vector<std::string> targets, ResolveOptions options = {}) {
    return detail::resolved_providers(io_.get_executor(), mt_.timer, std::move(targets), options, dns_.function());
  }
  void settle() {
    io_.restart();
    io_.poll();
  }
  /// Moves the manual time forward and runs what that made ready.
  void advance(std::chrono::milliseconds d) {
    mt_.advance(d);
    settle();
  }

  asio::io_context io_;
  test::ManualTimer mt_;
  FakeDns dns_;
  Recorder rec_;
};

TEST_F(ResolvedProvidersTest, SeveralAddressesFromOneNameGiveSeveralProvidersSorted) {
  dns_.set("svc", {"10.0.0.3", "10.0.0.1", "10.0.0.2", "10.0.0.1"});
  dns_.set("other", {"10.0.0.2", "10.0.0.9"});
  auto source = make({"svc:80", "other:80"});
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(rec_.count(), 1u);
  auto r = rec_.last();
  EXPECT_FALSE(r.ec);
  EXPECT_EQ(r.endpoints, (std::vector<tcp::endpoint>{ep("10.0.0.1", 80), ep("10.0.0.2", 80), ep("10.0.0.3", 80),
                                                     ep("10.0.0.9", 80)}));
  source->stop();
}

TEST_F(ResolvedProvidersTest, AChangedAddressIsFoundAfterARefresh) {
  dns_.set("svc", {"10.0.0.1"});
  auto source = make({"svc:80"}, ResolveOptions{5s, 1s});
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(rec_.count(), 1u);
  dns_.set("svc", {"10.0.0.7"});
  advance(4900ms);
  EXPECT_EQ(dns_.calls("svc"), 1);  // not yet due
  advance(200ms);
  EXPECT_EQ(dns_.calls("svc"), 2);
  ASSERT_EQ(rec_.count(), 2u);
  EXPECT_EQ(rec_.last().endpoints, std::vector<tcp::endpoint>{ep("10.0.0.7", 80)});
  source->stop();
}

TEST_F(ResolvedProvidersTest, NothingChangedMeansNoReport) {
  dns_.set("svc", {"10.0.0.2", "10.0.0.1"});
  auto source = make({"svc:80"}, ResolveOptions{1s, 100ms});
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(rec_.count(), 1u);
  dns_.set("svc", {"10.0.0.1", "10.0.0.2"});  // the same set, another order
  for (int i = 0; i < 3; ++i) advance(1100ms);
  EXPECT_EQ(dns_.calls("svc"), 4);
  EXPECT_EQ(rec_.count(), 1u);
  source->stop();
}

TEST_F(ResolvedProvidersTest, ConnectFailedReResolvesRateLimited) {
  dns_.set("svc", {"10.0.0.1"});
  auto source = make({"svc:80"}, ResolveOptions{1h, 1s});
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(dns_.calls("svc"), 1);

  // Within min_interval of the first round: deferred to its end, one round for all.
  dns_.set("svc", {"10.0.0.5"});
  for (int i = 0; i < 3; ++i) source->connect_failed(ep("10.0.0.1", 80));
  settle();
  EXPECT_EQ(dns_.calls("svc"), 1);
  advance(900ms);
  EXPECT_EQ(dns_.calls("svc"), 1);
  advance(200ms);
  EXPECT_EQ(dns_.calls("svc"), 2);
  ASSERT_EQ(rec_.count(), 2u);
  EXPECT_EQ(rec_.last().endpoints, std::vector<tcp::endpoint>{ep("10.0.0.5", 80)});

  // Once the interval after that round is over, a hint resolves at once.
  advance(1100ms);
  EXPECT_EQ(dns_.calls("svc"), 2);  // no hint, no round
  source->connect_failed(ep("10.0.0.5", 80));
  settle();
  EXPECT_EQ(dns_.calls("svc"), 3);
  source->stop();
}

TEST_F(ResolvedProvidersTest, AHintDuringARoundInFlightResolvesAgainAfterIt) {
  dns_.set("svc", {"10.0.0.1"});
  auto source = make({"svc:80"}, ResolveOptions{1h, 1s});
  dns_.hold(true);
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(dns_.calls("svc"), 1);
  advance(1500ms);  // the round outlives min_interval
  source->connect_failed(ep("10.0.0.1", 80));
  settle();
  EXPECT_EQ(dns_.calls("svc"), 1);
  dns_.hold(false);
  EXPECT_EQ(dns_.release(), 1u);
  settle();
  EXPECT_EQ(dns_.calls("svc"), 2);
  EXPECT_EQ(rec_.count(), 1u);  // the second round found the same set
  source->stop();
}

TEST_F(ResolvedProvidersTest, AFailingNameKeepsItsLastAddresses) {
  dns_.set("a", {"10.0.0.1"});
  dns_.set("b", {"10.0.0.2"});
  auto source = make({"a:80", "b:81"}, ResolveOptions{1s, 100ms});
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(rec_.count(), 1u);
  dns_.fail("a");
  dns_.set("b", {"10.0.0.3"});
  advance(1100ms);
  EXPECT_EQ(dns_.calls("a"), 2);
  ASSERT_EQ(rec_.count(), 2u);
  auto r = rec_.last();
  EXPECT_FALSE(r.ec);
  EXPECT_EQ(r.endpoints, (std::vector<tcp::endpoint>{ep("10.0.0.1", 80), ep("10.0.0.3", 81)}));
  dns_.fail("b");
  advance(1100ms);
  EXPECT_EQ(dns_.calls("b"), 3);
  EXPECT_EQ(rec_.count(), 2u);  // both keep their sets: no change, no report
  source->stop();
}

TEST_F(ResolvedProvidersTest, ANameNeverResolvedReportsTheError) {
  dns_.fail("gone", asio::error::host_not_found);
  auto source = make({"gone:80"}, ResolveOptions{1s, 100ms});
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(rec_.count(), 1u);
  auto r = rec_.last();
  EXPECT_EQ(r.ec, error_code(asio::error::host_not_found));
  EXPECT_TRUE(r.endpoints.empty());
  EXPECT_EQ(r.why.rfind("host name 'gone' does not resolve: ", 0), 0u) << r.why;
  EXPECT_NE(r.why.find(error_code(asio::error::host_not_found).message()), std::string::npos) << r.why;

  advance(1100ms);  // the same error again: not reported again
  EXPECT_EQ(dns_.calls("gone"), 2);
  EXPECT_EQ(rec_.count(), 1u);

  dns_.set("gone", {"10.0.0.4"});  // it comes back
  advance(1100ms);
  ASSERT_EQ(rec_.count(), 2u);
  EXPECT_FALSE(rec_.last().ec);
  EXPECT_EQ(rec_.last().endpoints, std::vector<tcp::endpoint>{ep("10.0.0.4", 80)});
  source->stop();
}

TEST_F(ResolvedProvidersTest, StopEndsReportsAndResolution) {
  dns_.set("svc", {"10.0.0.1"});
  auto source = make({"svc:80"}, ResolveOptions{1s, 100ms});
  source->start(rec_.listener());
  settle();
  ASSERT_EQ(rec_.count(), 1u);
  dns_.set("svc", {"10.0.0.2"});
  dns_.hold(true);
  advance(1100ms);
  ASSERT_EQ(dns_.calls("svc"), 2);  // a round in flight
  source->stop();
  source->stop();  // idempotent
  dns_.hold(false);
  dns_.release();  // its answer comes after stop
  source->connect_failed(ep("10.0.0.1", 80));
  advance(5s);
  EXPECT_EQ(dns_.calls("svc"), 2);
  EXPECT_EQ(rec_.count(), 1u);
  EXPECT_EQ(mt_.timer.stats().pending, 0u);  // both timeouts cancelled
}

TEST_F(ResolvedProvidersTest, DestroyedRightAfterStopWithALookupInFlight) {
  dns_.set("svc", {"10.0.0.1"});
  dns_.hold(true);
  auto source = make({"svc:80"});
  std::weak_ptr<ProviderSource> weak = source;
  source->start(rec_.listener());
  settle();
  source->stop();
  source.reset();
  dns_.hold(false);
  dns_.release();
  settle();
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(rec_.count(), 0u);
}

TEST_F(ResolvedProvidersTest, StopBeforeStartReportsNothing) {
  dns_.set("svc", {"10.0.0.1"});
  auto source = make({"svc:80"});
  source->stop();
  source->start(rec_.listener());
  settle();
  EXPECT_EQ(dns_.calls("svc"), 0);
  EXPECT_EQ(rec_.count(), 0u);
}

// Threads for real: a two-thread executor, the timer's own worker, hints from
// a third thread, then stop and destroy while all of it runs.
TEST(ResolvedProvidersThreadsTest, StopWhileRefreshingAndHintingFromOtherThreads) {
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&] { io.run(); });
  timer::HashedWheelTimer timer;
  FakeDns dns;
  std::atomic<int> flip{0};
  dns.set("svc", {"10.0.0.1"});
  auto source =
      detail::resolved_providers(io.get_executor(), timer, {"svc:80"}, ResolveOptions{1ms, 1ms}, dns.function());
  std::atomic<bool> stop_returned{false};
  std::atomic<int> in_listener{0}, concurrent{0}, reports{0}, after_stop{0};
  source->start([&](error_code, std::vector<tcp::endpoint>, std::string) {
    if (in_listener.fetch_add(1) != 0) concurrent.fetch_add(1);
    reports.fetch_add(1);
    if (stop_returned.load()) after_stop.fetch_add(1);
    in_listener.fetch_sub(1);
  });
  std::atomic<bool> hinting{true};
  std::thread hinter([&] {
    while (hinting.load()) {
      source->connect_failed(ep("10.0.0.1", 80));
      dns.set("svc", {flip.fetch_add(1) % 2 ? "10.0.0.1" : "10.0.0.2"});
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(test::wait_until([&] { return reports.load() >= 5; }));
  hinting.store(false);
  hinter.join();
  source->stop();
  stop_returned.store(true);
  source.reset();
  guard.reset();
  for (auto& t : threads) t.join();  // io.run() returns: nothing of the source is left queued
  timer.stop();
  EXPECT_EQ(concurrent.load(), 0);
  EXPECT_LE(after_stop.load(), 1);  // at most the one already under way
}

}  // namespace
}  // namespace wheelrpc::rpc
