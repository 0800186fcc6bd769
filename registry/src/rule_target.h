#pragma once
// RuleTarget: a subscription to a service's rules; what its listener hears
// (a consumer's CallRules, a provider's ServerRules) is built from the good
// versions once read, then after every watch response (or re-read) that
// changed them. Refusals are logged at warn here. Strand only.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rule_set.h"
#include "subscription_target.h"

namespace wheelrpc::registry::detail {

class RuleTarget final : public SubscriptionTarget {
 public:
  /// Builds what the listener hears from the good versions in force at
  /// `revision`, and tells it (it may unsubscribe, posted, from inside).
  using Deliver = std::function<void(const GoodRules& good, std::int64_t revision)>;

  /// `prefix`: "<root>/<service>/rules/".
  RuleTarget(std::string prefix, Deliver deliver) : deliver_(std::move(deliver)), set_(std::move(prefix)) {}

  TargetCounts reset(const std::vector<KeyValue>& kvs) override { return counts(set_.reset(kvs)); }
  TargetCounts apply(const std::vector<WatchEvent>& events) override { return counts(set_.apply(events)); }
  void deliver(std::int64_t revision) override;

 private:
  TargetCounts counts(const RuleSet::Outcome& outcome);

  Deliver deliver_;
  RuleSet set_;
};

}  // namespace wheelrpc::registry::detail
