#pragma once
/// EtcdRegistry: the Registry on etcd v3 (3.4's HTTP/JSON gateway, over
/// Boost.Beast), with Dubbo's FailbackRegistry behaviour on the shared
/// HashedWheelTimer.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/registry/registry.h>
#include <wheelrpc/timer/timer.h>

namespace wheelrpc::registry {

struct EtcdRegistryOptions {
  /// Lease TTL of every key this registry puts (one lease per registry);
  /// renewed every ttl / 3 by a LeaseKeepAliveTimerTask. Default 10 s; 2 .. 3600.
  std::chrono::seconds lease_ttl{10};
  /// Deadline of one etcd request on one endpoint (on the shared timer);
  /// a request that times out goes to the next endpoint. Default 2 s; > 0.
  std::chrono::milliseconds request_timeout{2000};
  /// Failed operations are retried this often, ± 20 % jitter. Default 5 s (Dubbo's); > 0.
  std::chrono::milliseconds retry_period{5000};
  /// Key prefix. Default "/wheelrpc"; keys are <root>/<service>/providers/<endpoint>.
  std::string root = "/wheelrpc";
};

/// Counters (monotonic except the *_now ones).
struct RegistryStats {
  std::uint64_t registrations = 0;    ///< successful puts of a registration (re-puts included)
  std::uint64_t unregistrations = 0;  ///< successful deletes
  std::uint64_t lease_grants = 0;
  std::uint64_t lease_renewals = 0;  ///< keepalives answered with a live lease
  std::uint64_t lease_losses = 0;    ///< keepalives that found the lease gone (then re-granted, re-put)
  std::uint64_t watch_restarts = 0;  ///< watches resumed after a break
  std::uint64_t full_reads = 0;      ///< prefix reads (first reads and re-reads after compaction)
  std::uint64_t bad_entries = 0;     ///< values skipped: not a ServiceInstance
  std::uint64_t rules_accepted = 0;  ///< rule versions taken (rules.h; re-reads of a known version not counted)
  std::uint64_t rules_refused = 0;   ///< rule versions refused as invalid (each key and mod revision once)
  std::uint64_t requests = 0;        ///< etcd requests sent (all kinds)
  std::uint64_t request_failures = 0;
  std::uint64_t retry_tasks_pending = 0;  ///< Failed*Task waiting on the wheel now
  std::uint64_t registered_now = 0;       ///< registrations in force now
  std::uint64_t subscriptions_now = 0;
};

/// @par Thread Safety
/// As Registry: every method from any thread; listeners and the callbacks
/// run on the registry's strand (of the executor given to `create`). The
/// timer's worker only posts there. The Timer and the executor's
/// io_context must outlive the registry; call close() (or destroy the last
/// reference) before stopping the io_context if the lease should be revoked.
/// A client that follows it (provider_source, rule_source) holds a reference
/// until the client's own executor has run its last handler: run the registry
/// on the client's io_context, or on one destroyed after the client's.
///
/// @par Example
/// @code
/// auto reg = wheelrpc::registry::EtcdRegistry::create(io.get_executor(), timer, "etcd://127.0.0.1:2379");
/// reg->register_instance({.service = "echo", .endpoint = "127.0.0.1:7001"});
/// @endcode
class EtcdRegistry : public Registry {
 public:
  /// `endpoints`: "etcd://h1:p1,h2:p2" (also http:// or no scheme). Throws
  /// std::invalid_argument for a bad endpoint list or absurd options.
  static std::shared_ptr<EtcdRegistry> create(boost::asio::any_io_executor ex, timer::Timer& timer,
                                              const std::string& endpoints, EtcdRegistryOptions options = {});
  virtual RegistryStats stats() const = 0;
  /// The lease ID in force (0: none yet). For tests and status pages.
  virtual std::int64_t lease_id() const = 0;
};

}  // namespace wheelrpc::registry
