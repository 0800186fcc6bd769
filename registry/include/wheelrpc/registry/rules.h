#pragma once
/// Runtime rules in etcd (docs/governance.md): the documents under
/// `<root>/<service>/rules/<name>` that override a service's call policy,
/// load balancing and provider weights for the clients following it.
/// validate_rule() checks one document as the registry does; rule_source()
/// is a Client's RuleSource (ClientOptions::rules) following them.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/registry/registry.h>
#include <wheelrpc/rpc/call_rules.h>

namespace wheelrpc::registry {

/// Who a consumer is, for the rules' "scope": a rule whose scope lists
/// applications or tags applies to a consumer whose application is listed
/// or one of whose tags is; a rule without a scope applies to every consumer.
struct RuleScope {
  std::string application{};        ///< e.g. "checkout"; may be empty (matches no listed application)
  std::vector<std::string> tags{};  ///< e.g. {"canary"}; may be empty
};

/// Who a provider is, for a "server" block's scope (docs/governance.md,
/// "Provider rules"): a document whose scope lists providers, zones or
/// provider tags is for a provider whose address, zone or routing tag is
/// listed; one without a provider scope is for every provider.
struct ProviderScope {
  std::string address{};  ///< "ip:port" as registered (ServiceInstance::endpoint)
  std::string zone{};     ///< may be empty
  std::string tag{};      ///< its routing tag (ServiceInstance::tags["tag"]); may be empty
};

/// Checks one rule document (the value of a rules key) as the registry
/// does before taking it: empty when valid, else what is wrong, naming the
/// field ("methods.echo.timeout_ms: 0 is outside 1..86400000"). Pure;
/// thread-safe.
std::string validate_rule(std::string_view json);

/// Checks a rule's name (the last part of its key): empty when it is
/// [A-Za-z0-9._-]{1,128}, else why. Pure; thread-safe.
std::string validate_rule_name(std::string_view name);

/// A Client's RuleSource following the rules of `service` in `registry`
/// (<root>/<service>/rules/, read, then watched; nothing polls), for the
/// consumer `consumer`. Reports one CallRules per etcd revision that changed
/// the rules: built from the last good version of every key whose scope
/// matches `consumer`, in key order (a later key's field beats an earlier
/// one's), each override's origin "runtime override <key> rev <mod_revision>".
/// A version that is invalid is refused (logged at warn on the
/// "wheelrpc.registry" logger, counted in RegistryStats::rules_refused) and
/// the key's last good version stays in force. A failed read or watch is
/// reported as an error (rules null; retried on the registry's retry period).
/// The listener runs on the registry's strand. A registry that keeps no
/// rules (Registry::subscribe_rules' default) never reports. describe():
/// "etcd rules of 'NAME'".
///
/// @par Example
/// @code
/// rpc::ClientOptions co;
/// co.providers = registry::provider_source(reg, "echo");
/// co.rules = registry::rule_source(reg, "echo", {.application = "checkout", .tags = {"canary"}});
/// @endcode
std::shared_ptr<rpc::RuleSource> rule_source(std::shared_ptr<Registry> registry, std::string service,
                                             RuleScope consumer = {});

}  // namespace wheelrpc::registry
