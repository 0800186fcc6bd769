#pragma once
/// CallRules: the runtime overrides a Client follows (docs/governance.md),
/// and RuleSource, where they come from (the registry's rule_source follows
/// them in etcd).

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

#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc {

/// One overridden value: what it is, whether it beats the call's own option
/// too, and where it came from.
template <class T>
struct Overridden {
  T value{};
  /// Beats the per-call option as well (Layer::forced_override): for incidents.
  bool force = false;
  /// Where it was set, as messages and the explain page name it:
  /// "runtime override /wheelrpc/echo/rules/timeouts rev 4712".
  std::shared_ptr<const std::string> origin;
};

/// The overrides of one method's call policy (or a service's, for every
/// method): a field left std::nullopt is not overridden.
struct PolicyOverrides {
  std::optional<Overridden<std::chrono::milliseconds>> timeout;
  std::optional<Overridden<std::chrono::milliseconds>> attempt_timeout;
  std::optional<Overridden<int>> retries;
  std::optional<Overridden<bool>> idempotent;
  std::optional<Overridden<std::chrono::milliseconds>> hedge_delay;
  std::optional<Overridden<bool>> wait_for_ready;
  std::optional<Overridden<transport::Compression>> compression;
  std::optional<Overridden<int>> compression_level;
  std::optional<Overridden<std::chrono::milliseconds>> stream_timeout;
  std::optional<Overridden<std::chrono::milliseconds>> message_timeout;
  std::optional<Overridden<std::chrono::milliseconds>> stall_timeout;
  std::optional<Overridden<std::chrono::milliseconds>> first_message_timeout;

  /// Every field that `more` overrides replaces this one's.
  void merge(const PolicyOverrides& more);
  /// Sets each overridden field of `call` that the override beats: every
  /// layer below Layer::call, and with `force` the call's own value too.
  void apply(CallOptions& call) const noexcept;
  bool empty() const noexcept;
};

/// One immutable snapshot of the rules a Client follows, as a RuleSource
/// reports it: built once, then shared (read from any thread, never changed).
struct CallRules {
  /// Overrides for every method of the service.
  PolicyOverrides service;
  /// Overrides per method name ("echo", "/pkg.Greeter/SayHello"): each field
  /// beats the service-wide one.
  std::map<std::string, PolicyOverrides, std::less<>> methods;
  /// The load-balancing policy, when a rule sets it.
  std::optional<Overridden<LoadBalance>> load_balance;
  /// Provider weights ("ip:port" as the provider is known to the client),
  /// 0..10000, beating the weight the provider's registry record carries.
  /// A disabled provider is weight 0: it takes no new calls.
  std::map<std::string, Overridden<std::uint32_t>, std::less<>> weights;
  /// A provider rule's weight ("server": {"weight" or "disabled"}) for the
  /// providers its scope chooses: those whose address, zone or routing tag
  /// is listed (every provider when no list is). In key order: the last
  /// that chooses a provider wins; a `weights` entry for its address beats
  /// them all.
  struct ProviderWeight {
    std::vector<std::string> addresses;  ///< "ip:port", as weights are keyed
    std::vector<std::string> zones;
    std::vector<std::string> tags;
    Overridden<std::uint32_t> weight;
    /// Whether it chooses the provider at `address` in `zone` with routing tag `tag`.
    bool chooses(std::string_view address, std::string_view zone, std::string_view tag) const noexcept;
  };
  std::vector<ProviderWeight> provider_weights;
  /// Tag routing (routing_tag.h), by tag: which providers serve a tag
  /// beside those whose registry record carries it ("tags": {"tag": NAME}),
  /// and whether a call with that tag falls back to the untagged providers
  /// when the set has none of its own (default true; false: it fails
  /// unavailable, naming the tag).
  struct TagRoute {
    std::vector<std::string> providers;  ///< "ip:port", as weights are keyed
    bool fallback = true;
    std::shared_ptr<const std::string> origin;
  };
  std::map<std::string, TagRoute, std::less<>> tags;
  /// The revision the snapshot was read at (0: none), and where from
  /// ("etcd at 127.0.0.1:2379").
  std::int64_t revision = 0;
  std::string source;

  /// The overrides for `method`: its own fields over the service's. Empty
  /// when no rule names it or the service.
  PolicyOverrides for_method(std::string_view method) const;
  /// Applies for_method(method) to `call`, without building it.
  void apply(std::string_view method, CallOptions& call) const noexcept;
  /// The origin of the timeout override for_method(method) holds (null: none).
  std::shared_ptr<const std::string> timeout_origin(std::string_view method) const;
};

/// Where a Client's rules come from (ClientOptions::rules).
///
/// @par Thread Safety
/// `start` and `stop` may be called from any thread. The listener may be
/// called from any thread (never the timer's worker), never concurrently
/// with itself.
class RuleSource {
 public:
  /// One report: with no error, the whole current rule set (an empty
  /// CallRules: no rule); with an error, why the source cannot read its
  /// rules now (`rules` null): the client keeps the last good set, and one
  /// that never had a set uses the IDL and its defaults.
  using Listener =
      std::function<void(boost::system::error_code ec, std::shared_ptr<const CallRules> rules, std::string why)>;

  virtual ~RuleSource() = default;
  /// Starts reporting to `listener`, at once or later. Called once.
  virtual void start(Listener listener) = 0;
  /// Stops reporting; the listener may still run once if a report was under
  /// way. Idempotent.
  virtual void stop() = 0;
  /// Where the rules come from, as messages name it: "etcd rules of 'echo'".
  virtual std::string describe() const = 0;
};

/// A fixed rule set, reported once at start (tests, and rules read from a file).
std::shared_ptr<RuleSource> static_rules(std::shared_ptr<const CallRules> rules);

}  // namespace wheelrpc::rpc
