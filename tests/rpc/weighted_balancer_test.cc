// Weighted load balancing as a pure policy (load_balancer.h): smooth weighted
// round robin, weighted power of two choices, least active's weighted ties,
// weight 0 (drained) and a fleet drained whole. Shares are checked over
// 10,000 picks against bounds well outside the draws' spread.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <wheelrpc/rpc/options.h>

#include "client/load_balancer.h"

namespace {

using wheelrpc::rpc::LoadBalance;
using wheelrpc::rpc::detail::LoadBalancer;
using wheelrpc::rpc::detail::make_load_balancer;
using wheelrpc::rpc::detail::PickPreference;
using wheelrpc::rpc::detail::ProviderSnapshot;

constexpr std::array kPolicies{LoadBalance::round_robin, LoadBalance::least_active, LoadBalance::power_of_two};
constexpr int kPicks = 10000;

ProviderSnapshot weighted(std::uint32_t weight, std::uint64_t active = 0) { return {true, active, 0, weight}; }

/// The share of `picks` each provider got.
std::vector<double> shares(LoadBalancer& lb, const std::vector<ProviderSnapshot>& ps, int picks = kPicks) {
  std::vector<int> counts(ps.size(), 0);
  for (int i = 0; i < picks; ++i) {
    const auto c = lb.choose(ps);
    if (!c) {
      ADD_FAILURE() << "no provider chosen";
      break;
    }
    ++counts[*c];
  }
  std::vector<double> out;
  for (int n : counts) out.push_back(static_cast<double>(n) / picks);
  return out;
}

TEST(WeightedBalancer, SmoothRoundRobinFiveOneOneIsNginxSequence) {
  auto lb = make_load_balancer(LoadBalance::round_robin);
  const std::vector ps{weighted(5), weighted(1), weighted(1)};
  std::string seq;
  for (int i = 0; i < 14; ++i) seq += static_cast<char>('a' + *lb->choose(ps));
  EXPECT_EQ(seq, "aabacaaaabacaa");  // a,a,b,a,c,a,a twice
}

TEST(WeightedBalancer, SmoothRoundRobinSharesFollowWeightsWithinOnePercent) {
  auto lb = make_load_balancer(LoadBalance::round_robin);
  const auto s = shares(*lb, {weighted(100), weighted(200), weighted(700)});
  EXPECT_NEAR(s[0], 0.1, 0.01);
  EXPECT_NEAR(s[1], 0.2, 0.01);
  EXPECT_NEAR(s[2], 0.7, 0.01);
}

TEST(WeightedBalancer, EqualWeightsKeepThePlainRoundRobin) {
  auto lb = make_load_balancer(LoadBalance::round_robin);
  const std::vector ps{weighted(300), weighted(300), weighted(300)};
  std::string seq;
  for (int i = 0; i < 6; ++i) seq += static_cast<char>('a' + *lb->choose(ps));
  EXPECT_EQ(seq, "abcabc");
}

TEST(WeightedBalancer, PowerOfTwoDrawsInProportionToWeightWithinThreePercent) {
  // Equal actives (an idle fleet): every pair ties on active / weight, the
  // first drawn wins, and the first draw follows the weights.
  auto lb = make_load_balancer(LoadBalance::power_of_two);
  const auto s = shares(*lb, {weighted(1), weighted(2), weighted(7)});
  EXPECT_NEAR(s[0], 0.1, 0.03);
  EXPECT_NEAR(s[1], 0.2, 0.03);
  EXPECT_NEAR(s[2], 0.7, 0.03);
}

TEST(WeightedBalancer, PowerOfTwoComparesActivePerWeight) {
  // b has twice a's attempts in flight but three times its weight: b is the
  // less loaded per unit of weight and wins every draw of the pair.
  auto lb = make_load_balancer(LoadBalance::power_of_two);
  const auto s = shares(*lb, {weighted(100, 10), weighted(300, 20)}, 2000);
  EXPECT_EQ(s[1], 1.0);
}

TEST(WeightedBalancer, LeastActiveBreaksTiesByWeight) {
  auto lb = make_load_balancer(LoadBalance::least_active);
  const auto s = shares(*lb, {weighted(100, 2), weighted(300, 2), weighted(900, 1)});
  EXPECT_EQ(s[2], 1.0);  // fewest in flight first, whatever the weights
  const auto t = shares(*lb, {weighted(100, 2), weighted(300, 2), weighted(900, 3)});
  EXPECT_NEAR(t[0], 0.25, 0.03);
  EXPECT_NEAR(t[1], 0.75, 0.03);
  EXPECT_EQ(t[2], 0.0);
}

TEST(WeightedBalancer, WeightZeroIsNeverPicked) {
  for (auto policy : kPolicies) {
    auto lb = make_load_balancer(policy);
    const auto s = shares(*lb, {weighted(100), weighted(0), weighted(100)}, 2000);
    EXPECT_EQ(s[1], 0.0) << to_string(policy);
    EXPECT_NEAR(s[0], 0.5, 0.05) << to_string(policy);
  }
}

TEST(WeightedBalancer, WeightZeroIsNotPickedEvenUntriedWhenAnotherCanServe) {
  // A retry prefers untried providers, but not a drained one: it goes back
  // to a provider of weight > 0 (here the one that failed, the only one).
  for (auto policy : kPolicies) {
    auto lb = make_load_balancer(policy);
    const std::vector ps{weighted(100), weighted(0)};
    const std::array<std::size_t, 1> tried{0};
    PickPreference pref;
    pref.tried = tried;
    pref.last_failed = 0;
    for (int i = 0; i < 100; ++i) EXPECT_EQ(lb->choose(ps, pref), 0u) << to_string(policy);
  }
}

TEST(WeightedBalancer, AllZeroAreChosenAsEquals) {
  for (auto policy : kPolicies) {
    auto lb = make_load_balancer(policy);
    const auto s = shares(*lb, {weighted(0), weighted(0), weighted(0), weighted(100, 0)}, 3000);
    EXPECT_GT(s[3], 0.0) << "a ready provider of weight > 0 is there: " << to_string(policy);
    EXPECT_EQ(s[0] + s[1] + s[2], 0.0) << to_string(policy);
    std::vector ps{weighted(0), weighted(0), weighted(0), weighted(100)};
    ps[3].ready = false;  // the only one with weight is down: the drained fleet serves, evenly
    const auto t = shares(*lb, ps, 3000);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(t[i], 1.0 / 3, 0.06) << to_string(policy) << " " << i;
    EXPECT_EQ(t[3], 0.0);
  }
}

TEST(WeightedBalancer, SmoothRoundRobinSkipsAProviderThatIsNotReady) {
  // A provider out of a pick (not ready) takes no score from it: when it is
  // back the sequence goes on, as nginx's does with a peer that was down.
  auto lb = make_load_balancer(LoadBalance::round_robin);
  std::vector ps{weighted(2), weighted(1)};
  std::string seq;
  for (int i = 0; i < 6; ++i) seq += static_cast<char>('a' + *lb->choose(ps));
  EXPECT_EQ(seq, "abaaba");
  ps[0].ready = false;
  EXPECT_EQ(lb->choose(ps), 1u);
  EXPECT_EQ(lb->choose(ps), 1u);
  ps[0].ready = true;
  seq.clear();
  for (int i = 0; i < 3; ++i) seq += static_cast<char>('a' + *lb->choose(ps));
  EXPECT_EQ(seq, "aba");
}

TEST(WeightedBalancer, PolicySwitchChangesTheRuleOfThePick) {
  // What ProviderPool::on_rules does: a new balancer of the rules' policy
  // for the next set. Here a busy provider: round robin still sends it its
  // turn, least active never.
  const std::vector ps{weighted(100, 5), weighted(100, 0)};
  auto rr = make_load_balancer(LoadBalance::round_robin);
  EXPECT_EQ(rr->policy(), LoadBalance::round_robin);
  EXPECT_NEAR(shares(*rr, ps, 1000)[0], 0.5, 0.01);
  auto la = make_load_balancer(LoadBalance::least_active);
  EXPECT_EQ(la->policy(), LoadBalance::least_active);
  EXPECT_EQ(shares(*la, ps, 1000)[0], 0.0);
  EXPECT_EQ(make_load_balancer(LoadBalance::power_of_two)->policy(), LoadBalance::power_of_two);
}

}  // namespace
