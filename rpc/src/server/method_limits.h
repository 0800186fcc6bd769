#pragma once
// A method's limits as registered (MethodOptions) and as in force now: a
// provider rule (Server::apply_rules) overrides them while it lasts. Read on
// every request (relaxed loads); written by apply_rules from any thread.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/server_rules.h>

namespace wheelrpc::rpc::detail {

/// A method of the library's own gRPC services (/grpc.health.v1.Health/...,
/// /grpc.reflection...): a rule's service-wide limits are not for them.
inline bool is_library_method(std::string_view name) noexcept { return name.starts_with("/grpc."); }

struct MethodLimits {
  explicit MethodLimits(const MethodOptions& options)
      : registered_max_concurrency(options.max_concurrency),
        registered_timeout(options.timeout),
        max_concurrency_(options.max_concurrency),
        timeout_ms_(options.timeout.count()) {}

  /// Calls (or streams) at once; 0: no limit.
  std::size_t max_concurrency() const noexcept { return max_concurrency_.load(std::memory_order_relaxed); }
  /// The server-side timeout; 0: none.
  std::chrono::milliseconds timeout() const noexcept {
    return std::chrono::milliseconds(timeout_ms_.load(std::memory_order_relaxed));
  }
  /// Puts `o` in force over the registered values (a field it leaves unset
  /// goes back to the registered one).
  void apply(const ServerMethodOverrides& o) noexcept {
    max_concurrency_.store(o.max_concurrency ? o.max_concurrency->value : registered_max_concurrency,
                           std::memory_order_relaxed);
    timeout_ms_.store(o.timeout ? o.timeout->value.count() : registered_timeout.count(), std::memory_order_relaxed);
  }

  const std::size_t registered_max_concurrency;
  const std::chrono::milliseconds registered_timeout;

 private:
  std::atomic<std::size_t> max_concurrency_;
  std::atomic<std::int64_t> timeout_ms_;
};

}  // namespace wheelrpc::rpc::detail
