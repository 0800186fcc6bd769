#pragma once
// The call driver: a call's attempts from its start to its completion.
// Dispatch to a ready provider chosen by the load balancer, or into the
// waiting list; retries after a failed attempt (attempt_policy decides,
// the retry budget allows, backoff between them in the books); hedges (sent
// by CallTimeoutEvents when due); the reply that completes a call; attempts
// lost with a connection; the exactly-once completion (completion.h); and
// its InterceptorGate, where calls meet their interceptors.
//
// Threads and locks: a call changes only under its own lock (`Call::mu`);
// every function below marked REQUIRES(call.mu) runs with it held. Lock
// order: a call's lock, then a subchannel's or the books' (`books_mu_`),
// never the other way, never two calls' at once; no lock across a user
// handler (a Completion is delivered after the call's lock is released).
// Runs on whatever thread brings the event: the caller's (a new call), a
// subchannel's strand (a reply, a loss), the client's executor (timeouts,
// posted drains).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_completion_handler.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/status_code.h>

#include "client/attempt_policy.h"
#include "client/call.h"
#include "client/completion.h"
#include "client/load_balancer.h"
#include "client/retry_budget.h"
#include "client/subchannel_listener.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
struct ProviderSet;
class CallDriver;
class CallTimeouts;
class ClientInterception;
class ProviderPool;
class Subchannel;

/// Where a client call meets its interceptors (client_interception.h;
/// defined in interceptor_gate.cc). The per-call chain runs before the
/// call's first dispatch; the attempt chain before each attempt is sent;
/// while one works, the call waits in the driver's books (Phase::
/// intercepting, so close() ends it) and its deadline stays on the wheel.
/// Part of the CallDriver, whose books and attempt path it uses; its
/// functions run under the call's lock except after(), which takes it.
class InterceptorGate {
 public:
  explicit InterceptorGate(CallDriver& driver) noexcept : d_(driver) {}

