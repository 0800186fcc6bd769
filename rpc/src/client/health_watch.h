#pragma once
// HealthWatch: client-side health checking of one provider (gRPC's
// `healthCheckConfig`, gRFC A17; ClientOptions::health_check). Each
// connection its Subchannel makes opens one `/grpc.health.v1.Health/Watch`
// stream on that connection, as soon as the connection is ready, and the
// provider takes new calls only while the watch says SERVING:
//
// - the first answer decides: until it comes the provider gets no new calls
//   (calls wait for a ready provider within their deadlines, as they wait
//   for a connection being made; they are not failed fast for it);
// - SERVING: healthy; NOT_SERVING, UNKNOWN, SERVICE_UNKNOWN or any other
//   value: unhealthy (no new calls; calls in flight finish);
// - UNIMPLEMENTED (the provider has no health service, or has the path as a
//   unary method, or speaks no streams): healthy, and not checked on that
//   connection any more (logged at info, once per provider);
// - any other end of the stream while the connection stays up: unhealthy,
//   and the stream is opened again after a backoff (ClientOptions::reconnect's
//   `initial`, `multiplier`, `jitter`, `max`; at once, through the timer,
//   when the stream had answered at least once, as gRPC does), the wait a
//   timeout on the client's shared timer whose worker only posts the
//   restart to the connection's strand;
// - the connection's close ends the watch; the next connection starts one.
//
// The watch is not a call: no metrics (neither the client's calls nor its
// streams count it), no retries or hedges, no deadline, no interceptors. It
// is an open stream on its connection (ConnectionInfo::streams counts it).
//
// Threads: start/stop/on_open_answer run on the connection's strand or the
// client's executor (never the timer's worker); the stream's completions run
// on the client's executor; the restart timeout on the timer's worker only
// takes a weak reference and posts. State is guarded by `mu_`, a leaf lock:
// nothing is called with it held (no stream operation, no callback). Each
// connection is a generation: what comes for an earlier one is dropped.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/rpc/backoff.h>
#include <wheelrpc/timer/timer.h>

#include "wire/client_transport.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
struct StreamSide;
class StreamCore;

/// What the watch says of a provider's current connection.
enum class HealthState : std::uint8_t {
  off,            ///< not watched (no connection, or health checking off)
  checking,       ///< connected, no answer yet: no new calls
  serving,        ///< SERVING: new calls
  not_serving,    ///< anything but SERVING, or the watch failed and waits to restart: no new calls
  unimplemented,  ///< no health service there: taken as serving, not watched on this connection
};
/// Whether a watched provider in state `s` takes new calls (its connection
/// being ready). `off` does not: a connection not watched yet waits for it.
constexpr bool takes_calls(HealthState s) noexcept {
  return s == HealthState::serving || s == HealthState::unimplemented;
}
/// "off", "checking", "serving", "not_serving", "unimplemented".
std::string_view health_name(HealthState s) noexcept;

class HealthWatch final : public std::enable_shared_from_this<HealthWatch> {
 public:
  /// Told that the state of the connection watched changed to `state` (the
  /// client's executor or the connection's strand; no lock of the watch
  /// held; state() says it already). Not told of start() and stop().
  using OnChange = std::function<void(HealthState state)>;

  /// `peer`: "host:port", for logs; `seed`: the backoff's jitter.
  HealthWatch(std::shared_ptr<ClientContext> ctx, std::string peer, std::uint64_t seed, OnChange on_change);
  ~HealthWatch();
  HealthWatch(const HealthWatch&) = delete;
  HealthWatch& operator=(const HealthWatch&) = delete;

