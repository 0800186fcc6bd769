#pragma once
// ProviderTarget: a subscription to a service's providers; its listener
// hears the full sorted set, and only when it changed. Strand only.

#include <optional>
#include <string>
#include <vector>

#include <wheelrpc/registry/registry.h>

#include "provider_set.h"
#include "subscription_target.h"

namespace wheelrpc::registry::detail {

class ProviderTarget final : public SubscriptionTarget {
 public:
  /// `prefix` names the subscription in log lines.
  ProviderTarget(std::string service, std::string prefix, ProviderListener listener)
      : prefix_(std::move(prefix)), listener_(std::move(listener)), set_(std::move(service)) {}

  TargetCounts reset(const std::vector<KeyValue>& kvs) override;
  TargetCounts apply(const std::vector<WatchEvent>& events) override;
  void deliver(std::int64_t revision) override;

 private:
  std::string prefix_;
  ProviderListener listener_;
  ProviderSet set_;
  std::optional<std::vector<ServiceInstance>> delivered_;
};

}  // namespace wheelrpc::registry::detail
