#pragma once
// The state behind a server's grpc.health.v1.Health (Health's pimpl): the
// known services, what the application set, whether the server serves, and
// the open Watch streams, each told every change of its service's status.

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/health.h>

namespace wheelrpc::rpc::detail {

class HealthWatchStream;

/// Thread-safe: any thread but the timer's worker. `mu_` is a leaf (taken
/// inside the server's locks is allowed; nothing but the watches' own
/// leaf locks is taken inside it); no stream is written under it: a watch
/// told a change posts its write to its stream's executor.
class HealthRegistry {
 public:
  /// `serving`: whether the server serves now (listening, online, no
  /// graceful shutdown begun); read only by server_changed().
  explicit HealthRegistry(std::function<bool()> serving);

  /// Health::set / clear / status / services.
  void set(std::string_view service, ServingStatus status);
  void clear(std::string_view service);
  ServingStatus status(std::string_view service) const;
  std::vector<std::string> services() const;

  /// The service names of the methods registered under gRPC-style paths
  /// ("/<pkg.Service>/<Method>"; other names are skipped). Once, when the
  /// server starts listening.
  void set_registered(const std::vector<std::string>& method_paths);
  /// The server's state changed (listening, online, a shutdown began):
  /// re-reads it and tells the watchers whose status changed.
  void server_changed();
  /// A graceful shutdown's drain began: each watch ends with OK once its
  /// last status went out; watches added from now on end at once after
  /// their first status.
  void drain();
  /// The server stopped: NOT_SERVING from now on, and the watches are let go
  /// of (their streams were ended by the stop). Idempotent.
  void stop();

  /// A Watch stream for `service` whose request was read: gets the current
  /// status at once, then every change. False if the server stopped (not added).
  bool add(const std::shared_ptr<HealthWatchStream>& watch);
  /// A watch's stream ended (however): forgotten.
  void remove(const HealthWatchStream* watch);

  /// The service name of a gRPC-style method path, or empty.
  static std::string_view service_of(std::string_view path) noexcept;

 private:
  ServingStatus status_locked(std::string_view service) const WHEELRPC_REQUIRES(mu_);
  /// Tells every watch (of `service`, or all when null) its status; fills
  /// `kick` with the ones that must write now.
  void offer_locked(const std::string* service, std::vector<std::shared_ptr<HealthWatchStream>>& kick)
      WHEELRPC_REQUIRES(mu_);
  static void start(std::vector<std::shared_ptr<HealthWatchStream>>& kick);

  const std::function<bool()> serving_probe_;
  mutable common::Mutex mu_;
  bool serving_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool draining_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::set<std::string, std::less<>> registered_ WHEELRPC_GUARDED_BY(mu_);
  std::map<std::string, ServingStatus, std::less<>> set_ WHEELRPC_GUARDED_BY(mu_);  // by the application
  std::unordered_map<const HealthWatchStream*, std::shared_ptr<HealthWatchStream>> watches_ WHEELRPC_GUARDED_BY(mu_);
};

}  // namespace wheelrpc::rpc::detail
