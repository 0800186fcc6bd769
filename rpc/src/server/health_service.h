#pragma once
// The built-in grpc.health.v1.Health methods (Check, Watch) over a server's
// HealthRegistry, as the server registers them when it starts listening.

#include <memory>
#include <string_view>

#include <wheelrpc/rpc/server.h>

#include "server/stream_methods.h"

namespace wheelrpc::rpc::detail {

class HealthRegistry;

/// The handlers of the two methods; stateless (the state is the registry's).
class HealthService {
 public:
  /// Whether `method` is /grpc.health.v1.Health/Check or /Watch: they are
  /// served while the server is offline or draining (saying NOT_SERVING is
  /// their job); every other refusal applies to them as to any method.
  static bool is_health_method(std::string_view method) noexcept;
  /// is_health_method(), with the service on (ServerOptions::health_service):
  /// what admission lets through while offline or draining. (A user's own
  /// handler under those paths is let through too: it replaced ours.)
  static bool serves_while_refusing(const ServerOptions& options, std::string_view method) noexcept {
    return options.health_service && is_health_method(method);
  }

  /// Check: the status of the request's service; NOT_FOUND for an unknown
  /// one, INVALID_ARGUMENT for a request that does not parse. Answers inline.
  static Server::Handler check(std::shared_ptr<HealthRegistry> registry);
  /// Watch: each accepted stream becomes a HealthWatchStream (health_watch_stream.h).
  static CoreStreamHandler watch(std::shared_ptr<HealthRegistry> registry);
};

}  // namespace wheelrpc::rpc::detail
