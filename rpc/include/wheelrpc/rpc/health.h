#pragma once
/// Health: the grpc.health.v1.Health service every Server serves (Server::health).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wheelrpc::rpc {

namespace detail {
class HealthRegistry;
class ServerCore;
}  // namespace detail

/// grpc.health.v1's HealthCheckResponse.ServingStatus, with its numbers.
enum class ServingStatus : std::uint8_t {
  unknown = 0,          ///< UNKNOWN
  serving = 1,          ///< SERVING
  not_serving = 2,      ///< NOT_SERVING
  service_unknown = 3,  ///< SERVICE_UNKNOWN: only Watch sends it (Check answers NOT_FOUND)
};

/// The proto's name: "UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN".
std::string_view to_string(ServingStatus status) noexcept;

/// A server's grpc.health.v1.Health service: what `/grpc.health.v1.Health/
/// Check` and `/grpc.health.v1.Health/Watch` answer, on both wires.
///
/// Known services: "" (the server as a whole); every service with a method
/// registered under a gRPC-style path "/<package.Service>/<Method>" (typed
/// services, and Server::handle / handle_stream with such a path), known
/// once the server listens; and every name given to set().
///
/// The status of a known service is NOT_SERVING whenever the server is not
/// serving: not listening (before listen, after stop), offline
/// (Server::set_online(false)), or from the very start of a graceful
/// shutdown (Server::async_shutdown: before the registry's unregister
/// grace, so that balancers that watch it stop first). Otherwise it is what
/// set() gave it, else SERVING. `Check` answers an unknown service
/// NOT_FOUND; `Watch` sends SERVICE_UNKNOWN and reports it when it becomes
/// known. Watch sends the current status at once, then each change as it
/// happens (a client that reads slowly gets the newest one, not a queue),
/// and ends with OK once a graceful shutdown starts its drain (after its
/// NOT_SERVING went out).
///
/// Both methods are served while the server is offline or draining (every
/// other call is refused then); otherwise they pass admission and
/// ServerOptions::interceptors like any method (BearerAuthInterceptor
/// refuses a probe without the token: wrap it to let the two paths through).
/// A handler the application registers itself under one of the two paths
/// (Server::handle, handle_stream, add_service) replaces the built-in one
/// of that path. ServerOptions::health_service = false registers neither:
/// both answer UNIMPLEMENTED.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe (any thread; never blocks on
/// a stream: the changes are written by each Watch stream's executor).
///
/// @par Example
/// @code
/// server.health().set("shop.Orders", rpc::ServingStatus::not_serving);  // its database is down
/// ...
/// server.health().set("shop.Orders", rpc::ServingStatus::serving);
/// @endcode
class Health {
 public:
  Health(const Health&) = delete;
  Health& operator=(const Health&) = delete;
  ~Health();

  /// Sets `service`'s status ("" : the server as a whole), making it known
  /// if it was not; its watchers are told at once. `service_unknown` is
  /// clear(service). The server's own state still overrides it with
  /// NOT_SERVING (see above). Any thread, before or after listen.
  void set(std::string_view service, ServingStatus status);
  /// Forgets what set() gave `service`: it is SERVING again if the server
  /// registers it (or it is ""), else unknown. Any thread.
  void clear(std::string_view service);
  /// What Watch would send for `service` now (service_unknown when Check
  /// would answer NOT_FOUND). Any thread.
  ServingStatus status(std::string_view service) const;
  /// The known services, sorted ("" first). Any thread.
  std::vector<std::string> services() const;

 private:
  friend class detail::ServerCore;
  explicit Health(std::shared_ptr<detail::HealthRegistry> impl) noexcept;
  std::shared_ptr<detail::HealthRegistry> impl_;
};

}  // namespace wheelrpc::rpc
