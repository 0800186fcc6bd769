// ClientCore::explain: which layer sets each policy setting of a method now
// (docs/governance.md, "Which timeout wins").
#include <wheelrpc/transport/compression.h>

#include "client/client_context.h"
#include "client/client_core.h"

namespace wheelrpc::rpc::detail {
namespace {

std::string text(std::chrono::milliseconds v) {
  return v == CallOptions::kNoDeadline ? std::string("none") : std::to_string(v.count());
}
std::string text(bool v) { return v ? "true" : "false"; }
std::string text(int v) { return std::to_string(v); }
std::string text(transport::Compression v) { return std::string(transport::to_string(v)); }
std::string text(LoadBalance v) { return to_string(v); }

// One setting's layers, highest first: an override (forced or not), the
// IDL, the client's default, the built-in one.
template <class T, class V>
EffectiveSetting layers_of(std::string name, const std::optional<Overridden<V>>& rule, const Setting<T>* idl,
                           const Setting<T>& client_default, const Setting<T>& built_in) {
  EffectiveSetting s;
  s.name = std::move(name);
  if (rule) {
    s.layers.push_back({rule->force ? Layer::forced_override : Layer::runtime_override,
                        text(static_cast<T>(rule->value)), rule->origin ? *rule->origin : std::string()});
  }
  if (idl && idl->layer() == Layer::idl) s.layers.push_back({Layer::idl, text(**idl), {}});
  if (client_default.given()) s.layers.push_back({Layer::client_default, text(*client_default), {}});
  s.layers.push_back({Layer::built_in, text(*built_in), {}});
  s.winner = s.layers.front();
  return s;
}

}  // namespace

MethodExplanation ClientCore::explain(std::string_view method) const {
  MethodExplanation out;
  out.method = std::string(method);
  const auto& options = ctx_->options;
  std::shared_ptr<const CallRules> rules;
  if (ctx_->has_rules.load(std::memory_order_acquire)) rules = ctx_->rules.load();
  if (options.rules) out.rules_source = options.rules->describe();
  out.rules_error = ctx_->rules_error_now();
  const PolicyOverrides o = rules ? rules->for_method(method) : PolicyOverrides{};
  if (rules) out.rules_revision = rules->revision;
  const auto idl = ctx_->idl_of(method);
  out.idl_known = idl.has_value();
  const CallOptions built_in;
  const auto& d = options.call_defaults;
  auto add = [&](const char* name, const auto& rule, auto member) {
    out.settings.push_back(layers_of(name, rule, idl ? &((*idl).*member) : nullptr, d.*member, built_in.*member));
  };
  add("timeout_ms", o.timeout, &CallOptions::timeout);
  add("attempt_timeout_ms", o.attempt_timeout, &CallOptions::attempt_timeout);
  add("retries", o.retries, &CallOptions::retries);
  add("idempotent", o.idempotent, &CallOptions::idempotent);
  add("hedge_delay_ms", o.hedge_delay, &CallOptions::hedge_delay);
  add("wait_for_ready", o.wait_for_ready, &CallOptions::wait_for_ready);
  add("compression", o.compression, &CallOptions::compression);
  add("compression_level", o.compression_level, &CallOptions::compression_level);
  add("stream_timeout_ms", o.stream_timeout, &CallOptions::stream_timeout);
  add("message_timeout_ms", o.message_timeout, &CallOptions::message_timeout);
  add("stall_timeout_ms", o.stall_timeout, &CallOptions::stall_timeout);
  add("first_message_timeout_ms", o.first_message_timeout, &CallOptions::first_message_timeout);

  auto& lb = out.load_balance;
  lb.name = "load_balance";
  if (rules && rules->load_balance) {
    lb.layers.push_back({rules->load_balance->force ? Layer::forced_override : Layer::runtime_override,
                         text(rules->load_balance->value),
                         rules->load_balance->origin ? *rules->load_balance->origin : std::string()});
  }
  lb.layers.push_back({options.load_balance == LoadBalance::round_robin ? Layer::built_in : Layer::client_default,
                       text(options.load_balance),
                       {}});
  lb.winner = lb.layers.front();
  return out;
}

}  // namespace wheelrpc::rpc::detail