  /// A connection became ready: watches it on `transport` (state checking).
  /// Ends any earlier watch. Not the timer's worker.
  void start(std::shared_ptr<ClientTransport> transport);
  /// start(), posted to the connection's strand (for a caller holding a
  /// lock the answer's dispatch must not run under); dropped if stop() or
  /// start() came meanwhile. Any thread but the timer's worker.
  void start_later(std::shared_ptr<ClientTransport> transport);
  /// The connection closed, or its provider leaves (or the client closes):
  /// ends the stream (the server sees it cancelled) and any restart wait;
  /// state off. Not the timer's worker.
  void stop();
  /// Whether a reply's id is the answer to a watch's OPEN: ids with the top
  /// bit set are the watches' (a subchannel's table never reaches it).
  static constexpr bool is_watch_id(std::uint64_t id) noexcept { return (id & kIdBit) != 0; }
  /// The answer to the watch's OPEN (the connection's strand).
  void on_open_answer(const IncomingReply& reply);

  /// Why it is not_serving ("" in any other state). Any thread.
  std::string why_not_serving() const;
  /// The state now (lock-free; any thread).
  HealthState state() const noexcept { return state_mirror_.load(std::memory_order_acquire); }
  /// Watch streams opened so far, on every connection (tests, diagnostics).
  std::uint64_t opened() const noexcept { return opened_.load(std::memory_order_relaxed); }

 private:
  static constexpr std::uint64_t kIdBit = std::uint64_t{1} << 63;

  /// start(transport) if the generation is still `expected` (none: any).
  void start_if(std::optional<std::uint64_t> expected, std::shared_ptr<ClientTransport> transport);
  /// Opens the watch stream of generation `gen` on its connection.
  void open(std::uint64_t gen);
  void read_next(std::uint64_t gen, const std::shared_ptr<StreamCore>& stream);
  void on_read(std::uint64_t gen, const boost::system::error_code& ec, std::optional<std::string> message);
  /// The stream of `gen` ended (`ec`, `what`): unimplemented, or a restart.
  void ended(std::uint64_t gen, const boost::system::error_code& ec, const std::string& what);
  /// The restart timeout of `gen` ran (the timer's worker): posts open(gen).
  void on_restart_due(std::uint64_t gen);
  /// Sets the state of `gen` and tells the owner if it changed.
  void set(std::uint64_t gen, HealthState state, std::string why);
  void set_locked(HealthState state, std::string why) WHEELRPC_REQUIRES(mu_);

  const std::shared_ptr<ClientContext> ctx_;
  const std::string peer_;
  const OnChange on_change_;
  std::shared_ptr<const StreamSide> side_;  // what its streams share (made once)
  std::string request_;                     // the HealthCheckRequest, encoded once
  std::atomic<HealthState> state_mirror_{HealthState::off};
  std::atomic<std::uint64_t> opened_{0};
  std::atomic<bool> told_unimplemented_{false};  // the info line was logged

  mutable common::SpinLock mu_;
  std::uint64_t gen_ WHEELRPC_GUARDED_BY(mu_) = 0;  // the connection watched (0: none yet)
  bool active_ WHEELRPC_GUARDED_BY(mu_) = false;    // a connection is watched (start() without stop())
  std::weak_ptr<ClientTransport> transport_ WHEELRPC_GUARDED_BY(mu_);
  std::shared_ptr<StreamCore> stream_ WHEELRPC_GUARDED_BY(mu_);  // the stream of gen_, if open
  std::uint64_t open_id_ WHEELRPC_GUARDED_BY(mu_) = 0;           // its OPEN's id while unanswered
  std::uint64_t next_id_ WHEELRPC_GUARDED_BY(mu_) = 0;
  bool answered_ WHEELRPC_GUARDED_BY(mu_) = false;  // the stream of gen_ brought an answer
  HealthState state_ WHEELRPC_GUARDED_BY(mu_) = HealthState::off;
  std::string why_ WHEELRPC_GUARDED_BY(mu_);         // why it is not serving
  Backoff backoff_ WHEELRPC_GUARDED_BY(mu_);         // between restarts on one connection
  timer::Timeout restart_ WHEELRPC_GUARDED_BY(mu_);  // the restart wait, if any
};

}  // namespace wheelrpc::rpc::detail
