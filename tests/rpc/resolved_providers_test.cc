// resolved_providers() and static_providers(): parsing, resolution through a
// fake DNS (the detail seam) driven by a manual timer and an io_context polled
// on the test thread, so every step is deterministic; and the real resolver
// for IP literals and "localhost".

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "resolved_providers.h"
#include "support/manual_timer.h"
#include "support/wait.h"

namespace wheelrpc::rpc {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

tcp::endpoint ep(const char* address, unsigned short port) { return {asio::ip::make_address(address), port}; }

/// A DNS the test controls: host -> addresses or an error. Counts lookups.
/// Answers inline, or holds them until release() when `hold` is set.
/// Thread-safe.
class FakeDns {
 public:
  void set(const std::string& host, std::vector<std::string> addresses) {
    std::lock_guard l(mu_);
    answers_[host] = Answer{{}, std::move(addresses)};
  }
  void fail(const std::string& host, error_code ec = asio::error::host_not_found) {
    std::lock_guard l(mu_);
    answers_[host] = Answer{ec, {}};
  }
  void hold(bool on) {
    std::lock_guard l(mu_);
    hold_ = on;
  }
  /// Completes the held lookups; returns how many.
  std::size_t release() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard l(mu_);
      held.swap(held_);
    }
    for (auto& h : held) h();
    return held.size();
  }
  int calls(const std::string& host) const {
    std::lock_guard l(mu_);
    auto it = calls_.find(host);
    return it == calls_.end() ? 0 : it->second;
  }

  detail::ResolveFunction function() {
    return [this](std::string host, std::string port, detail::ResolveDone done) {
      std::unique_lock l(mu_);
      ++calls_[host];
      auto it = answers_.find(host);
      error_code ec = asio::error::host_not_found;
      std::vector<tcp::endpoint> eps;
      if (it != answers_.end()) {
        ec = it->second.ec;
        for (const auto& a : it->second.addresses)
          eps.emplace_back(asio::ip::make_address(a), static_cast<unsigned short>(std::stoi(port)));
      }
      auto complete = [done = std::move(done), ec, eps] { done(ec, eps); };
      if (hold_) {
        held_.push_back(std::move(complete));
        return;
      }
      l.unlock();
      complete();
    };
  }

 private:
  struct Answer {
    error_code ec;
    std::vector<std::string> addresses;
  };
  mutable std::mutex mu_;
  std::map<std::string, Answer> answers_;
  std::map<std::string, int> calls_;
  bool hold_ = false;
  std::vector<std::function<void()>> held_;
};

/// Records every report. Thread-safe.
class Recorder {
 public:
  struct Report {
    error_code ec;
    std::vector<tcp::endpoint> endpoints;
    std::string why;
  };
  ProviderSource::Listener listener() {
    return [this](error_code ec, std::vector<tcp::endpoint> eps, std::string why) {
      std::lock_guard l(mu_);
      reports_.push_back(Report{ec, std::move(eps), std::move(why)});
    };
  }
  std::size_t count() const {
    std::lock_guard l(mu_);
    return reports_.size();
  }
  Report last() const {
    std::lock_guard l(mu_);
    return reports_.empty() ? Report{} : reports_.back();
  }

 private:
  mutable std::mutex mu_;
  std::vector<Report> reports_;
};

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

TEST(ResolveTargetTest, BadTargetsAreRejectedNamingTheTarget) {
  asio::io_context io;
  test::ManualTimer mt;
  auto bad = [&](std::vector<std::string> targets, const std::string& expect_in_message) {
    try {
      resolved_providers(io.get_executor(), mt.timer, targets);
      ADD_FAILURE() << "accepted: " << (targets.empty() ? "(empty list)" : targets.front());
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expect_in_message), std::string::npos) << e.what();
    }
  };
  bad({}, "no targets");
  bad({"example.com"}, "'example.com'");
  bad({"example.com:"}, "missing port");
  bad({"example.com:0"}, "1..65535");
  bad({"example.com:65536"}, "1..65535");
  bad({"example.com:http"}, "1..65535");
  bad({"example.com:-1"}, "1..65535");
  bad({":80"}, "empty host");
  bad({"[]:80"}, "empty host");
  bad({"[::1]"}, "missing port");
  bad({"[::1"}, "']'");
  bad({"::1:80"}, "brackets");
  bad({"good:80", "bad"}, "'bad'");
}

