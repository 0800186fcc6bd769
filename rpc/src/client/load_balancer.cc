#include "client/load_balancer.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include <wheelrpc/common/mutex.h>

namespace wheelrpc::rpc::detail {

std::uint64_t LoadBalancer::random() noexcept {
  // splitmix64, one state per thread, seeded from the state's address and a
  // process-wide counter so threads draw different sequences.
  static std::atomic<std::uint64_t> seeds{0x2545F4914F6CDD1Dull};
  thread_local std::uint64_t state =
      seeds.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed) ^ reinterpret_cast<std::uintptr_t>(&state);
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::size_t LoadBalancer::draw_weighted(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                                        std::size_t skip) noexcept {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (eligible[i] && i != skip) total += providers[i].weight;
  }
  std::uint64_t r = random() % total;
  std::size_t last = skip;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (!eligible[i] || i == skip || providers[i].weight == 0) continue;
    if (r < providers[i].weight) return i;
    r -= providers[i].weight;
    last = i;
  }
  return last;  // unreachable: r < total
}

bool LoadBalancer::weigh(std::span<const ProviderSnapshot> providers, const PickPreference& preference,
                         std::span<bool> eligible, bool& equal) noexcept {
  // Weight 0 drains: out of every tier while a ready provider of weight > 0
  // may be chosen; when none may, the zeros serve as equals.
  bool zero = false, positive = false;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (eligible[i]) (providers[i].weight == 0 ? zero : positive) = true;
  }
  if (!positive) {
    for (std::size_t i = 0; i < providers.size(); ++i) {
      if (providers[i].ready && providers[i].weight > 0 &&
          std::find(preference.exclude.begin(), preference.exclude.end(), i) == preference.exclude.end()) {
        return false;  // one waits in a later tier
      }
    }
    equal = true;
    return true;
  }
  std::uint32_t weight = 0;
  equal = true;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (!eligible[i]) continue;
    if (zero && providers[i].weight == 0) {
      eligible[i] = false;
      continue;
    }
    equal = equal && (weight == 0 || providers[i].weight == weight);
    weight = providers[i].weight;
  }
  return true;
}

std::optional<std::size_t> LoadBalancer::choose(std::span<const ProviderSnapshot> providers,
                                                const PickPreference& preference) {
  const std::size_t n = providers.size();
  if (n == 0) return std::nullopt;
  auto contains = [](std::span<const std::size_t> set, std::size_t i) {
    return std::find(set.begin(), set.end(), i) != set.end();
  };
  // Weights are all equal in the common case: `differ` tells (an OR, no
  // branch, in the tier's pass), and the tiers then cost what they cost
  // unweighted.
  const std::uint32_t first_weight = providers[0].weight;
  std::uint32_t differ = 0;
  boost::container::small_vector<bool, 16> eligible(n, false);
  // Tier 0: untried providers (only once the call tried some); 1: any but the
  // last failed; 2: any.
  for (int tier = preference.tried.empty() ? 2 : 0; tier <= 2; ++tier) {
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      bool ok = providers[i].ready && !contains(preference.exclude, i);
      if (ok && tier == 0) ok = !contains(preference.tried, i);
      if (ok && tier == 1) ok = preference.last_failed != i;
      eligible[i] = ok;
      any = any || ok;
      differ |= providers[i].weight ^ first_weight;
    }
    if (!any) continue;
    bool equal = true;
    if (differ != 0 && !weigh(providers, preference, eligible, equal)) [[unlikely]]
      continue;
    return choose_among(providers, std::span<const bool>(eligible.data(), n), equal);
  }
  return std::nullopt;
}

std::size_t RoundRobinBalancer::choose_among(std::span<const ProviderSnapshot> providers,
                                             std::span<const bool> eligible, bool equal) {
  if (!equal) [[unlikely]]
    return choose_weighted(providers, eligible);
  const std::size_t n = providers.size();
  const std::size_t start = next_.load(std::memory_order_relaxed) % n;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (start + k) % n;
    if (eligible[i]) {
      // Racing callers may pick the same provider once; the cursor still moves on.
      next_.store(i + 1, std::memory_order_relaxed);
      return i;
    }
  }
  return start;  // unreachable: choose() guarantees one eligible
}

std::size_t smooth_weighted_pick(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                                 std::vector<std::int64_t>& current) {
  // nginx's smooth weighted round robin (ngx_http_upstream_get_peer).
  const std::size_t n = providers.size();
  if (current.size() != n) current.assign(n, 0);
  std::int64_t total = 0;
  std::size_t best = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (!eligible[i]) continue;
    current[i] += providers[i].weight;
    total += providers[i].weight;
    if (best == n || current[i] > current[best]) best = i;
  }
  current[best] -= total;
  return best;
}

