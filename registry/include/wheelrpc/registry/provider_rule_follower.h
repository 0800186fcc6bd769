#pragma once
/// ProviderRuleFollower: a Server following its provider rules in etcd
/// (docs/governance.md, "Provider rules"): the "server" blocks of its
/// service's rules whose scope chooses it (by address, zone or routing tag)
/// are put in force with Server::apply_rules, once read and on every change.

#include <memory>
#include <string>

#include <wheelrpc/registry/registry.h>
#include <wheelrpc/registry/rules.h>

namespace wheelrpc::rpc {
class Server;
}

namespace wheelrpc::registry {

/// Follows the provider rules of `service` in `registry` (nothing polls: the
/// registry's read and watch) for the provider `self`, applying each new set
/// to `server` (on the registry's strand). A failed read or watch keeps the
/// rules in force. `self.address` empty: the server's own listen address as
/// its announcer registers it (construct after Server::listen then).
///
/// @par Thread Safety
/// Every member from any thread. No apply_rules runs after stop() returns
/// (the destructor stops), so the server may be destroyed then; stop()
/// leaves the rules in force on the server.
///
/// @par Example
/// @code
/// server.listen(7001);
/// registry::ProviderRuleFollower rules(reg, server, "echo", {.zone = "eu-1"});
/// @endcode
class ProviderRuleFollower {
 public:
  ProviderRuleFollower(std::shared_ptr<Registry> registry, rpc::Server& server, std::string service,
                       ProviderScope self = {});
  ~ProviderRuleFollower();
  ProviderRuleFollower(const ProviderRuleFollower&) = delete;
  ProviderRuleFollower& operator=(const ProviderRuleFollower&) = delete;

  /// Stops following. Idempotent.
  void stop();
  /// Who this provider is to the rules (its address filled in).
  const ProviderScope& self() const noexcept { return self_; }
  /// How many rule sets were applied so far (the first read counts).
  std::uint64_t applied() const;

 private:
  struct State;
  std::shared_ptr<Registry> registry_;
  ProviderScope self_;
  std::shared_ptr<State> state_;
  SubscriptionId id_ = 0;
};

}  // namespace wheelrpc::registry
