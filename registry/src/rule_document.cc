// Parsing and validating rule documents, and building a consumer's CallRules.
// Every refusal names the field by its path ("methods.echo.timeout_ms") so
// an operator can find it in the document.

#include "rule_document.h"

#include <algorithm>
#include <limits>

#include <boost/json.hpp>

#include <wheelrpc/rpc/routing_tag.h>

#include "endpoint_address.h"

namespace wheelrpc::registry::detail {
namespace json = boost::json;

namespace {

constexpr std::int64_t kMaxMs = 86'400'000;  // one day
constexpr std::int64_t kMaxConcurrency = 1'000'000;

std::string kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "a value";
}

// Each parse step returns false with `why` set.
class Parser {
 public:
  explicit Parser(std::string& why) : why_(why) {}

  bool fail(const std::string& path, const std::string& what) {
    why_ = path + ": " + what;
    return false;
  }
  bool wrong_type(const std::string& path, const char* expected, const json::value& v) {
    return fail(path, std::string("expected ") + expected + ", got " + kind_of(v));
  }

  bool boolean(const std::string& path, const json::value& v, std::optional<bool>& out) {
    if (!v.is_bool()) return wrong_type(path, "a boolean", v);
    out = v.as_bool();
    return true;
  }

  bool integer(const std::string& path, const json::value& v, std::int64_t lo, std::int64_t hi, std::int64_t& out,
               std::optional<std::int64_t> also = std::nullopt) {
    if (v.is_int64()) {
      out = v.as_int64();
    } else if (v.is_uint64()) {
      // Beyond int64: out of every range here.
      return fail(path,
                  std::to_string(v.as_uint64()) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    } else {
      return wrong_type(path, "an integer", v);
    }
    if ((out < lo || out > hi) && out != also) {
      return fail(path, std::to_string(out) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    }
    return true;
  }

  template <class T>
  bool integer(const std::string& path, const json::value& v, std::int64_t lo, std::int64_t hi, std::optional<T>& out,
               std::optional<std::int64_t> also = std::nullopt) {
    std::int64_t n = 0;
    if (!integer(path, v, lo, hi, n, also)) return false;
    out = static_cast<T>(n);
    return true;
  }

  bool strings(const std::string& path, const json::value& v, std::vector<std::string>& out) {
    if (!v.is_array()) return wrong_type(path, "an array of strings", v);
    for (std::size_t i = 0; i < v.as_array().size(); ++i) {
      const auto& e = v.as_array()[i];
      const auto at = path + "[" + std::to_string(i) + "]";
      if (!e.is_string()) return wrong_type(at, "a string", e);
      if (e.as_string().empty()) return fail(at, "is empty");
      out.emplace_back(e.as_string());
    }
    return true;
  }

  bool policy(const std::string& path, const json::value& v, PolicyDocument& p) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    for (const auto& [k, f] : v.as_object()) {
      const std::string at = path + "." + std::string(k);
      bool ok = true;
      if (k == "timeout_ms") {
        ok = integer(at, f, 1, kMaxMs, p.timeout_ms, -1);
      } else if (k == "attempt_timeout_ms") {
        ok = integer(at, f, 0, kMaxMs, p.attempt_timeout_ms);
      } else if (k == "hedge_delay_ms") {
        ok = integer(at, f, 0, kMaxMs, p.hedge_delay_ms);
      } else if (k == "stream_timeout_ms") {
        ok = integer(at, f, 0, kMaxMs, p.stream_timeout_ms);
      } else if (k == "message_timeout_ms") {
        ok = integer(at, f, 0, kMaxMs, p.message_timeout_ms);
      } else if (k == "stall_timeout_ms") {
        ok = integer(at, f, 0, kMaxMs, p.stall_timeout_ms);
      } else if (k == "first_message_timeout_ms") {
        ok = integer(at, f, 0, kMaxMs, p.first_message_timeout_ms);
      } else if (k == "retries") {
        ok = integer(at, f, 0, rpc::CallOptions::kMaxRetries, p.retries);
      } else if (k == "idempotent") {
        ok = boolean(at, f, p.idempotent);
      } else if (k == "wait_for_ready") {
        ok = boolean(at, f, p.wait_for_ready);
      } else if (k == "compression") {
        if (!f.is_string()) return wrong_type(at, "a string", f);
        p.compression = transport::parse_compression(f.as_string());
        if (!p.compression) {
          return fail(at, "'" + std::string(f.as_string()) + "' is not one of identity, zstd, lz4, gzip, deflate");
        }
      } else if (k == "compression_level") {
        ok = integer(at, f, -7, 22, p.compression_level);
      } else if (k == "force") {
        ok = boolean(at, f, p.force);
      } else {
        return fail(at, "unknown field");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool scope(const json::value& v, RuleDocument& d) {
    if (!v.is_object()) return wrong_type("scope", "an object", v);
    for (const auto& [k, f] : v.as_object()) {
      if (k == "applications") {
        if (!strings("scope.applications", f, d.applications)) return false;
      } else if (k == "tags") {
        if (!strings("scope.tags", f, d.tags)) return false;
      } else if (k == "providers") {
        std::vector<std::string> list;
        if (!strings("scope.providers", f, list)) return false;
        for (const auto& one : list) {
          std::string inner;
          const auto ep = parse_ip_endpoint(one, inner);
          if (!ep) return fail("scope.providers", "'" + one + "' is not an ip:port (" + inner + ")");
          d.provider_addresses.push_back(format_endpoint(*ep));
        }
      } else if (k == "zones") {
        if (!strings("scope.zones", f, d.zones)) return false;
      } else if (k == "provider_tags") {
        if (!strings("scope.provider_tags", f, d.provider_tags)) return false;
      } else {
        return fail("scope." + std::string(k), "unknown field");
      }
    }
    return true;
  }

  bool server_policy(const std::string& at, std::string_view k, const json::value& f, ServerPolicyDocument& p,
                     bool& known) {
    known = true;
    if (k == "timeout_ms") return integer(at, f, 0, kMaxMs, p.timeout_ms);
    if (k == "max_concurrency") return integer(at, f, 0, kMaxConcurrency, p.max_concurrency);
    known = false;
    return true;
  }

  bool server(const json::value& v, RuleDocument& d) {
    if (!v.is_object()) return wrong_type("server", "an object", v);
    ServerDocument s;
    for (const auto& [k, f] : v.as_object()) {
      const std::string at = "server." + std::string(k);
      bool ok = true;
      bool known = false;
      if (k == "disabled") {
        ok = boolean(at, f, s.disabled);
      } else if (k == "weight") {
        ok = integer(at, f, 0, 10000, s.weight);
      } else if (k == "methods") {
        if (!f.is_object()) return wrong_type(at, "an object", f);
        for (const auto& [m, mf] : f.as_object()) {
          if (m.empty()) return fail(at, "a method name is empty");
          const std::string mat = at + "." + std::string(m);
          if (!mf.is_object()) return wrong_type(mat, "an object", mf);
          ServerPolicyDocument p;
          for (const auto& [pk, pf] : mf.as_object()) {
            const std::string pat = mat + "." + std::string(pk);
            if (!server_policy(pat, std::string_view(pk.data(), pk.size()), pf, p, known)) return false;
            if (!known) return fail(pat, "unknown field (a method takes timeout_ms, max_concurrency)");
          }
          s.methods.insert_or_assign(std::string(m), p);
        }
      } else {
        ok = server_policy(at, std::string_view(k.data(), k.size()), f, s.service, known);
        if (ok && !known) return fail(at, "unknown field");
      }
      if (!ok) return false;
    }
    d.server = std::move(s);
    return true;
  }

  bool methods(const json::value& v, RuleDocument& d) {
    if (!v.is_object()) return wrong_type("methods", "an object", v);
    for (const auto& [k, f] : v.as_object()) {
      if (k.empty()) return fail("methods", "a method name is empty");
      PolicyDocument p;
      if (!policy("methods." + std::string(k), f, p)) return false;
      d.methods.insert_or_assign(std::string(k), p);
    }
    return true;
  }

  bool providers(const json::value& v, RuleDocument& d) {
    if (!v.is_object()) return wrong_type("providers", "an object", v);
    for (const auto& [k, f] : v.as_object()) {
      const std::string at = "providers." + std::string(k);
      std::string inner;
      const auto ep = parse_ip_endpoint(std::string_view(k.data(), k.size()), inner);
      if (!ep) return fail(at, "'" + std::string(k) + "' is not an ip:port (" + inner + ")");
      if (!f.is_object()) return wrong_type(at, "an object", f);
      ProviderDocument p;
      for (const auto& [pk, pf] : f.as_object()) {
        bool ok = true;
        if (pk == "weight") {
          ok = integer(at + ".weight", pf, 0, 10000, p.weight);
        } else if (pk == "disabled") {
          ok = boolean(at + ".disabled", pf, p.disabled);
        } else {
          return fail(at + "." + std::string(pk), "unknown field");
        }
        if (!ok) return false;
      }
      // Keyed as the client knows its providers: "ip:port", "[v6]:port".
      d.providers.insert_or_assign(format_endpoint(*ep), p);
    }
    return true;
  }

  bool tag_routes(const json::value& v, RuleDocument& d) {
    if (!v.is_object()) return wrong_type("tags", "an object", v);
    for (const auto& [k, f] : v.as_object()) {
      const std::string at = "tags." + std::string(k);
      if (!rpc::RoutingTag::make(std::string_view(k.data(), k.size())) || k.empty()) {
        return fail(at, "'" + std::string(k) + "' is not a tag: 1..64 characters of [A-Za-z0-9._-]");
      }
      if (!f.is_object()) return wrong_type(at, "an object", f);
      TagDocument t;
      for (const auto& [tk, tf] : f.as_object()) {
        bool ok = true;
        if (tk == "providers") {
          std::vector<std::string> list;
          ok = strings(at + ".providers", tf, list);
          for (const auto& one : list) {
            if (!ok) break;
            std::string inner;
            const auto ep = parse_ip_endpoint(one, inner);
            if (!ep) return fail(at + ".providers", "'" + one + "' is not an ip:port (" + inner + ")");
            t.providers.push_back(format_endpoint(*ep));
          }
        } else if (tk == "fallback") {
          ok = boolean(at + ".fallback", tf, t.fallback);
        } else {
          return fail(at + "." + std::string(tk), "unknown field");
        }
        if (!ok) return false;
      }
      d.tag_routes.insert_or_assign(std::string(k), std::move(t));
    }
    return true;
  }

  bool document(const json::value& v, RuleDocument& d) {
    if (!v.is_object()) {
      why_ = "a rule document is a JSON object, not " + kind_of(v);
      return false;
    }
    for (const auto& [k, f] : v.as_object()) {
      bool ok = true;
      if (k == "scope") {
        ok = scope(f, d);
      } else if (k == "force") {
        std::optional<bool> force;
        ok = boolean("force", f, force);
        d.force = force.value_or(false);
      } else if (k == "service") {
        d.service.emplace();
        ok = policy("service", f, *d.service);
      } else if (k == "methods") {
        ok = methods(f, d);
      } else if (k == "load_balance") {
        if (!f.is_string()) return wrong_type("load_balance", "a string", f);
        const std::string_view name(f.as_string().data(), f.as_string().size());
        if (name == "round_robin") {
          d.load_balance = rpc::LoadBalance::round_robin;
        } else if (name == "least_active") {
          d.load_balance = rpc::LoadBalance::least_active;
        } else if (name == "p2c") {
          d.load_balance = rpc::LoadBalance::power_of_two;
        } else if (name == "load_aware") {
          d.load_balance = rpc::LoadBalance::load_aware;
        } else {
          return fail("load_balance",
                      "'" + std::string(name) + "' is not one of round_robin, least_active, p2c, load_aware");
        }
      } else if (k == "providers") {
        ok = providers(f, d);
      } else if (k == "tags") {
        ok = tag_routes(f, d);
      } else if (k == "server") {
        ok = server(f, d);
      } else {
        return fail(std::string(k), "unknown field");
      }
      if (!ok) return false;
    }
    // A provider's settings are the provider's, whoever calls it; a
    // provider scope chooses the providers of a "server" block, nothing else.
    const bool provider_scope = !d.provider_addresses.empty() || !d.zones.empty() || !d.provider_tags.empty();
    if (d.server && (!d.applications.empty() || !d.tags.empty())) {
      return fail("server",
                  "a provider's settings cannot be scoped to consumers (scope.applications, scope.tags): "
                  "put them in a document of their own");
    }
    if (provider_scope && !d.server) {
      return fail("scope",
                  "scope.providers, scope.zones and scope.provider_tags choose the providers of a \"server\" "
                  "block, and the document has none");
    }
    return true;
  }

 private:
  std::string& why_;
};

std::chrono::milliseconds ms(std::int64_t v) {
  return v < 0 ? rpc::CallOptions::kNoDeadline : std::chrono::milliseconds(v);
}

template <class T, class V>
void set(std::optional<rpc::Overridden<T>>& out, const std::optional<V>& in, bool force,
         const std::shared_ptr<const std::string>& origin) {
  if (in) out = rpc::Overridden<T>{static_cast<T>(*in), force, origin};
}

template <class V>
void set_ms(std::optional<rpc::Overridden<std::chrono::milliseconds>>& out, const std::optional<V>& in, bool force,
            const std::shared_ptr<const std::string>& origin) {
  if (in) out = rpc::Overridden<std::chrono::milliseconds>{ms(*in), force, origin};
}

rpc::PolicyOverrides overrides_of(const PolicyDocument& p, bool document_force,
                                  const std::shared_ptr<const std::string>& origin) {
  const bool f = p.force.value_or(document_force);
  rpc::PolicyOverrides o;
  set_ms(o.timeout, p.timeout_ms, f, origin);
  set_ms(o.attempt_timeout, p.attempt_timeout_ms, f, origin);
  set_ms(o.hedge_delay, p.hedge_delay_ms, f, origin);
  set_ms(o.stream_timeout, p.stream_timeout_ms, f, origin);
  set_ms(o.message_timeout, p.message_timeout_ms, f, origin);
  set_ms(o.stall_timeout, p.stall_timeout_ms, f, origin);
  set_ms(o.first_message_timeout, p.first_message_timeout_ms, f, origin);
  set(o.retries, p.retries, f, origin);
  set(o.idempotent, p.idempotent, f, origin);
  set(o.wait_for_ready, p.wait_for_ready, f, origin);
  set(o.compression, p.compression, f, origin);
  set(o.compression_level, p.compression_level, f, origin);
  return o;
}

bool listed(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

bool RuleDocument::serves_provider(std::string_view address, std::string_view zone, std::string_view tag) const {
  if (provider_addresses.empty() && zones.empty() && provider_tags.empty()) return true;
  return listed(provider_addresses, address) || (!zone.empty() && listed(zones, zone)) ||
         (!tag.empty() && listed(provider_tags, tag));
}

bool RuleDocument::applies_to(const RuleScope& consumer) const {
  if (applications.empty() && tags.empty()) return true;
  if (!applications.empty() && !consumer.application.empty() && listed(applications, consumer.application)) {
    return true;
  }
  return std::any_of(consumer.tags.begin(), consumer.tags.end(), [&](const std::string& t) { return listed(tags, t); });
}

std::optional<RuleDocument> parse_rule_document(std::string_view text, std::string& why) {
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 16;
  const json::value v = json::parse(text, ec, {}, opts);
  if (ec) {
    why = "not valid JSON: " + ec.message();
    return std::nullopt;
  }
  RuleDocument d;
  Parser p(why);
  if (!p.document(v, d)) return std::nullopt;
  return d;
}

std::shared_ptr<const std::string> rule_origin(std::string_view key, std::int64_t mod_revision) {
  return std::make_shared<const std::string>("runtime override " + std::string(key) + " rev " +
                                             std::to_string(mod_revision));
}

std::shared_ptr<const rpc::CallRules> build_call_rules(const GoodRules& rules, const RuleScope& consumer,
                                                       std::int64_t revision, std::string source) {
  auto out = std::make_shared<rpc::CallRules>();
  out->revision = revision;
  out->source = std::move(source);
  for (const auto& [key, version] : rules) {
    const auto& d = version.document;
    if (!d.applies_to(consumer)) continue;
    const auto& origin = version.origin;
    if (d.service) out->service.merge(overrides_of(*d.service, d.force, origin));
    for (const auto& [method, policy] : d.methods) out->methods[method].merge(overrides_of(policy, d.force, origin));
    if (d.load_balance) out->load_balance = rpc::Overridden<rpc::LoadBalance>{*d.load_balance, d.force, origin};
    for (const auto& [tag, t] : d.tag_routes) {
      auto& route = out->tags[tag];  // a later key's entry for the same tag replaces the earlier one
      route.providers = t.providers;
      route.fallback = t.fallback.value_or(true);
      route.origin = origin;
    }
    for (const auto& [endpoint, p] : d.providers) {
      if (p.disabled.value_or(false)) {
        out->weights[endpoint] = rpc::Overridden<std::uint32_t>{0, d.force, origin};
      } else if (p.weight) {
        out->weights[endpoint] = rpc::Overridden<std::uint32_t>{*p.weight, d.force, origin};
      }
    }
    // A provider rule's weight (or disabled: 0) for the providers its scope chooses.
    if (d.server && (d.server->weight || d.server->disabled.value_or(false))) {
      rpc::CallRules::ProviderWeight w;
      w.addresses = d.provider_addresses;
      w.zones = d.zones;
      w.tags = d.provider_tags;
      w.weight =
          rpc::Overridden<std::uint32_t>{d.server->disabled.value_or(false) ? 0u : *d.server->weight, false, origin};
      out->provider_weights.push_back(std::move(w));
    }
  }
  return out;
}

namespace {

rpc::ServerMethodOverrides server_overrides_of(const ServerPolicyDocument& p,
                                               const std::shared_ptr<const std::string>& origin) {
  rpc::ServerMethodOverrides o;
  if (p.timeout_ms) o.timeout = rpc::Overridden<std::chrono::milliseconds>{ms(*p.timeout_ms), false, origin};
  if (p.max_concurrency) {
    o.max_concurrency = rpc::Overridden<std::size_t>{static_cast<std::size_t>(*p.max_concurrency), false, origin};
  }
  return o;
}

}  // namespace

std::shared_ptr<const rpc::ServerRules> build_server_rules(const GoodRules& rules, const ProviderScope& self,
                                                           std::int64_t revision, std::string source) {
  auto out = std::make_shared<rpc::ServerRules>();
  out->revision = revision;
  out->source = std::move(source);
  for (const auto& [key, version] : rules) {
    const auto& d = version.document;
    if (!d.server || !d.serves_provider(self.address, self.zone, self.tag)) continue;
    const auto& origin = version.origin;
    if (d.server->disabled) out->disabled = rpc::Overridden<bool>{*d.server->disabled, false, origin};
    out->service.merge(server_overrides_of(d.server->service, origin));
    for (const auto& [method, policy] : d.server->methods) {
      out->methods[method].merge(server_overrides_of(policy, origin));
    }
  }
  return out;
}

}  // namespace wheelrpc::registry::detail

namespace wheelrpc::registry {

std::string validate_rule(std::string_view json) {
  std::string why;
  if (!detail::parse_rule_document(json, why)) return why;
  return {};
}

std::string validate_rule_name(std::string_view name) {
  if (name.empty() || name.size() > 128) {
    return "rule name '" + std::string(name) + "' must be 1..128 characters long";
  }
  for (const char c : name) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok)
      return "rule name '" + std::string(name) + "' has '" + std::string(1, c) + "' (allowed: A-Z a-z 0-9 . _ -)";
  }
  return {};
}

}  // namespace wheelrpc::registry
