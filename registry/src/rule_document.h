#pragma once
// One runtime rule document (the value of <root>/<service>/rules/<name>),
// parsed and validated whole, and the CallRules a consumer gets from the
// good documents of a service (docs/governance.md). Pure code: no I/O, no
// locks, thread-safe as values are.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/registry/rules.h>
#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/server_rules.h>

namespace wheelrpc::registry::detail {

/// A policy object ("service", or one of "methods"): each field as written.
struct PolicyDocument {
  std::optional<std::int64_t> timeout_ms;  // 1..86400000, or -1: no deadline
  std::optional<std::int64_t> attempt_timeout_ms;
  std::optional<std::int64_t> hedge_delay_ms;
  std::optional<std::int64_t> stream_timeout_ms;
  std::optional<std::int64_t> message_timeout_ms;
  std::optional<std::int64_t> stall_timeout_ms;
  std::optional<std::int64_t> first_message_timeout_ms;
  std::optional<int> retries;
  std::optional<bool> idempotent;
  std::optional<bool> wait_for_ready;
  std::optional<transport::Compression> compression;
  std::optional<int> compression_level;
  std::optional<bool> force;  // beats the document's "force" for this block
};

/// One entry of "providers".
struct ProviderDocument {
  std::optional<std::uint32_t> weight;  // 0..10000
  std::optional<bool> disabled;         // true: weight 0
};

/// One entry of "tags".
struct TagDocument {
  std::vector<std::string> providers;  // "ip:port", normalized
  std::optional<bool> fallback;
};
/// "server": a provider's own settings, for the providers the scope chooses.
struct ServerPolicyDocument {
  std::optional<std::int64_t> timeout_ms;       // 0..86400000 (0: none)
  std::optional<std::int64_t> max_concurrency;  // 0..1000000 (0: no limit)
};
struct ServerDocument {
  std::optional<bool> disabled;
  std::optional<std::uint32_t> weight;  // 0..10000
  ServerPolicyDocument service;         // "timeout_ms", "max_concurrency" at the top of the block
  std::map<std::string, ServerPolicyDocument, std::less<>> methods;
};

struct RuleDocument {
  // "scope": an empty list does not restrict on its dimension.
  std::vector<std::string> applications;
  std::vector<std::string> tags;
  // "scope" of a "server" block: the providers it is for.
  std::vector<std::string> provider_addresses;  // "providers", normalized "ip:port"
  std::vector<std::string> zones;
  std::vector<std::string> provider_tags;
  bool force = false;
  std::optional<PolicyDocument> service;
  std::map<std::string, PolicyDocument, std::less<>> methods;
  std::optional<rpc::LoadBalance> load_balance;
  std::map<std::string, ProviderDocument, std::less<>> providers;
  std::map<std::string, TagDocument, std::less<>> tag_routes;  // "tags"
  std::optional<ServerDocument> server;

  /// True if the document applies to `consumer` (no scope: every consumer).
  bool applies_to(const RuleScope& consumer) const;
  /// True if its "server" block is for the provider `address` (ip:port) in
  /// `zone` with routing tag `tag`: one of them listed, or no provider scope.
  bool serves_provider(std::string_view address, std::string_view zone, std::string_view tag) const;
};

/// Parses and validates `json`; nullopt and `why` ("methods.echo.timeout_ms:
/// 0 is outside 1..86400000") when it is not a valid rule document.
std::optional<RuleDocument> parse_rule_document(std::string_view json, std::string& why);

/// A key's version in force: its document, mod revision and the origin its
/// overrides carry ("runtime override <key> rev <mod_revision>"), one string
/// shared by every override of the document.
struct RuleVersion {
  std::int64_t mod_revision = 0;
  RuleDocument document;
  std::shared_ptr<const std::string> origin;
};

/// "runtime override <key> rev <mod_revision>".
std::shared_ptr<const std::string> rule_origin(std::string_view key, std::int64_t mod_revision);

/// The good documents of a service, by key (etcd's key order).
using GoodRules = std::map<std::string, RuleVersion, std::less<>>;

/// The CallRules `consumer` follows: every document of `rules` that applies
/// to it, in key order (a later key's field beats an earlier one's; within
/// the rules, a method's field beats the service's). `revision` and `source`
/// are copied into the result.
std::shared_ptr<const rpc::CallRules> build_call_rules(const GoodRules& rules, const RuleScope& consumer,
                                                       std::int64_t revision, std::string source);

/// The ServerRules the provider `self` follows: the "server" blocks of every
/// document of `rules` whose scope chooses it, in key order (a later key's
/// field beats an earlier one's; a method's beats the block's).
std::shared_ptr<const rpc::ServerRules> build_server_rules(const GoodRules& rules, const ProviderScope& self,
                                                           std::int64_t revision, std::string source);

}  // namespace wheelrpc::registry::detail
