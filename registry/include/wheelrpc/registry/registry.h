#pragma once
/// Service registry: providers register a ServiceInstance, consumers
/// subscribe to a service and get its full provider set on every change.
/// EtcdRegistry (etcd_registry.h) implements it on etcd v3 with Dubbo's
/// FailbackRegistry behaviour: failed operations are retried on the shared
/// HashedWheelTimer, never thrown at the caller.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/system/error_code.hpp>

namespace wheelrpc::rpc {
struct CallRules;
struct ServerRules;
}  // namespace wheelrpc::rpc

namespace wheelrpc::registry {

struct RuleScope;      // rules.h
struct ProviderScope;  // rules.h

/// One provider of a service, stored as JSON under
/// /wheelrpc/<service>/providers/<endpoint>.
struct ServiceInstance {
  std::string service;                      ///< e.g. "echo"; [A-Za-z0-9._-], 1..128 bytes
  std::string endpoint;                     ///< "ip:port" ("[v6]:port") clients connect to
  int weight = 100;                         ///< relative weight, 0..10000
  std::string version;                      ///< free-form, may be empty
  std::string zone;                         ///< free-form, may be empty
  std::map<std::string, std::string> tags;  ///< free-form
  /// What the registry reports: the etcd create revision of the instance's
  /// key, which changes each time it registers anew (after a lease loss or a
  /// restart). 0 in what is registered; not part of the JSON.
  std::int64_t create_revision = 0;

  /// {"service":..,"endpoint":..,"weight":..,"version":..,"zone":..,"tags":{..}}
  std::string to_json() const;
  /// Parses to_json()'s output (unknown fields ignored); nullopt and `why`
  /// when `json` is not a ServiceInstance.
  static std::optional<ServiceInstance> from_json(std::string_view json, std::string& why);
  /// Empty when valid, else what is wrong ("service name 'a b' has a space").
  std::string invalid_reason() const;

  friend bool operator==(const ServiceInstance&, const ServiceInstance&) = default;
};

/// Called on every change of a subscribed service with its full provider set
/// (sorted by endpoint), never a diff. Runs on the registry's strand; must
/// not block.
using ProviderListener = std::function<void(const std::vector<ServiceInstance>& providers)>;

/// The state of one registration, reported on every change: `ec` empty =
/// the key is in the registry now (again, after a lease loss or an outage);
/// else why it is not, while it is being retried.
using RegistrationListener = std::function<void(boost::system::error_code ec, const std::string& why)>;

/// Why a subscription cannot read or follow its service now (a failed read
/// or watch; it is retried and the last known set stands). Runs on the
/// registry's strand; must not block.
using SubscriptionErrorListener = std::function<void(boost::system::error_code ec, const std::string& why)>;

/// Called with the rules of a followed service for one consumer (rules.h):
/// once read, then on every change. Runs on the registry's strand; must not
/// block.
using RulesListener = std::function<void(std::shared_ptr<const rpc::CallRules> rules)>;

/// Called with the rules a provider follows for itself (rules.h): once read,
/// then on every change. Runs on the registry's strand; must not block.
using ServerRulesListener = std::function<void(std::shared_ptr<const rpc::ServerRules> rules)>;

/// Identifies a subscription for unsubscribe.
using SubscriptionId = std::uint64_t;

/// @par Thread Safety
/// Every method may be called from any thread. Listeners run on the
/// registry's strand, never on the timer's worker.
class Registry {
 public:
  virtual ~Registry() = default;
  /// Registers `instance` (replacing an earlier registration of the same
  /// service and endpoint). Never fails at the caller: a failure is retried
  /// every retry_period until it succeeds or an unregister supersedes it.
  /// `listener` (optional) hears each state change of this registration.
  virtual void register_instance(ServiceInstance instance, RegistrationListener listener = {}) = 0;
  /// Removes the registration of `service` at `endpoint` (a pending retry of
  /// its register is cancelled; a failed delete is retried). `done`
  /// (optional) runs once: success when the key is gone, or the error of the
  /// first attempt (the retry goes on).
  virtual void unregister_instance(const std::string& service, const std::string& endpoint,
                                   std::function<void(boost::system::error_code)> done = {}) = 0;
  /// Follows `service`: `listener` gets the current set once read, then
  /// every change. A failed read or watch is retried; meanwhile the last
  /// known set stands (no call).
  virtual SubscriptionId subscribe(std::string service, ProviderListener listener) = 0;
  /// As subscribe(), and `on_error` hears each failed read or watch of the
  /// subscription (before its retry). The default ignores `on_error`.
  virtual SubscriptionId subscribe_with_errors(std::string service, ProviderListener listener,
                                               SubscriptionErrorListener on_error) {
    (void)on_error;
    return subscribe(std::move(service), std::move(listener));
  }
  /// Follows the runtime rules of `service` (<root>/<service>/rules/, rules.h)
  /// for `consumer`: `listener` gets the CallRules once read, then on every
  /// change; `on_error` (optional) each failed read or watch (retried; the
  /// last rules stand). Stopped by unsubscribe(). The default (a registry
  /// that keeps no rules) never calls either and returns 0.
  virtual SubscriptionId subscribe_rules(std::string service, const RuleScope& consumer, RulesListener listener,
                                         SubscriptionErrorListener on_error) {
    (void)service;
    (void)consumer;
    (void)listener;
    (void)on_error;
    return 0;
  }
  /// Follows the provider rules of `service` (the "server" blocks of its
  /// rules, rules.h) for the provider `self`: `listener` gets its
  /// ServerRules once read, then on every change; `on_error` as for
  /// subscribe_rules. Stopped by unsubscribe(). The default never calls
  /// either and returns 0.
  virtual SubscriptionId subscribe_provider_rules(std::string service, const ProviderScope& self,
                                                  ServerRulesListener listener, SubscriptionErrorListener on_error) {
    (void)service;
    (void)self;
    (void)listener;
    (void)on_error;
    return 0;
  }
  /// Stops a subscription; its listener is not called after this returns
  /// unless a call was already running.
  virtual void unsubscribe(SubscriptionId id) = 0;
  /// Stops everything: cancels retries, watches and the lease keep-alive,
  /// and revokes the lease (best effort, bounded by the request timeout) so
  /// registered keys disappear at once. Idempotent.
  virtual void close() = 0;
  /// Runs `fn` once, `delay` from now (on the registry's timer), on the
  /// registry's strand, never on the timer's worker. close() runs pending
  /// ones at once (and later calls run `fn` at once): nothing waits on the
  /// timer for a closed registry. For deadlines on the registry's clock (the
  /// announcer's check). Returns false if it cannot (the timer stopped; the
  /// default for registries without a timer): `fn` then never runs.
  virtual bool call_after(std::chrono::milliseconds delay, std::function<void()> fn) {
    (void)delay;
    (void)fn;
    return false;
  }
  /// Where the registry is, as messages name it: "etcd at 127.0.0.1:2379".
  /// Default "the registry".
  virtual std::string describe() const { return "the registry"; }
};

}  // namespace wheelrpc::registry
