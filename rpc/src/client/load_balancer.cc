#include "client/load_balancer.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

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

std::optional<std::size_t> LoadBalancer::choose(std::span<const ProviderSnapshot> providers,
                                                const PickPreference& preference) {
  const std::size_t n = providers.size();
  if (n == 0) return std::nullopt;
  auto contains = [](std::span<const std::size_t> set, std::size_t i) {
    return std::find(set.begin(), set.end(), i) != set.end();
  };
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
    }
    if (any) return choose_among(providers, std::span<const bool>(eligible.data(), n));
  }
  return std::nullopt;
}

std::size_t RoundRobinBalancer::choose_among(std::span<const ProviderSnapshot> providers,
                                             std::span<const bool> eligible) {
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

std::size_t LeastActiveBalancer::choose_among(std::span<const ProviderSnapshot> providers,
                                              std::span<const bool> eligible) {
  std::size_t best = providers.size();
  std::uint64_t ties = 0;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (!eligible[i]) continue;
    if (best == providers.size() || providers[i].active < providers[best].active) {
      best = i;
      ties = 1;
    } else if (providers[i].active == providers[best].active && random() % ++ties == 0) {
      best = i;  // reservoir sampling: each tie equally likely
    }
  }
  return best;
}

std::size_t PowerOfTwoBalancer::choose_among(std::span<const ProviderSnapshot> providers,
                                             std::span<const bool> eligible) {
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
    case LoadBalance::round_robin: break;
  }
  return std::make_unique<RoundRobinBalancer>();
}

}  // namespace wheelrpc::rpc::detail
