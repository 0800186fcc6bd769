// Provider weights as a client applies them: the weights a provider source
// reports (ProviderInfo), a runtime rule's weights beating them and going
// away, weight 0 draining a provider without a failed call, a record that
// changed only in weight (no reconnect), and the load-balancing policy a
// rule sets. Real servers behind proxies (support/cluster.h), real time.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/rpc/routing_tag.h>

#include "support/cluster.h"
#include "support/driven_rules.h"
#include "support/driven_source.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"
using wheelrpc::rpc::CallRules;
using wheelrpc::rpc::LoadBalance;
using wheelrpc::rpc::Overridden;
using wheelrpc::rpc::ProviderInfo;
using wheelrpc::rpc::ProviderSource;
using wheelrpc::rpc::RuleSource;
using tcp = boost::asio::ip::tcp;
using wheelrpc::test::DrivenRules;

namespace {

std::string text(const tcp::endpoint& ep) { return ep.address().to_string() + ":" + std::to_string(ep.port()); }

/// A Cluster's providers, and a second client that follows a DrivenSource.
struct WeightedCluster {
  explicit WeightedCluster(std::vector<Mode> modes, ClientOptions co = client_options(),
                           std::shared_ptr<RuleSource> rules = nullptr)
      : cluster(std::move(modes)), source(std::make_shared<wheelrpc::test::DrivenSource>()) {
    co.rules = std::move(rules);
    client.emplace(cluster.io.io.get_executor(), cluster.timer, source, co);
  }
  ~WeightedCluster() { client->close(); }
  tcp::endpoint endpoint(std::size_t i) const { return cluster.providers[i]->proxy->local_endpoint(); }
  ProviderInfo info(std::size_t i, std::uint32_t weight) const {
    ProviderInfo p(endpoint(i));
    p.weight = weight;
    return p;
  }
  void connect_all() {
    client->connect();
    ASSERT_TRUE(wait_until([&] {
      auto ps = client->providers();
      return ps.size() == cluster.providers.size() &&
             std::all_of(ps.begin(), ps.end(), [](const auto& p) { return p.ready; });
    }));
  }
  /// Sends `n` calls one after another; each must succeed.
  void calls(int n) {
    for (int i = 0; i < n; ++i) {
      auto f = start(*client, "work", "", opts(5s));
      auto out = wait(f);
      ASSERT_FALSE(out.ec) << out.response.error_message;
    }
  }
  std::vector<int> requests() const {
    std::vector<int> out;
    for (const auto& p : cluster.providers) out.push_back(p->requests());
    return out;
  }
  /// The client's view of provider i: its weight and where it comes from.
  std::pair<std::uint32_t, std::string> weight_of(std::size_t i) const {
    for (const auto& p : client->providers()) {
      if (p.peer == text(endpoint(i))) return {p.weight, p.weight_from};
    }
    return {0, "missing"};
  }

  Cluster cluster;
  std::shared_ptr<wheelrpc::test::DrivenSource> source;
  std::optional<Client> client;
};

TEST(WeightedPool, WeightZeroProviderGetsNoCallAndNoCallFails) {
  WeightedCluster w({Mode::reply, Mode::reply, Mode::reply});
  w.source->report({w.info(0, 100), w.info(1, 0), w.info(2, 100)});
  w.connect_all();
  w.calls(300);
  const auto r = w.requests();
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[0], 150);
  EXPECT_EQ(r[2], 150);
  EXPECT_EQ(w.client->stats().failed, 0u);
  EXPECT_EQ(w.weight_of(1), std::make_pair(0u, std::string("registry")));
  EXPECT_EQ(w.weight_of(0), std::make_pair(100u, std::string("default")));
  // /connections shows the same.
  for (const auto& c : w.client->connections()) {
    if (c.remote == text(w.endpoint(1))) {
      EXPECT_EQ(c.weight, 0u);
      EXPECT_EQ(c.weight_from, "registry");
    }
  }
}

