#pragma once
// The provider set of one subscription, as the registry keeps it: the valid
// ServiceInstances under a prefix, by key. Pure code (no I/O, no locks): not
// thread-safe, used on the registry's strand.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/registry/registry.h>

#include "etcd_json.h"

namespace wheelrpc::registry::detail {

/// Decodes the value of `key` as a provider of `service`: a ServiceInstance
/// (see ServiceInstance::from_json) naming that service. nullopt and `why`
/// otherwise.
std::optional<ServiceInstance> decode_provider(std::string_view service, std::string_view key, std::string_view value,
                                               std::string& why);

class ProviderSet {
 public:
  explicit ProviderSet(std::string service) : service_(std::move(service)) {}

  /// What a change reported: keys skipped as not a ServiceInstance, with why.
  struct Bad {
    std::string key;
    std::string why;
  };

  /// Replaces everything with the result of a full read; returns the bad entries.
  std::vector<Bad> reset(const std::vector<KeyValue>& kvs);
  /// Applies one watch event; a put of a bad value removes the key (it no
  /// longer names a provider) and is returned.
  std::optional<Bad> apply(const WatchEvent& event);

  /// The current set, sorted by endpoint (then by the rest, for a stable order).
  std::vector<ServiceInstance> sorted() const;
  std::size_t size() const noexcept { return by_key_.size(); }

 private:
  std::string service_;
  std::map<std::string, ServiceInstance> by_key_;
};

}  // namespace wheelrpc::registry::detail