std::size_t RoundRobinBalancer::choose_weighted(std::span<const ProviderSnapshot> providers,
                                                std::span<const bool> eligible) {
  // The scores are one sequence for every caller: a short spin lock, only
  // taken when weights differ.
  common::LockGuard<common::SpinLock> lock(mu_);
  return smooth_weighted_pick(providers, eligible, current_);
}

std::size_t LoadAwareBalancer::choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                                            bool equal) {
  (void)equal;  // equal weights go in turn, as the smooth order has them
  std::size_t pick = 0;
  {
    common::LockGuard<common::SpinLock> lock(mu_);
    pick = smooth_weighted_pick(providers, eligible, current_);
  }
  // The turn is yielded when the provider already holds attempts in flight
  // and another's load with this attempt, (in flight + 1) / weight, would be
  // under half its own: a slow provider keeps its (floor) share at one call
  // in flight but cannot take many of a busy client's slots. It stays charged
  // for the turn (the smooth scores).
  const auto& a = providers[pick];
  if (a.active == 0 || a.weight == 0) return pick;
  auto load_below = [&](std::size_t i, std::size_t j, std::uint64_t times) {  // times x i's load below j's
    return times * (providers[i].active + 1) * providers[j].weight < (providers[j].active + 1) * providers[i].weight;
  };
  std::size_t best = pick;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (eligible[i] && providers[i].weight > 0 && load_below(i, best, 1)) best = i;
  }
  return best != pick && load_below(best, pick, 2) ? best : pick;
}

void set_aside_outliers(std::span<ProviderSnapshot> providers, std::span<const std::size_t> exclude) noexcept {
  bool other = false;  // a ready provider that is neither ejected nor excluded
  for (std::size_t i = 0; i < providers.size(); ++i) {
    auto& p = providers[i];
    if (p.probing && p.active > 0) p.ready = false;  // its probe is in flight
    if (p.ready && !p.ejected && std::find(exclude.begin(), exclude.end(), i) == exclude.end()) other = true;
  }
  if (!other) return;  // the ejected ones serve rather than nobody
  for (auto& p : providers) {
    if (p.ejected) p.ready = false;
  }
}

std::size_t LeastActiveBalancer::choose_among(std::span<const ProviderSnapshot> providers,
                                              std::span<const bool> eligible, bool equal) {
  std::size_t best = providers.size();
  std::uint64_t ties = 0;  // the weight of the ties so far (their number when equal)
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (!eligible[i]) continue;
    const std::uint64_t w = equal ? 1 : providers[i].weight;
    if (best == providers.size() || providers[i].active < providers[best].active) {
      best = i;
      ties = w;
    } else if (providers[i].active == providers[best].active && random() % (ties += w) < w) {
      best = i;  // weighted reservoir sampling: each tie in proportion to its weight
    }
  }
  return best;
}

std::size_t PowerOfTwoBalancer::choose_among(std::span<const ProviderSnapshot> providers,
                                             std::span<const bool> eligible, bool equal) {
  if (!equal) {
    std::size_t count = 0, only = 0;
    for (std::size_t i = 0; i < providers.size(); ++i) {
      if (eligible[i]) {
        ++count;
        only = i;
      }
    }
    if (count == 1) return only;
    const std::size_t a = draw_weighted(providers, eligible);
    const std::size_t b = draw_weighted(providers, eligible, a);
    // b's active / weight below a's, without division.
    return providers[b].active * providers[a].weight < providers[a].active * providers[b].weight ? b : a;
  }
  boost::container::small_vector<std::size_t, 16> ready;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (eligible[i]) ready.push_back(i);
  }
  if (ready.size() == 1) return ready[0];
  const std::size_t a = random() % ready.size();
  std::size_t b = random() % (ready.size() - 1);
  if (b >= a) ++b;
  return providers[ready[b]].active < providers[ready[a]].active ? ready[b] : ready[a];
}

std::unique_ptr<LoadBalancer> make_load_balancer(LoadBalance policy) {
  switch (policy) {
    case LoadBalance::least_active: return std::make_unique<LeastActiveBalancer>();
    case LoadBalance::power_of_two: return std::make_unique<PowerOfTwoBalancer>();
    case LoadBalance::load_aware: return std::make_unique<LoadAwareBalancer>();
    case LoadBalance::round_robin: break;
  }
  return std::make_unique<RoundRobinBalancer>();
}

}  // namespace wheelrpc::rpc::detail