TEST(ResolveTargetTest, ParsesHostPortAndBracketedV6) {
  auto t = detail::parse_resolve_target("example.com:8080");
  EXPECT_EQ(t.host, "example.com");
  EXPECT_EQ(t.port, "8080");
  t = detail::parse_resolve_target("[::1]:65535");
  EXPECT_EQ(t.host, "::1");
  EXPECT_EQ(t.port, "65535");
  t = detail::parse_resolve_target("10.0.0.1:1");
  EXPECT_EQ(t.host, "10.0.0.1");
  EXPECT_EQ(t.port, "1");
}

TEST(ResolveTargetTest, OptionsMustBePositive) {
  asio::io_context io;
  test::ManualTimer mt;
  EXPECT_THROW(resolved_providers(io.get_executor(), mt.timer, {"a:1"}, ResolveOptions{0ms, 1s}),
               std::invalid_argument);
  EXPECT_THROW(resolved_providers(io.get_executor(), mt.timer, {"a:1"}, ResolveOptions{1s, -1ms}),
               std::invalid_argument);
}

TEST(ResolveTargetTest, DescribeNamesEveryTarget) {
  asio::io_context io;
  test::ManualTimer mt;
  EXPECT_EQ(resolved_providers(io.get_executor(), mt.timer, {"example.com:80"})->describe(),
            "dns:example.com:80");
  EXPECT_EQ(resolved_providers(io.get_executor(), mt.timer, {"a:1", "[::1]:2"})->describe(), "dns:a:1,[::1]:2");
}

/// The real resolver, on an io_context polled here until the report comes.
class RealResolverTest : public ::testing::Test {
 protected:
  /// Bounded generously: a lookup that goes to a slow DNS server may take
  /// several of its timeouts.
  bool wait_report(std::size_t n) {
    return test::wait_until(
        [&] {
          io_.restart();
          io_.poll();
          return rec_.count() >= n;
        },
        std::chrono::seconds(60));
  }
  asio::io_context io_;
  test::ManualTimer mt_;
  Recorder rec_;
};

TEST_F(RealResolverTest, AnIpLiteralResolvesToItself) {
  auto source = resolved_providers(io_.get_executor(), mt_.timer, {"127.0.0.1:7001", "[::1]:7002"});
  source->start(rec_.listener());
  ASSERT_TRUE(wait_report(1));
  auto r = rec_.last();
  EXPECT_FALSE(r.ec) << r.why;
  EXPECT_EQ(r.endpoints, (std::vector<tcp::endpoint>{ep("127.0.0.1", 7001), ep("::1", 7002)}));
  source->stop();
}

TEST_F(RealResolverTest, LocalhostResolvesToLoopback) {
  auto source = resolved_providers(io_.get_executor(), mt_.timer, {"localhost:7003"});
  source->start(rec_.listener());
  ASSERT_TRUE(wait_report(1));
  auto r = rec_.last();
  ASSERT_FALSE(r.ec) << r.why;
  ASSERT_FALSE(r.endpoints.empty());
  for (const auto& e : r.endpoints) {
    EXPECT_TRUE(e.address().is_loopback()) << e;
    EXPECT_EQ(e.port(), 7003);
  }
  source->stop();
}

TEST_F(RealResolverTest, AnUnknownNameReportsTheError) {
  // .invalid never resolves (RFC 6761).
  auto source = resolved_providers(io_.get_executor(), mt_.timer, {"no-such-host.invalid:80"});
  source->start(rec_.listener());
  ASSERT_TRUE(wait_report(1));
  auto r = rec_.last();
  if (!r.ec) GTEST_SKIP() << "this network's DNS answers for .invalid names";
  EXPECT_TRUE(r.endpoints.empty());
  EXPECT_NE(r.why.find("no-such-host.invalid:80"), std::string::npos) << r.why;
  source->stop();
}

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
  EXPECT_NE(r.why.find("gone:80"), std::string::npos) << r.why;
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
  auto source = detail::resolved_providers(io.get_executor(), timer, {"svc:80"}, ResolveOptions{1ms, 1ms},
                                           dns.function());
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

TEST(StaticProvidersTest, ReportsItsSetOnceAtStart) {
  auto source = static_providers({ep("127.0.0.1", 7001), ep("::1", 7002), ep("127.0.0.1", 7001)});
  EXPECT_EQ(source->describe(), "127.0.0.1:7001,[::1]:7002");
  Recorder rec;
  source->start(rec.listener());
  ASSERT_EQ(rec.count(), 1u);
  EXPECT_FALSE(rec.last().ec);
  EXPECT_EQ(rec.last().endpoints, (std::vector<tcp::endpoint>{ep("127.0.0.1", 7001), ep("::1", 7002)}));
  source->connect_failed(ep("127.0.0.1", 7001));
  source->stop();
  EXPECT_EQ(rec.count(), 1u);
}

}  // namespace
}  // namespace wheelrpc::rpc
