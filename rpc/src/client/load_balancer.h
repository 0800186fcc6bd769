#pragma once
// Load balancing: which provider an attempt goes to. Pure policy: it sees only
// snapshots of the providers (ready, attempts in flight, recent failures) and
// the call's preferences, never a socket or a lock of the client's.
//
// Preference tiers (the same for every policy): a provider the call has not
// tried yet; then any but the one that failed last; then any. A provider in
// `exclude` (a hedge never goes where the call already waits) and a provider
// that is not ready are never chosen. Within the first tier that has an
// eligible provider, the policy chooses.
//
// Thread safety: `choose` may be called from any number of threads at once
// (the round robin's cursor is an atomic, random draws use a per-thread
// generator).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc::detail {

/// What a policy may know of one provider, read without a lock.
struct ProviderSnapshot {
  bool ready = false;          ///< its connection is ready for calls (and healthy, with health checking)
  std::uint64_t active = 0;    ///< attempts in flight on it
  std::uint64_t failures = 0;  ///< attempts that failed on it so far
};

/// The call's wishes, as provider indexes.
struct PickPreference {
  std::span<const std::size_t> tried;      ///< providers this call already tried
  std::optional<std::size_t> last_failed;  ///< the provider of its last failed attempt
  std::span<const std::size_t> exclude;    ///< never these (where the call already waits)
};

class LoadBalancer {
 public:
  virtual ~LoadBalancer() = default;
  /// The index of the chosen provider, or nullopt when none is eligible.
  std::optional<std::size_t> choose(std::span<const ProviderSnapshot> providers, const PickPreference& preference = {});

 protected:
  /// Chooses among the providers for which `eligible[i]` is true (at least one).
  virtual std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible) = 0;
  /// A uniformly distributed number (per-thread splitmix64).
  static std::uint64_t random() noexcept;
};

/// In turn: the next eligible provider after the last one chosen.
class RoundRobinBalancer final : public LoadBalancer {
 protected:
  std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible) override;

 private:
  std::atomic<std::size_t> next_{0};
};

/// Dubbo's LeastActive: fewest attempts in flight; ties broken uniformly at random.
class LeastActiveBalancer final : public LoadBalancer {
 protected:
  std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible) override;
};

/// Power of two choices: two distinct eligible providers at random, the one
/// with fewer attempts in flight (the first drawn on a tie).
class PowerOfTwoBalancer final : public LoadBalancer {
 protected:
  std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible) override;
};

std::unique_ptr<LoadBalancer> make_load_balancer(LoadBalance policy);

}  // namespace wheelrpc::rpc::detail
