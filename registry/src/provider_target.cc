#include "provider_target.h"

#include <spdlog/spdlog.h>

#include "log.h"

namespace wheelrpc::registry::detail {

TargetCounts ProviderTarget::reset(const std::vector<KeyValue>& kvs) {
  const auto bad = set_.reset(kvs);
  for (const auto& b : bad) logger()->warn("subscription {}: skipped {}", prefix_, b.why);
  return {.bad_entries = bad.size()};
}

TargetCounts ProviderTarget::apply(const std::vector<WatchEvent>& events) {
  TargetCounts counts;
  for (const auto& e : events) {
    if (auto b = set_.apply(e)) {
      ++counts.bad_entries;
      logger()->warn("subscription {}: skipped {}", prefix_, b->why);
    }
  }
  return counts;
}

void ProviderTarget::deliver(std::int64_t) {
  auto now = set_.sorted();
  if (delivered_ && *delivered_ == now) return;
  delivered_ = now;
  SPDLOG_LOGGER_DEBUG(logger(), "subscription {}: {} provider(s)", prefix_, now.size());
  auto listener = listener_;  // it may unsubscribe (posted) from inside
  listener(now);
}

}  // namespace wheelrpc::registry::detail
