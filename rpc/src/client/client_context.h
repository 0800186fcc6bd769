#pragma once
// What the parts of one client share: the options, executor, timer, clock
// and wire settings fixed at construction, its counters, and the closed flag.
// Held by shared_ptr: a Subchannel may outlive the core that made it (an
// attempt or its channel still holds it) and reads these until it is gone.
//
// Thread-safety: the fixed members are read-only after construction; the
// rest are atomics, or thread-safe types (ClientMetrics, WorkGate).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/client_interceptor.h>
#include <wheelrpc/rpc/routing_tag.h>
#include <wheelrpc/timer/clock.h>

#include "base/shared_ptr_cell.h"
#include "client/attempt_policy.h"
#include "client/client_metrics.h"
#include "stream/stream_counters.h"
#include "wire/client_transport.h"
#include "wire/wire_settings.h"

namespace wheelrpc::rpc::detail {

struct StreamSide;
class ProviderReview;

struct ClientContext {
  /// `make_transport`: the wire factory (wires.h), given by the root file
  /// that builds the client.
  ClientContext(boost::asio::any_io_executor executor, timer::Timer& t, ClientOptions opts, ClientWireFactory factory);

  boost::asio::any_io_executor ex;
  /// `ex` when it is an io_context's executor (the usual case), for the check
  /// that lets a reply's handler run inline without going through `ex`.
  const boost::asio::io_context::executor_type* io_ex;
  timer::Timer& timer;
  const ClientOptions options;
  const timer::Clock* const clock;  // options.clock: null for the steady clock
  /// What the transports read of `options` (ClientOptions::compression as
  /// the connections use it, the TLS context loaded by the constructor...):
  /// shared with each transport, which may outlive the client.
  const std::shared_ptr<const ClientWireSettings> wire;
  /// Makes a connection's transport (Subchannel::on_connected).
  const ClientWireFactory make_transport;

  ClientMetrics metrics;
  /// Judges the providers (outlier detection, load-aware factors): made when
  /// ClientOptions::outlier_detection is on, the policy is load_aware, or
  /// rules may make it so; null otherwise (attempt endings then record
  /// nothing for it).
  std::shared_ptr<ProviderReview> review;
  /// close() ran: nothing new starts.
  std::atomic<bool> closed{false};
  /// A call or connect() came: new providers connect at once.
  std::atomic<bool> started{false};
  /// Sweep timeouts in progress on the timer's worker: close() waits for
  /// them, so none posts into an executor after it returned.
  common::WorkGate sweep_work;
  /// Its streams' counters (their timer tasks enter `sweep_work` too).
  StreamCounters streams;
  std::atomic<std::uint64_t> next_event_id{1};
  /// ClientOptions::interceptors and attempt_interceptors, shared with the
  /// chains at work (which may outlive the client); null when empty.
  std::shared_ptr<const std::vector<std::shared_ptr<ClientInterceptor>>> interceptors, attempt_interceptors;
  /// The runtime rules in force (ClientOptions::rules): the last good set
  /// its source reported; null while there is none. `has_rules` says
  /// whether a call need look (most clients follow no rules).
  /// ClientOptions::tag, checked.
  RoutingTag tag;
  SharedPtrCell<const CallRules> rules;
  std::atomic<bool> has_rules{false};
  /// Why the rule source's last report failed ("" when it did not).
  void set_rules_error(std::string why) {
    common::LockGuard lock(rules_error_mu);
    rules_error = std::move(why);
  }
  std::string rules_error_now() const {
    common::LockGuard lock(rules_error_mu);
    return rules_error;
  }
  mutable common::Mutex rules_error_mu;
  std::string rules_error WHEELRPC_GUARDED_BY(rules_error_mu);
  /// What the IDL says of each method called through a typed stub so far
  /// (for Client::explain), recorded on a method's first call.
  void remember_idl(const std::string& method, const CallOptions& call);
  std::optional<CallOptions> idl_of(std::string_view method) const;
  mutable common::Mutex idl_mu;
  std::map<std::string, CallOptions, std::less<>> idl_seen WHEELRPC_GUARDED_BY(idl_mu);

  TimePoint now() const noexcept { return clock ? clock->now() : timer::fast_steady_now(); }
};

/// A client stream side over `ctx` (its executor, timer, clock, work gate,
/// message limit and payload coding; `ctx` its owner), without counters or
/// a timeout log: the caller adds those its streams report to.
std::shared_ptr<StreamSide> make_stream_side(const std::shared_ptr<ClientContext>& ctx);

}  // namespace wheelrpc::rpc::detail
