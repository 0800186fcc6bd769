#pragma once
// SubscriptionTarget: what a registry subscription follows under its prefix,
// the provider set (ProviderTarget) or a service's rules (RuleTarget). The
// subscription (registry_subscribe.cc) reads, watches, resumes, re-reads
// after compaction and retries; its target turns what it reads into what its
// listener hears. Strand only (the registry's).

#include <cstdint>
#include <vector>

#include "etcd_json.h"

namespace wheelrpc::registry::detail {

/// What a read or a watch response changed in the registry's counters.
struct TargetCounts {
  std::uint64_t bad_entries = 0;     ///< provider values that are not a ServiceInstance
  std::uint64_t rules_accepted = 0;  ///< rule versions taken
  std::uint64_t rules_refused = 0;   ///< rule versions refused
};

class SubscriptionTarget {
 public:
  virtual ~SubscriptionTarget() = default;
  /// A full read of the prefix replaces what the target holds.
  virtual TargetCounts reset(const std::vector<KeyValue>& kvs) = 0;
  /// The events of one watch response, all at once.
  virtual TargetCounts apply(const std::vector<WatchEvent>& events) = 0;
  /// Tells the listener what the target holds, if it changed since the last
  /// time (always the first time). `revision`: the last one seen. The
  /// listener may unsubscribe (posted) from inside.
  virtual void deliver(std::int64_t revision) = 0;
};

}  // namespace wheelrpc::registry::detail