TEST(WeightedPool, SourceWeightThenARuleThenBack) {
  auto rules = std::make_shared<DrivenRules>();
  WeightedCluster w({Mode::reply, Mode::reply}, client_options(), rules);
  w.source->report({w.info(0, 100), w.info(1, 300)});
  w.connect_all();
  // Smooth WRR, one caller: 1 in 4 to p0. Exactly, unless the set was
  // published again meanwhile (a subchannel's report on a loaded machine),
  // which starts the sequence over: within 2 then.
  w.calls(400);
  auto r = w.requests();
  EXPECT_NEAR(r[0], 100, 2);
  EXPECT_NEAR(r[1], 300, 2);
  EXPECT_EQ(w.weight_of(1), std::make_pair(300u, std::string("registry")));

  // A rule makes p0 heavier than the record says p1 is.
  auto set = std::make_shared<CallRules>();
  set->weights[text(w.endpoint(0))] =
      Overridden<std::uint32_t>{900, false, std::make_shared<const std::string>("test rule 7")};
  rules->report(set);
  EXPECT_EQ(w.weight_of(0), std::make_pair(900u, std::string("rule test rule 7")));
  w.calls(400);
  auto r2 = w.requests();
  EXPECT_NEAR(r2[0] - r[0], 300, 2);  // 900:300
  EXPECT_NEAR(r2[1] - r[1], 100, 2);

  // The rule goes: the record's weights again.
  rules->report(std::make_shared<CallRules>());
  EXPECT_EQ(w.weight_of(0), std::make_pair(100u, std::string("default")));
  w.calls(400);
  auto r3 = w.requests();
  EXPECT_NEAR(r3[0] - r2[0], 100, 2);
  EXPECT_NEAR(r3[1] - r2[1], 300, 2);
  EXPECT_EQ(w.client->stats().failed, 0u);
}

TEST(WeightedPool, ARecordChangedOnlyInWeightKeepsItsConnection) {
  WeightedCluster w({Mode::reply, Mode::reply});
  w.source->report({w.info(0, 100), w.info(1, 100)});
  w.connect_all();
  w.calls(10);
  std::map<std::string, std::uint64_t> connects;
  for (const auto& p : w.client->providers()) connects[p.peer] = p.connect_attempts;
  w.source->report({w.info(0, 100), w.info(1, 0)});
  EXPECT_EQ(w.weight_of(1), std::make_pair(0u, std::string("registry")));
  const auto before = w.requests();
  w.calls(50);
  EXPECT_EQ(w.requests()[1], before[1]);
  for (const auto& p : w.client->providers()) {
    EXPECT_EQ(p.connect_attempts, connects[p.peer]) << p.peer;
    EXPECT_TRUE(p.ready) << p.peer;
    EXPECT_FALSE(p.removed) << p.peer;
  }
}

TEST(WeightedPool, EveryProviderDrainedStillServes) {
  WeightedCluster w({Mode::reply, Mode::reply});
  w.source->report({w.info(0, 0), w.info(1, 0)});
  w.connect_all();
  w.calls(100);
  const auto r = w.requests();
  EXPECT_EQ(r[0], 50);
  EXPECT_EQ(r[1], 50);
}

// p0 holds each call it gets, p1 answers: how many of `n` calls p0 holds.
std::size_t held_by_busy(WeightedCluster& w, int n, std::vector<std::future<Outcome>>& fs) {
  const auto start_held = w.cluster.providers[0]->held_count();
  for (int i = 0; i < n; ++i) {
    const auto held_before = w.cluster.providers[0]->held_count();
    fs.push_back(start(*w.client, "work", "", opts(20s)));
    auto& f = fs.back();
    EXPECT_TRUE(wait_until([&] {
      return f.wait_for(0s) == std::future_status::ready || w.cluster.providers[0]->held_count() > held_before;
    }));
  }
  return w.cluster.providers[0]->held_count() - start_held;
}

TEST(WeightedPool, ARuleSwitchesTheLoadBalancingPolicyAndBack) {
  auto rules = std::make_shared<DrivenRules>();
  WeightedCluster w({Mode::hold, Mode::reply}, client_options(), rules);
  w.source->report({w.info(0, 100), w.info(1, 100)});
  w.connect_all();
  std::vector<std::future<Outcome>> fs;
  EXPECT_EQ(held_by_busy(w, 10, fs), 5u);  // round robin (the client's option)

  auto set = std::make_shared<CallRules>();
  set->load_balance =
      Overridden<LoadBalance>{LoadBalance::least_active, false, std::make_shared<const std::string>("test rule 9")};
  rules->report(set);
  EXPECT_EQ(held_by_busy(w, 10, fs), 0u);  // least active: never the busy one

  rules->report(std::make_shared<CallRules>());
  EXPECT_EQ(held_by_busy(w, 10, fs), 5u);  // round robin again
  w.client->close();
}

