#pragma once
/// ServerRules: the runtime overrides a Server follows for itself (a
/// provider rule, docs/governance.md "Provider rules"): each method's
/// server-side timeout and concurrency limit, and whether the server is
/// disabled (no new calls, as Server::set_online(false)). The registry's
/// follow_provider_rules keeps a server's rules from etcd; Server::apply_rules
/// takes them from anywhere.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <wheelrpc/rpc/call_rules.h>

namespace wheelrpc::rpc {

/// Overrides of one method's MethodOptions (or, as ServerRules::service, of
/// every method's): a field left std::nullopt keeps the registered value.
struct ServerMethodOverrides {
  /// MethodOptions::timeout: the server-side deadline of a call or stream
  /// that arrives without one, and the bound of one that arrives with a
  /// later one. 0 ms: none (the caller's deadline only).
  std::optional<Overridden<std::chrono::milliseconds>> timeout;
  /// MethodOptions::max_concurrency: calls (or streams) of the method at
  /// once; 0: no limit.
  std::optional<Overridden<std::size_t>> max_concurrency;

  /// Every field that `more` overrides replaces this one's.
  void merge(const ServerMethodOverrides& more);
  bool empty() const noexcept { return !timeout && !max_concurrency; }
};

/// One immutable snapshot of the rules a Server follows.
struct ServerRules {
  /// True: the server takes no new calls (as Server::set_online(false), and
  /// withdrawn from its registry); false or absent: as the server's own
  /// online state says.
  std::optional<Overridden<bool>> disabled;
  /// Overrides for every method of the server.
  ServerMethodOverrides service;
  /// Overrides per method name ("echo", "/pkg.Greeter/SayHello"): each field
  /// beats the service-wide one.
  std::map<std::string, ServerMethodOverrides, std::less<>> methods;
  /// The revision the snapshot was read at (0: none), and where from.
  std::int64_t revision = 0;
  std::string source;

  /// The overrides for `method`: its own fields over the service's.
  ServerMethodOverrides for_method(std::string_view method) const;
  bool is_disabled() const noexcept { return disabled && disabled->value; }
};

}  // namespace wheelrpc::rpc
