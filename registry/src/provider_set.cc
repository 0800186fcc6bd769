#include "provider_set.h"

#include <algorithm>
#include <tuple>

namespace wheelrpc::registry::detail {

std::optional<ServiceInstance> decode_provider(std::string_view service, std::string_view key, std::string_view value,
                                               std::string& why) {
  std::string inner;
  auto inst = ServiceInstance::from_json(value, inner);
  if (!inst) {
    why = "value of " + std::string(key) + " is not a ServiceInstance: " + inner;
    return std::nullopt;
  }
  if (inst->service != service) {
    why = "value of " + std::string(key) + " names service '" + inst->service + "', not '" + std::string(service) + "'";
    return std::nullopt;
  }
  return inst;
}

std::vector<ProviderSet::Bad> ProviderSet::reset(const std::vector<KeyValue>& kvs) {
  by_key_.clear();
  std::vector<Bad> bad;
  for (const auto& kv : kvs) {
    std::string why;
    if (auto inst = decode_provider(service_, kv.key, kv.value, why)) {
      inst->create_revision = kv.create_revision;
      by_key_.emplace(kv.key, std::move(*inst));
    } else {
      bad.push_back({kv.key, std::move(why)});
    }
  }
  return bad;
}

std::optional<ProviderSet::Bad> ProviderSet::apply(const WatchEvent& event) {
  if (event.type == EventType::del) {
    by_key_.erase(event.kv.key);
    return std::nullopt;
  }
  std::string why;
  if (auto inst = decode_provider(service_, event.kv.key, event.kv.value, why)) {
    inst->create_revision = event.kv.create_revision;
    by_key_.insert_or_assign(event.kv.key, std::move(*inst));
    return std::nullopt;
  }
  by_key_.erase(event.kv.key);
  return Bad{event.kv.key, std::move(why)};
}

std::vector<ServiceInstance> ProviderSet::sorted() const {
  std::vector<ServiceInstance> out;
  out.reserve(by_key_.size());
  for (const auto& [key, inst] : by_key_) out.push_back(inst);
  std::sort(out.begin(), out.end(), [](const ServiceInstance& a, const ServiceInstance& b) {
    return std::tie(a.endpoint, a.service, a.weight, a.version, a.zone, a.tags) <
           std::tie(b.endpoint, b.service, b.weight, b.version, b.zone, b.tags);
  });
  return out;
}

}  // namespace wheelrpc::registry::detail
