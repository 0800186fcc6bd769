#include "rule_set.h"

#include <utility>

namespace wheelrpc::registry::detail {

void RuleSet::put(GoodRules& into, const KeyValue& kv, Outcome& out) {
  if (auto it = into.find(kv.key); it != into.end() && it->second.mod_revision == kv.mod_revision) return;
  std::string why;
  std::optional<RuleDocument> doc;
  const std::string_view name = std::string_view(kv.key).substr(std::min(prefix_.size(), kv.key.size()));
  why = validate_rule_name(name);
  if (why.empty()) doc = parse_rule_document(kv.value, why);
  if (!doc) {
    auto [it, fresh] = refused_.try_emplace(kv.key, kv.mod_revision);
    if (!fresh && it->second == kv.mod_revision) return;  // already reported
    it->second = kv.mod_revision;
    out.refused.push_back({kv.key, kv.mod_revision, std::move(why)});
    return;
  }
  refused_.erase(kv.key);
  into.insert_or_assign(kv.key, RuleVersion{kv.mod_revision, std::move(*doc), rule_origin(kv.key, kv.mod_revision)});
  ++out.accepted;
}

RuleSet::Outcome RuleSet::reset(const std::vector<KeyValue>& kvs) {
  Outcome out;
  GoodRules next;
  std::map<std::string, std::int64_t> refused;
  for (const auto& kv : kvs) {
    // Start from the version in force, so a bad value keeps it and an
    // unchanged one is not parsed again.
    if (auto it = good_.find(kv.key); it != good_.end()) next.insert(*it);
    if (auto it = refused_.find(kv.key); it != refused_.end()) refused.insert(*it);
  }
  refused_.swap(refused);
  for (const auto& kv : kvs) put(next, kv, out);
  auto versions = [](const GoodRules& g) {
    std::map<std::string, std::int64_t> v;
    for (const auto& [k, r] : g) v.emplace(k, r.mod_revision);
    return v;
  };
  if (versions(next) != versions(good_)) changed_ = true;
  good_ = std::move(next);
  return out;
}

RuleSet::Outcome RuleSet::apply(const std::vector<WatchEvent>& events) {
  Outcome out;
  for (const auto& e : events) {
    if (e.type == EventType::del) {
      refused_.erase(e.kv.key);
      if (good_.erase(e.kv.key) != 0) changed_ = true;
      continue;
    }
    const auto accepted = out.accepted;
    put(good_, e.kv, out);
    if (out.accepted != accepted) changed_ = true;
  }
  return out;
}

}  // namespace wheelrpc::registry::detail
