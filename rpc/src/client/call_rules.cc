// CallRules and PolicyOverrides: a snapshot of runtime overrides, applied to
// a call's options between the call's own values and the IDL's.
#include <wheelrpc/rpc/call_rules.h>

#include <algorithm>

namespace wheelrpc::rpc {
namespace {

template <class T>
void take(std::optional<Overridden<T>>& mine, const std::optional<Overridden<T>>& more) {
  if (more) mine = more;
}

template <class T, class V>
void put(Setting<T>& setting, const std::optional<Overridden<V>>& o) noexcept {
  if (!o) return;
  setting.override_with(static_cast<T>(o->value), o->force ? Layer::forced_override : Layer::runtime_override);
}

// Calls f(a.field, b.field) for every field; `A` may be const.
template <class A, class F>
void each_field(A& a, const PolicyOverrides& b, F f) {
  f(a.timeout, b.timeout);
  f(a.attempt_timeout, b.attempt_timeout);
  f(a.retries, b.retries);
  f(a.idempotent, b.idempotent);
  f(a.hedge_delay, b.hedge_delay);
  f(a.wait_for_ready, b.wait_for_ready);
  f(a.compression, b.compression);
  f(a.compression_level, b.compression_level);
  f(a.stream_timeout, b.stream_timeout);
  f(a.message_timeout, b.message_timeout);
  f(a.stall_timeout, b.stall_timeout);
  f(a.first_message_timeout, b.first_message_timeout);
}

}  // namespace

void PolicyOverrides::merge(const PolicyOverrides& more) {
  each_field(*this, more, [](auto& mine, const auto& theirs) { take(mine, theirs); });
}

void PolicyOverrides::apply(CallOptions& call) const noexcept {
  put(call.timeout, timeout);
  put(call.attempt_timeout, attempt_timeout);
  put(call.retries, retries);
  put(call.idempotent, idempotent);
  put(call.hedge_delay, hedge_delay);
  put(call.wait_for_ready, wait_for_ready);
  put(call.compression, compression);
  put(call.compression_level, compression_level);
  put(call.stream_timeout, stream_timeout);
  put(call.message_timeout, message_timeout);
  put(call.stall_timeout, stall_timeout);
  put(call.first_message_timeout, first_message_timeout);
}

bool PolicyOverrides::empty() const noexcept {
  bool any = false;
  each_field(*this, *this, [&](const auto&, const auto& field) { any = any || field.has_value(); });
  return !any;
}

PolicyOverrides CallRules::for_method(std::string_view method) const {
  PolicyOverrides out = service;
  if (auto it = methods.find(method); it != methods.end()) out.merge(it->second);
  return out;
}

void CallRules::apply(std::string_view method, CallOptions& call) const noexcept {
  service.apply(call);
  if (auto it = methods.find(method); it != methods.end()) it->second.apply(call);
}

bool CallRules::ProviderWeight::chooses(std::string_view address, std::string_view zone,
                                        std::string_view tag) const noexcept {
  const auto has = [](const std::vector<std::string>& list, std::string_view v) {
    return !v.empty() && std::find(list.begin(), list.end(), v) != list.end();
  };
  if (addresses.empty() && zones.empty() && tags.empty()) return true;
  return has(addresses, address) || has(zones, zone) || has(tags, tag);
}

std::shared_ptr<const std::string> CallRules::timeout_origin(std::string_view method) const {
  if (auto it = methods.find(method); it != methods.end() && it->second.timeout) return it->second.timeout->origin;
  return service.timeout ? service.timeout->origin : nullptr;
}

namespace {

class StaticRules final : public RuleSource {
 public:
  explicit StaticRules(std::shared_ptr<const CallRules> rules) : rules_(std::move(rules)) {}
  void start(Listener listener) override { listener({}, rules_, {}); }
  void stop() override {}
  std::string describe() const override { return rules_ && !rules_->source.empty() ? rules_->source : "static rules"; }

 private:
  std::shared_ptr<const CallRules> rules_;
};

}  // namespace

std::shared_ptr<RuleSource> static_rules(std::shared_ptr<const CallRules> rules) {
  return std::make_shared<StaticRules>(rules ? std::move(rules) : std::make_shared<const CallRules>());
}

}  // namespace wheelrpc::rpc
