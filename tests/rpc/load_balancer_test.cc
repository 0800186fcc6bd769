// Load balancing as a pure policy: snapshots of providers and a call's
// preferences in, an index out. No sockets, no client. Random policies are
// checked over many draws, with bounds far wider than the draws' spread.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <wheelrpc/rpc/options.h>

#include "client/load_balancer.h"

namespace {

using wheelrpc::rpc::LoadBalance;
using wheelrpc::rpc::detail::LeastActiveBalancer;
using wheelrpc::rpc::detail::LoadBalancer;
using wheelrpc::rpc::detail::make_load_balancer;
using wheelrpc::rpc::detail::PickPreference;
using wheelrpc::rpc::detail::PowerOfTwoBalancer;
using wheelrpc::rpc::detail::ProviderSnapshot;
using wheelrpc::rpc::detail::RoundRobinBalancer;

constexpr std::array kPolicies{LoadBalance::round_robin, LoadBalance::least_active, LoadBalance::power_of_two};
constexpr int kDraws = 3000;

ProviderSnapshot up(std::uint64_t active = 0) { return {true, active, 0}; }
ProviderSnapshot down(std::uint64_t active = 0) { return {false, active, 0}; }

/// A call's preferences, owning the index lists PickPreference spans.
struct Prefs {
  std::vector<std::size_t> tried;
  std::optional<std::size_t> last_failed;
  std::vector<std::size_t> exclude;
  PickPreference view() const {
    PickPreference p;
    p.tried = {tried.data(), tried.size()};
    p.last_failed = last_failed;
    p.exclude = {exclude.data(), exclude.size()};
    return p;
  }
};

/// How often each index (or nullopt, as -1) was chosen over `draws` calls.
std::map<long, int> histogram(LoadBalancer& lb, const std::vector<ProviderSnapshot>& ps, const Prefs& prefs,
                              int draws = kDraws) {
  std::map<long, int> h;
  for (int i = 0; i < draws; ++i) {
    const auto c = lb.choose(ps, prefs.view());
    ++h[c ? static_cast<long>(*c) : -1L];
  }
  return h;
}

std::set<long> keys(const std::map<long, int>& h) {
  std::set<long> out;
  for (const auto& [k, n] : h) out.insert(k);
  return out;
}

// ---------------------------------------------------------------- every policy

TEST(LoadBalancer, MakeLoadBalancerBuildsThePolicyItIsAskedFor) {
  EXPECT_NE(dynamic_cast<RoundRobinBalancer*>(make_load_balancer(LoadBalance::round_robin).get()), nullptr);
  EXPECT_NE(dynamic_cast<LeastActiveBalancer*>(make_load_balancer(LoadBalance::least_active).get()), nullptr);
  EXPECT_NE(dynamic_cast<PowerOfTwoBalancer*>(make_load_balancer(LoadBalance::power_of_two).get()), nullptr);
}

TEST(LoadBalancer, NoProvidersOrNoneReadyChoosesNothing) {
  for (auto policy : kPolicies) {
    auto lb = make_load_balancer(policy);
    EXPECT_EQ(lb->choose({}), std::nullopt) << to_string(policy);
    const std::vector<ProviderSnapshot> none_ready{down(), down(3), down()};
    EXPECT_EQ(lb->choose(none_ready), std::nullopt) << to_string(policy);
    Prefs tried_some{{0, 1}, 1, {}};
    EXPECT_EQ(lb->choose(none_ready, tried_some.view()), std::nullopt) << to_string(policy);
  }
}

// Each row: providers, a call's preferences, and the only indexes any policy
// may choose ({-1}: none may be chosen). Every policy is drawn many times
// per row; round robin must come to every allowed index, and so must the
// other policies where the allowed providers are equally busy.
struct EligibilityCase {
  const char* name;
  std::vector<ProviderSnapshot> providers;
  Prefs prefs;
  std::set<long> allowed;  // -1: nullopt
};

const std::vector<EligibilityCase>& eligibility_cases() {
  static const std::vector<EligibilityCase> cases{
      {"a single ready provider", {down(), up(), down()}, {}, {1}},
      {"unready providers are skipped, even idle ones", {down(0), up(7), down(0), up(7)}, {}, {1, 3}},
      {"nothing tried: every ready provider", {up(), up(), up()}, {}, {0, 1, 2}},
      {"nothing tried: last_failed alone does not exclude", {up(), up()}, {{}, 0, {}}, {0, 1}},
      {"untried providers first", {up(), up(), up()}, {{0}, 0, {}}, {1, 2}},
      {"untried first, even busier ones", {up(0), up(0), up(50)}, {{0, 1}, 1, {}}, {2}},
      {"untried but unready: any but the last failed", {up(), up(), down()}, {{0, 1}, 1, {}}, {0}},
      {"all tried: any but the last failed", {up(), up(), up()}, {{0, 1, 2}, 2, {}}, {0, 1}},
      {"all tried, no failure: any", {up(), up(), up()}, {{0, 1, 2}, std::nullopt, {}}, {0, 1, 2}},
      {"only the last failed is ready: it, rather than none", {down(), up(), down()}, {{0, 1}, 1, {}}, {1}},
      {"exclude is never chosen", {up(0), up(9), up(9)}, {{}, std::nullopt, {0}}, {1, 2}},
      {"exclude beats the untried tier", {up(), up(), up()}, {{0}, std::nullopt, {1, 2}}, {0}},
      {"exclude beats the last-failed fallback", {up(), up()}, {{0, 1}, 1, {0}}, {1}},
      {"everything ready is excluded: none", {up(), down(), up()}, {{0}, std::nullopt, {0, 2}}, {-1}},
      {"exclude and not ready together: none", {up(), down()}, {{}, std::nullopt, {0}}, {-1}},
  };
  return cases;
}

TEST(LoadBalancer, EveryPolicyChoosesOnlyFromTheFirstTierWithAnEligibleProvider) {
  for (auto policy : kPolicies) {
    for (const auto& row : eligibility_cases()) {
      auto lb = make_load_balancer(policy);
      const auto h = histogram(*lb, row.providers, row.prefs, 300);
      const auto seen = keys(h);
      for (long k : seen) {
        EXPECT_TRUE(row.allowed.count(k)) << to_string(policy) << ", " << row.name << ": chose " << k;
      }
      // least_active and power_of_two prefer idle providers: only rows whose
      // allowed providers are equally busy promise that each comes up.
      bool equal_load = true;
      for (long k : row.allowed) {
        if (k >= 0 && row.providers[static_cast<std::size_t>(k)].active !=
                          row.providers[static_cast<std::size_t>(*row.allowed.begin())].active) {
          equal_load = false;
        }
      }
      if (equal_load || policy == LoadBalance::round_robin) {
        EXPECT_EQ(seen, row.allowed) << to_string(policy) << ", " << row.name;
      }
    }
  }
}

// ---------------------------------------------------------------- round robin

TEST(LoadBalancer, RoundRobinGoesInTurn) {
  RoundRobinBalancer lb;
  const std::vector<ProviderSnapshot> ps{up(5), up(0), up(9)};  // load does not matter
  std::vector<std::size_t> order;
  for (int i = 0; i < 7; ++i) order.push_back(*lb.choose(ps));
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2, 0}));
}

