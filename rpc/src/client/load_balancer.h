#pragma once
// Load balancing: which provider an attempt goes to. Pure policy: it sees only
// snapshots of the providers (ready, attempts in flight, recent failures,
// weight) and the call's preferences, never a socket or a lock of the client's.
//
// Preference tiers (the same for every policy): a provider the call has not
// tried yet; then any but the one that failed last; then any. A provider in
// `exclude` (a hedge never goes where the call already waits) and a provider
// that is not ready are never chosen. Within the first tier that has an
// eligible provider, the policy chooses.
//
// Weights (ProviderSnapshot::weight, 0..10000): a provider of weight 0 is
// never chosen while a ready provider of weight > 0 that is not excluded
// exists (it drains); when every such provider has weight 0, they are all
// chosen as if their weights were equal (a drained fleet still serves). When
// the eligible providers' weights are equal, every policy behaves exactly as
// unweighted (the round robin stays one atomic cursor).
//
// Thread safety: `choose` may be called from any number of threads at once
// (the round robin's cursor is an atomic, its weighted state is under a
// spin lock, random draws use a per-thread generator).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc::detail {

/// What a policy may know of one provider, read without a lock.
struct ProviderSnapshot {
  bool ready = false;          ///< its connection is ready for calls (and healthy, with health checking)
  std::uint64_t active = 0;    ///< attempts in flight on it
  std::uint64_t failures = 0;  ///< attempts that failed on it so far
  std::uint32_t weight = 100;  ///< relative weight, 0..10000 (ProviderInfo::weight, or a rule's)
  bool ejected = false;        ///< outlier detection ejected it: chosen only when no other provider can be
  bool probing = false;        ///< on probation after an ejection: one attempt at a time
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
  /// The policy it implements.
  virtual LoadBalance policy() const noexcept = 0;

 protected:
  /// Chooses among the providers for which `eligible[i]` is true (at least
  /// one). `equal`: their weights are to be taken as equal (they are, or all
  /// are 0); otherwise every eligible provider has a weight > 0.
  virtual std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                                   bool equal) = 0;
  /// For a tier whose `eligible` providers differ in weight: drops those of
  /// weight 0 if one of weight > 0 is eligible, and says whether the rest
  /// are `equal`. False when every eligible one has weight 0 but a ready
  /// provider of weight > 0 is not excluded (it is in a later tier).
  static bool weigh(std::span<const ProviderSnapshot> providers, const PickPreference& preference,
                    std::span<bool> eligible, bool& equal) noexcept;
  /// A uniformly distributed number (per-thread splitmix64).
  static std::uint64_t random() noexcept;
  /// An eligible index drawn with probability weight / (sum of eligible
  /// weights), leaving out `skip` (npos: none). At least one eligible
  /// provider other than `skip` has weight > 0.
  static std::size_t draw_weighted(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                                   std::size_t skip = static_cast<std::size_t>(-1)) noexcept;
};

/// In turn: the next eligible provider after the last one chosen. With
/// unequal weights, nginx's smooth weighted round robin: each pick adds
/// every eligible provider's weight to its running score, takes the highest
/// score (the lowest index on a tie) and takes the eligible total off it, so
/// 5:1:1 goes a,a,b,a,c,a,a. Its scores are by index: one balancer serves
/// one provider set (ProviderSet::balancer).
class RoundRobinBalancer final : public LoadBalancer {
 public:
  LoadBalance policy() const noexcept override { return LoadBalance::round_robin; }

 protected:
  std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                           bool equal) override;

 private:
  std::size_t choose_weighted(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible);

  std::atomic<std::size_t> next_{0};
  common::SpinLock mu_;
  std::vector<std::int64_t> current_ WHEELRPC_GUARDED_BY(mu_);  // smooth WRR scores, by index
};

/// Dubbo's LeastActive: fewest attempts in flight; ties broken at random,
/// in proportion to weight (uniformly when the weights are equal).
class LeastActiveBalancer final : public LoadBalancer {
 public:
  LoadBalance policy() const noexcept override { return LoadBalance::least_active; }

 protected:
  std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                           bool equal) override;
};

/// Power of two choices: two distinct eligible providers drawn at random in
/// proportion to weight, the one with fewer attempts in flight per unit of
/// weight (active / weight; the first drawn on a tie).
class PowerOfTwoBalancer final : public LoadBalancer {
 public:
  LoadBalance policy() const noexcept override { return LoadBalance::power_of_two; }

 protected:
  std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                           bool equal) override;
};

/// Load-aware: nginx's smooth weighted round robin (as RoundRobinBalancer's
/// weighted one) over weights the caller scaled by each provider's load
/// factor (ProviderReview; CallDriver::pick), so a provider with half the
/// capacity gets half the calls, in a smooth order even at one call in flight.
/// A provider whose turn comes while it holds attempts in flight yields it to
/// the one with the least (in flight + 1) / weight when that is under half
/// its own: a slow provider's share cannot fill a busy client's slots.
class LoadAwareBalancer final : public LoadBalancer {
 public:
  LoadBalance policy() const noexcept override { return LoadBalance::load_aware; }

 protected:
  std::size_t choose_among(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                           bool equal) override;

 private:
  common::SpinLock mu_;
  std::vector<std::int64_t> current_ WHEELRPC_GUARDED_BY(mu_);  // smooth WRR scores, by index
};

/// nginx's smooth weighted round robin over the `eligible` providers' weights
/// with the running scores `current` (by index; resized to fit).
std::size_t smooth_weighted_pick(std::span<const ProviderSnapshot> providers, std::span<const bool> eligible,
                                 std::vector<std::int64_t>& current);

/// Outlier detection's say in a pick: a provider on probation with an
/// attempt in flight is not ready (one probe at a time); ejected providers
/// are not ready while another ready provider outside `exclude` is.
void set_aside_outliers(std::span<ProviderSnapshot> providers, std::span<const std::size_t> exclude) noexcept;

std::unique_ptr<LoadBalancer> make_load_balancer(LoadBalance policy);

}  // namespace wheelrpc::rpc::detail