TEST(WeightedPool, PicksRaceARuleThatKeepsSwitchingThePolicy) {
  // Calls from several threads while rules switch policy and weights: every
  // call succeeds (TSan checks the set and balancer hand-over).
  auto rules = std::make_shared<DrivenRules>();
  WeightedCluster w({Mode::reply, Mode::reply, Mode::reply}, client_options(), rules);
  w.source->report({w.info(0, 100), w.info(1, 200), w.info(2, 0)});
  w.connect_all();
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;
  std::atomic<int> failed{0}, ok{0};
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      while (!stop.load()) {
        auto f = start(*w.client, "work", "", opts(5s));
        auto out = wait(f);
        (out.ec ? failed : ok).fetch_add(1);
      }
    });
  }
  constexpr std::array kPolicies{LoadBalance::least_active, LoadBalance::power_of_two, LoadBalance::round_robin};
  for (int i = 0; i < 60; ++i) {
    auto set = std::make_shared<CallRules>();
    set->load_balance = Overridden<LoadBalance>{kPolicies[i % 3], false, nullptr};
    set->weights[text(w.endpoint(i % 3))] = Overridden<std::uint32_t>{static_cast<std::uint32_t>(i * 10), false, {}};
    rules->report(set);
    std::this_thread::yield();
  }
  ASSERT_TRUE(wait_until([&] { return ok.load() > 200; }));
  stop = true;
  for (auto& t : callers) t.join();
  EXPECT_EQ(failed.load(), 0);
}

}  // namespace

namespace {

// ---- tag routing (docs/governance.md, "Tag routing")

std::vector<int> minus(std::vector<int> a, const std::vector<int>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] -= b[i];
  return a;
}

TEST(TagRouting, ATaggedCallGoesOnlyToItsTagsProvidersAndAnUntaggedOneNever) {
  WeightedCluster w({Mode::reply, Mode::reply, Mode::reply});
  auto canary = w.info(0, 100);
  canary.tags["tag"] = "canary";
  w.source->report({canary, w.info(1, 100), w.info(2, 100)});
  w.connect_all();
  w.calls(60);
  auto r = w.requests();
  EXPECT_EQ(r, (std::vector<int>{0, 30, 30})) << "untagged calls never reach the canary";
  {
    wheelrpc::rpc::RoutingTagScope scope(*wheelrpc::rpc::RoutingTag::make("canary"));
    w.calls(40);
  }
  EXPECT_EQ(minus(w.requests(), r), (std::vector<int>{40, 0, 0})) << "every canary call reaches the canary";
  r = w.requests();
  {
    // A tag no provider has: the untagged providers (the default fallback).
    wheelrpc::rpc::RoutingTagScope scope(*wheelrpc::rpc::RoutingTag::make("green"));
    w.calls(20);
  }
  EXPECT_EQ(minus(w.requests(), r), (std::vector<int>{0, 10, 10}));
  EXPECT_EQ(w.client->stats().failed, 0u);
}

TEST(TagRouting, ARulesAddressListAndFallbackDecide) {
  auto rules = std::make_shared<DrivenRules>();
  WeightedCluster w({Mode::reply, Mode::reply, Mode::reply}, client_options(), rules);
  w.source->report({w.info(0, 100), w.info(1, 100), w.info(2, 100)});
  w.connect_all();
  auto set = std::make_shared<CallRules>();
  set->tags["blue"].providers = {text(w.endpoint(2))};
  set->tags["green"].fallback = false;
  rules->report(set);
  auto r = w.requests();
  {
    wheelrpc::rpc::RoutingTagScope scope(*wheelrpc::rpc::RoutingTag::make("blue"));
    w.calls(20);
  }
  EXPECT_EQ(minus(w.requests(), r), (std::vector<int>{0, 0, 20}));
  r = w.requests();
  w.calls(20);
  EXPECT_EQ(minus(w.requests(), r), (std::vector<int>{10, 10, 0}))
      << "the rule made p2 blue's: untagged calls avoid it";
  r = w.requests();
  {
    // green has no provider and may not fall back: the call is never sent,
    // and fails at once (tests/rpc/tag_fallback_test.cc).
    wheelrpc::rpc::RoutingTagScope scope(*wheelrpc::rpc::RoutingTag::make("green"));
    auto f = start(*w.client, "work", "", opts(300ms));
    auto out = wait(f);
    EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
    EXPECT_TRUE(contains(out.response.error_message, "tag 'green'")) << out.response.error_message;
  }
  EXPECT_EQ(w.requests(), r);
  // The rule goes: p2 is untagged again.
  rules->report(std::make_shared<CallRules>());
  r = w.requests();
  w.calls(30);
  EXPECT_EQ(minus(w.requests(), r), (std::vector<int>{10, 10, 10}));
}

}  // namespace
