#pragma once
// RuleTarget: a subscription to a service's rules for one consumer; its
// listener hears the consumer's CallRules once read, then after every watch
// response (or re-read) that changed the good versions. Refusals are logged
// at warn here. Strand only.

#include <string>
#include <vector>

#include <wheelrpc/registry/registry.h>
#include <wheelrpc/registry/rules.h>

#include "rule_set.h"
#include "subscription_target.h"

namespace wheelrpc::registry::detail {

class RuleTarget final : public SubscriptionTarget {
 public:
  /// `prefix`: "<root>/<service>/rules/"; `source` goes into each
  /// CallRules ("etcd at 127.0.0.1:2379").
  RuleTarget(std::string prefix, RuleScope consumer, RulesListener listener, std::string source)
      : consumer_(std::move(consumer)), listener_(std::move(listener)), source_(std::move(source)), set_(prefix) {}

  TargetCounts reset(const std::vector<KeyValue>& kvs) override { return counts(set_.reset(kvs)); }
  TargetCounts apply(const std::vector<WatchEvent>& events) override { return counts(set_.apply(events)); }
  void deliver(std::int64_t revision) override;

 private:
  TargetCounts counts(const RuleSet::Outcome& outcome);

  RuleScope consumer_;
  RulesListener listener_;
  std::string source_;
  RuleSet set_;
};

}  // namespace wheelrpc::registry::detail