  /// Runs the per-call interceptors of a new call, not yet shared with any
  /// other thread, on this thread with no lock held (CallDriver::start,
  /// before it locks the call), with `attachments` (moved from) as their
  /// metadata. What they decided there is taken up by intercepted().
  std::shared_ptr<ClientInterception> run_call_chain(Call& call, transport::Attachments& attachments);
  /// Under the call's lock, after run_call_chain (instead of dispatch): the
  /// call goes out with their metadata (every interceptor went on inline:
  /// no books, no wheel, as without interceptors), fails (one rejected), or
  /// waits for them in the books (one works on: after() takes it up).
  void intercepted(Call& call, std::shared_ptr<ClientInterception> chain, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// Starts the attempt interceptors for an attempt on `sub`; true (the
  /// attempt is on its way).
  bool intercept_attempt(Call& call, const std::shared_ptr<Subchannel>& sub, Completion& done)
      WHEELRPC_REQUIRES(call.mu);
  /// The call waits for interceptors with no attempt in flight: phase
  /// intercepting, in the books (so close() ends it). False, and the call
  /// completed, when the client closed.
  bool wait(Call& call, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// Interceptors went on (`proceed`) or rejected the call with `code` and
  /// `message`: on the thread running the chain, or the client's executor. A
  /// chain that is no longer the call's (the call ended, or the attempt was
  /// superseded) changes nothing.
  void after(const CallPtr& call, const std::shared_ptr<ClientInterception>& chain, bool proceed, StatusCode code,
             std::string message);

 private:
  CallDriver& d_;
};

class CallDriver {
 public:
  CallDriver(ClientContext& ctx, ProviderPool& pool, CallTimeouts& timeouts);
  ~CallDriver();

  /// Starts `call` (made by make_call): takes its payload, attachments and
  /// handler, and sends its first attempt or puts it in the waiting list.
  void start(CallPtr call, std::string payload, transport::Attachments attachments,
             boost::asio::any_completion_handler<Client::Signature> handler);
  /// Completes `call` with `ec` unless it is done already (any thread but
  /// the timer's worker).
  void cancel(const CallPtr& call, boost::system::error_code ec, std::string message, Origin origin);

  /// Starts the call's next attempt: on a ready provider, else into the
  /// waiting list, or failed as unavailable when it does not wait for ready
  /// and there is nothing to wait for.
  void dispatch(Call& call, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// Sends an attempt on `sub`; false (nothing changed) if it is not ready.
  /// With attempt interceptors, starts them instead (true: the attempt is
  /// on its way), unless `cleared` holds the chain that went on for it.
  bool send_attempt(Call& call, const std::shared_ptr<Subchannel>& sub, Completion& done,
                    std::shared_ptr<ClientInterception>* cleared = nullptr) WHEELRPC_REQUIRES(call.mu);
  /// A ready provider of `set` for the call's next attempt (or hedge, which
  /// avoids the providers it already waits on): its index in `set.conns`.
  std::optional<std::size_t> pick(const Call& call, const ProviderSet& set, bool avoid_live) WHEELRPC_REQUIRES(call.mu);
  /// Removes the attempt at `index` from the call and its subchannel's table.
  /// `why`: what ended it, for its interceptors (default: connection_lost
  /// when `failed`, else operation_aborted).
  void drop_attempt(Call& call, std::size_t index, bool failed, Completion& done, boost::system::error_code why = {})
      WHEELRPC_REQUIRES(call.mu);
  /// An attempt failed (already out of the books): retry it, or complete the
  /// call. `provider`: where it failed (identity only), if anywhere.
  void attempt_failed(Call& call, const Subchannel* provider, Failure failure, boost::system::error_code ec,
                      std::string message, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// Completes the call (false if it was done already). `at`: when it ended,
  /// for its metrics (the epoch: read the clock now).
  bool complete(Call& call, boost::system::error_code ec, Response response, Origin origin, Completion& done,
                TimePoint at = TimePoint{}) WHEELRPC_REQUIRES(call.mu);
  /// Completes the call with errc::cancelled, "client closed".
  void complete_closed(Call& call, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// A call in retry backoff whose delay is over leaves the books.
  void leave_backoff(Call& call) WHEELRPC_REQUIRES(call.mu);
  /// A hedge or retry may start now (the retry budget); counts a refusal.
  bool try_extra_attempt(TimePoint t);

  /// A provider of `set` is ready with a slot free (lock-free).
  bool any_slot(const ProviderSet& set) const noexcept;
  /// Dispatches the calls waiting for a ready provider. Takes books_mu_ to
  /// take the waiting list, releases it, then each call's lock in turn.
  void dispatch_waiting();
  /// If there is now nothing to wait for, fails the attempts of the waiting
  /// calls that do not wait for ready; likewise those whose routing tag has
  /// no provider left and whose rule allows no fallback (fail_unroutable).
  void fail_fast_waiting();
  bool calls_waiting();
  /// The client closes: hands over the calls waiting or in backoff.
  void take_books(std::vector<CallPtr>& calls);

  /// The interceptor gate: ClientInterception resumes a call through after()
  /// (by way of its host).
  InterceptorGate& gate() noexcept { return gate_; }

  /// Test hook: runs before each attempt is encoded and written, on the
  /// thread sending it (never the timer's worker). Not for production use.
  static inline std::function<void(std::string_view method, int attempt)> before_send_hook;

  /// A reply from `sub` (its strand): completes or retries its call.
  void on_reply(Subchannel& sub, IncomingReply& reply, TimePoint received);
  /// Attempts lost with `sub`'s connection: each is retried or fails.
  void on_lost(Subchannel& sub, LostAttempts& lost, const std::string& what);

  /// "<what> after N ms calling 'm' on <peer>": the peer of `provider`, else
  /// of the latest attempt, else every provider.
  std::string describe(const Call& call, std::string_view what, const Subchannel* provider = nullptr) const;
  std::string attempt_timed_out(const Call& call, const Call::Attempt& a, bool server_too) const;

 private:
  /// Nothing worth waiting for: every provider of `set` is idle after a
  /// failed connect attempt, or the set is known and empty, or the source
  /// failed before reporting any.
  static bool nothing_to_wait_for(const ProviderSet& set) noexcept;
  /// Fails the attempt of a call that does not wait for ready when there is
  /// nothing to wait for (unavailable, naming the connect errors or why
  /// there is no provider).
  void fail_unavailable(Call& call, const ProviderSet& set, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// Completes a call that does not wait for ready and whose tag `set` gives
  /// nowhere to go (ProviderSet::unroutable): errc::unavailable at once,
  /// naming the tag and its rule, not retried (no provider of the set could
  /// take a retry either; a client that has others tries them).
  void fail_unroutable(Call& call, const ProviderSet& set, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// complete()'s work for a call that failed: the metrics, and for a
  /// timeout its timeline (appended to the message) and /timeouts record.
  void completed_with_error(Call& call, boost::system::error_code ec, Response& response, TimePoint at);
  std::uint64_t random() noexcept;

  ClientContext& ctx_;
  ProviderPool& pool_;
  CallTimeouts& timeouts_;
  RetryBudget budget_;
  std::atomic<std::uint64_t> rng_;
  common::Mutex books_mu_;
  std::vector<CallPtr> waiting_ WHEELRPC_GUARDED_BY(books_mu_);  // calls waiting for a ready provider
  // calls between attempts: in retry backoff, or waiting for interceptors (Phase::intercepting)
  std::unordered_map<Call*, CallPtr> backoff_ WHEELRPC_GUARDED_BY(books_mu_);
  friend class InterceptorGate;  // uses the books and the attempt path
  InterceptorGate gate_{*this};
};

}  // namespace wheelrpc::rpc::detail