TEST(LoadBalancer, RoundRobinSkipsUnreadyProvidersAndKeepsItsTurn) {
  RoundRobinBalancer lb;
  std::vector<ProviderSnapshot> ps{up(), down(), up(), up()};
  std::vector<std::size_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(*lb.choose(ps));
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 2, 3, 0, 2, 3}));
  // Provider 1 comes back: it has its turn in the next round.
  ps[1] = up();
  order.clear();
  for (int i = 0; i < 4; ++i) order.push_back(*lb.choose(ps));
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3}));
  // Provider 2 goes down while it is next: the turn passes to 3.
  EXPECT_EQ(lb.choose(ps), 0u);
  EXPECT_EQ(lb.choose(ps), 1u);
  ps[2] = down();
  EXPECT_EQ(lb.choose(ps), 3u);
  EXPECT_EQ(lb.choose(ps), 0u);
}

TEST(LoadBalancer, RoundRobinWithPreferencesMovesOnFromWhatItChose) {
  RoundRobinBalancer lb;
  const std::vector<ProviderSnapshot> ps{up(), up(), up(), up()};
  EXPECT_EQ(lb.choose(ps), 0u);
  Prefs avoid{{1}, 1, {2}};  // tried 1 (failed), waits on 2: 3 is next eligible
  EXPECT_EQ(lb.choose(ps, avoid.view()), 3u);
  EXPECT_EQ(lb.choose(ps), 0u) << "the cursor moved past the provider it chose";
}

// ---------------------------------------------------------------- least active

