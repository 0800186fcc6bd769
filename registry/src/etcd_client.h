#pragma once
// EtcdClient: etcd v3 over its HTTP/JSON gateway (etcd 3.4, paths under /v3),
// with Boost.Beast. Internal to the registry module for now.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/timer/timer.h>

#include "etcd_endpoints.h"
#include "etcd_json.h"

namespace wheelrpc::registry::detail {

struct EtcdClientOptions {
  /// Deadline of one attempt on one endpoint: resolve, connect, send and the
  /// whole answer (for a watch: until etcd confirms the watch is created), on
  /// the shared timer. Default 2 s. A request that times out on one endpoint
  /// goes to the next, so a request may take up to endpoints × this.
  std::chrono::milliseconds request_timeout{2000};
  /// Largest answer body accepted, bytes; a larger one is errc::bad_response.
  /// Default 16 MiB. Also bounds one message of a watch stream.
  std::size_t max_body = 16 * 1024 * 1024;
};

class EtcdWatch;

/// A client of etcd's v3 JSON gateway: one HTTP/1.1 connection per request
/// (keep-alive comes later), a deadline per attempt on the shared timer, and
/// failover: a request that cannot connect to an endpoint, times out, or loses
/// its connection before a complete answer goes to the next endpoint; the one
/// that answered is tried first next time. HTTP answers (2xx or an etcd error)
/// are never retried elsewhere.
///
/// Every completion is `void(boost::system::error_code, Result)` (errors in
/// errc: timeout, unavailable, bad_response, http_error, etcd_error, truncated;
/// the detail is logged on "wheelrpc.registry" and passed as `why` where the
/// signature has it) and runs on the client's strand (a strand of the
/// executor given to `create`), exactly once. The timer's tasks only post to
/// that strand: no I/O ever runs on the timer thread.
///
/// @par Thread Safety
/// Distinct objects: Safe. Shared objects: Safe (every method may be called
/// from any thread). The Timer must outlive the client and every request it
/// started; let pending requests finish (or stop the executor's io_context)
/// before destroying the io_context.
///
/// @par Example
/// @code
/// auto c = EtcdClient::create(io.get_executor(), timer, eps);
/// c->put("/k", "v", 0, [](boost::system::error_code ec, PutResult r) { ... });
/// @endcode
class EtcdClient : public std::enable_shared_from_this<EtcdClient> {
 public:
  using Executor = boost::asio::any_io_executor;
  using Strand = boost::asio::strand<Executor>;

  /// `endpoints` must not be empty (throws std::invalid_argument).
  static std::shared_ptr<EtcdClient> create(Executor ex, timer::Timer& timer, std::vector<EtcdEndpoint> endpoints,
                                            EtcdClientOptions options = {});

  /// Puts `key` = `value`, attached to `lease` (0: none).
  void put(std::string key, std::string value, std::int64_t lease,
           std::function<void(boost::system::error_code, PutResult)> handler);
  /// Reads every key starting with `prefix`, with the store revision it was read at.
  void range_prefix(std::string prefix, std::function<void(boost::system::error_code, RangeResult)> handler);
  /// Deletes `key` (no error if it does not exist: `deleted` is 0).
  void delete_key(std::string key, std::function<void(boost::system::error_code, DeleteResult)> handler);
  /// Grants a lease of `ttl` (seconds, ≥ 1).
  void lease_grant(std::chrono::seconds ttl, std::function<void(boost::system::error_code, LeaseGrantResult)> handler);
  /// Renews lease `id` once. A result with `ttl` 0 means the lease is gone
  /// (etcd does not report that as an error).
  void lease_keepalive(std::int64_t id, std::function<void(boost::system::error_code, KeepAliveResult)> handler);
  /// Revokes lease `id`, deleting its keys. A lease unknown to etcd gives
  /// errc::etcd_error ("requested lease not found").
  void lease_revoke(std::int64_t id, std::function<void(boost::system::error_code)> handler);

  /// Watches every key under `prefix` from `start_revision` (0: from now).
  /// `on_event(ec, response)` runs on the client's strand: with no error for
  /// every message (the first has `created`), then exactly once with an
  /// error, after which it is released: errc::compacted (start_revision was
  /// compacted: re-read with range_prefix and watch from its revision + 1),
  /// errc::watch_canceled, errc::watch_closed, errc::truncated (the stream
  /// broke: resume from the last revision seen + 1), errc::bad_response,
  /// errc::timeout / errc::unavailable (no endpoint confirmed the watch),
  /// or operation_aborted after `EtcdWatch::cancel()`.
  std::shared_ptr<EtcdWatch> watch(std::string prefix, std::int64_t start_revision,
                                   std::function<void(boost::system::error_code, const WatchResponse&)> on_event);

  const std::vector<EtcdEndpoint>& endpoints() const noexcept { return endpoints_; }
  const EtcdClientOptions& options() const noexcept { return options_; }
  timer::Timer& timer() const noexcept { return timer_; }
  const Strand& strand() const noexcept { return strand_; }

  /// Internal: the endpoint index requests start at, and the one that last
  /// answered. Only on the strand.
  std::size_t preferred_endpoint() const noexcept;
  void set_preferred_endpoint(std::size_t i) noexcept;

  /// Internal: POSTs `body` to `path` with failover; `handler(ec, why, body)`.
  void request(std::string path, std::string body,
               std::function<void(boost::system::error_code, const std::string& why, const std::string& body)> handler);

 private:
  EtcdClient(Executor ex, timer::Timer& timer, std::vector<EtcdEndpoint> endpoints, EtcdClientOptions options);

  Strand strand_;
  timer::Timer& timer_;
  std::vector<EtcdEndpoint> endpoints_;
  EtcdClientOptions options_;
  std::size_t preferred_ = 0;  // only on strand_
};

/// A running watch started by EtcdClient::watch. Thread-safe.
class EtcdWatch {
 public:
  virtual ~EtcdWatch() = default;
  /// Stops the watch (closes its stream); the handler then runs once with
  /// operation_aborted, unless it had already had its final call. Safe to call
  /// from any thread, more than once.
  virtual void cancel() = 0;
};

}  // namespace wheelrpc::registry::detail