TEST(LoadBalancer, LeastActiveChoosesTheReadyProviderWithFewestAttemptsInFlight) {
  struct Row {
    const char* name;
    std::vector<ProviderSnapshot> providers;
    Prefs prefs;
    std::size_t expected;
  };
  const std::vector<Row> rows{
      {"the idlest", {up(3), up(1), up(2)}, {}, 1},
      {"the idlest is the last", {up(3), up(4), up(2)}, {}, 2},
      {"an idle but unready one is skipped", {up(3), down(0), up(2)}, {}, 2},
      {"an idle but excluded one is skipped", {up(3), up(0), up(2)}, {{}, std::nullopt, {1}}, 2},
      {"the idlest untried one", {up(0), up(5), up(4)}, {{0}, 0, {}}, 2},
      {"busy but the only eligible", {up(100), down(0)}, {}, 0},
      {"failures do not count, attempts in flight do", {{true, 2, 1000}, {true, 3, 0}}, {}, 0},
  };
  LeastActiveBalancer lb;
  for (const auto& row : rows) {
    for (int i = 0; i < 200; ++i) {
      ASSERT_EQ(lb.choose(row.providers, row.prefs.view()), row.expected) << row.name;
    }
  }
}

TEST(LoadBalancer, LeastActiveBreaksEachTieUniformlyAtRandom) {
  LeastActiveBalancer lb;
  // Three tied at 1 in flight; one busier; one idle but not ready.
  const std::vector<ProviderSnapshot> ps{up(2), up(1), down(0), up(1), up(1)};
  const auto h = histogram(lb, ps, {}, kDraws);
  EXPECT_EQ(keys(h), (std::set<long>{1, 3, 4}));
  for (long k : {1L, 3L, 4L}) {
    // Expected 1000 each, standard deviation about 26: 700 .. 1300 cannot flake.
    EXPECT_GT(h.at(k), kDraws / 3 - 300) << "provider " << k;
    EXPECT_LT(h.at(k), kDraws / 3 + 300) << "provider " << k;
  }
}

TEST(LoadBalancer, LeastActiveBreaksATieOfTwoAtTheStartAndEnd) {
  LeastActiveBalancer lb;
  const std::vector<ProviderSnapshot> ps{up(0), up(4), up(4), up(0)};
  const auto h = histogram(lb, ps, {}, kDraws);
  EXPECT_EQ(keys(h), (std::set<long>{0, 3}));
  EXPECT_GT(h.at(0), kDraws / 2 - 300);
  EXPECT_GT(h.at(3), kDraws / 2 - 300);
}

// ---------------------------------------------------------------- power of two

TEST(LoadBalancer, PowerOfTwoWithTwoEligibleAlwaysChoosesTheLessBusy) {
  PowerOfTwoBalancer lb;
  const std::vector<ProviderSnapshot> ps{up(7), down(0), up(2)};
  const auto h = histogram(lb, ps, {}, 500);
  EXPECT_EQ(keys(h), (std::set<long>{2}));
}

TEST(LoadBalancer, PowerOfTwoNeverChoosesTheBusiestOfThreeAndFavoursTheIdlest) {
  PowerOfTwoBalancer lb;
  const std::vector<ProviderSnapshot> ps{up(0), up(5), up(10)};
  const auto h = histogram(lb, ps, {}, kDraws);
  EXPECT_EQ(h.count(2), 0u) << "the busiest loses every pair it is drawn in";
  // The idlest wins every pair it is in: 2 of the 3 pairs, so about 2000.
  ASSERT_TRUE(h.count(0));
  ASSERT_TRUE(h.count(1));
  EXPECT_GT(h.at(0), 2 * kDraws / 3 - 300);
  EXPECT_LT(h.at(0), 2 * kDraws / 3 + 300);
}

TEST(LoadBalancer, PowerOfTwoSpreadsEvenlyOverEquallyBusyProviders) {
  PowerOfTwoBalancer lb;
  const std::vector<ProviderSnapshot> ps{up(1), up(1), up(1), up(1)};
  const auto h = histogram(lb, ps, {}, kDraws);
  EXPECT_EQ(keys(h), (std::set<long>{0, 1, 2, 3}));
  for (const auto& [k, n] : h) {
    EXPECT_GT(n, kDraws / 4 - 250) << "provider " << k;  // expected 750, sd about 24
    EXPECT_LT(n, kDraws / 4 + 250) << "provider " << k;
  }
}

TEST(LoadBalancer, PowerOfTwoWithOneEligibleChoosesIt) {
  PowerOfTwoBalancer lb;
  const std::vector<ProviderSnapshot> ps{up(0), up(99), up(0)};
  Prefs prefs{{}, std::nullopt, {0, 2}};
  const auto h = histogram(lb, ps, prefs, 200);
  EXPECT_EQ(keys(h), (std::set<long>{1}));
}

}  // namespace
