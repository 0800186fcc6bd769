#pragma once
// The engine behind Client.
//
// Concurrency model (who owns what, which thread runs what):
// - A call (Call, shared through CallPtr) has its own lock, `Call::mu`: its
//   attempts, phase and handler change only under it. Completing it flips
//   `Call::done` under that lock, exactly once.
// - Each provider (ClientConnection) has its own lock for its channel,
//   connect state and pending table of sent attempts; the load balancer reads
//   only atomics. Lock order: a call's lock, then a connection's, or the
//   books' (`books_mu_`: the waiting list and the calls in retry backoff);
//   never the other way. No lock is held across a user handler.
// - So a new call, a reply and a timeout on different calls or connections
//   share no lock; counters are relaxed atomics.
// - The provider set (ProviderSet: the connections new attempts may use) is
//   immutable once published; a change publishes a new one (`set_`, read
//   with a pointer copy under a leaf lock). Changes are serialized by
//   `set_mu_`, which also guards the providers that left and still drain
//   (`retiring_`); it is taken before a connection's lock, never after one,
//   and never with a call's lock held. An attempt holds its connection, so a
//   provider that leaves the set lives on until its attempts are done.
// - Channel events run on the channel's strand (replies complete calls there,
//   and a retry may send from there). The deadline and aux timeouts and the
//   failback tasks run on the timer's worker and only pin the call and post
//   to the client's executor, where the work runs (`on_deadline`, `on_aux`).
//   The per-provider HeartbeatTimerTask and ReconnectTimerTask check atomics
//   on the worker and post what touches a channel.
// - The core outlives every call that is not done: close() completes them
//   all before it returns. Posted work holds a shared_ptr to the core.
// - Completion handlers run on their associated executor (default: the
//   client's): inline from a reply, posted otherwise.

#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/container/small_vector.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/timer/clock.h>

#include "attempt_policy.h"
#include "call.h"
#include "client_connection.h"
#include "failback_queue.h"
#include "load_balancer.h"
#include "method_metrics.h"
#include "retry_budget.h"
#include <wheelrpc/common/thread_slot.h>
#include <wheelrpc/common/work_gate.h>

namespace wheelrpc::rpc::detail {

/// The providers new attempts may use: immutable once published.
struct ProviderSet {
  std::vector<std::shared_ptr<ClientConnection>> conns;
  /// "a:1,b:2" for messages; the source's description when empty.
  std::string peers;
  /// A set was received; false while the source has not reported one yet
  /// (calls wait for it, as for a connection being made).
  bool known = false;
  /// Why the source could produce no set (only while none is known).
  std::string source_error;
  /// Why a known set has no provider (ProviderSource::why_empty()); "" when
  /// it has some.
  std::string empty_why;
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore(boost::asio::any_io_executor ex, timer::Timer& timer, ClientOptions options);
  ~ClientCore();
  /// Creates the connections (needs weak_from_this, so not in the constructor).
  void init(const std::vector<boost::asio::ip::tcp::endpoint>& servers);
  /// Follows `source`: its reports replace the provider set.
  void init(std::shared_ptr<ProviderSource> source);
  /// A report of the source (any thread, never concurrently with itself).
  void on_source_report(boost::system::error_code ec, std::vector<boost::asio::ip::tcp::endpoint> endpoints,
                        std::string why);

  void start_call(std::string method, std::string payload, CallOptions options,
                  boost::asio::any_completion_handler<Client::Signature> handler);
  void send_failback(RetryTimerTask::Delivery delivery);
  void connect_all();
  void close();
  ClientStats stats() const;
  std::vector<ProviderStats> providers() const;
  SourceState source_state() const;
  std::vector<MethodStats> method_stats() const { return methods_.snapshot(); }
  std::vector<TimeoutRecord> recent_timeouts() const { return timeout_log_.snapshot(); }
  std::vector<ConnectionInfo> connections() const;
  const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
  TimePoint now() const noexcept { return clock_ ? clock_->now() : timer::fast_steady_now(); }
  /// When the latest read of `channel` completed (on a manual clock: now).
  TimePoint receipt_time(const transport::Channel& channel) const noexcept {
    return clock_ ? clock_->now() : channel.last_read();
  }

  // From connections (their strands).
  void on_connected(ClientConnection& conn, boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
  void on_hello(ClientConnection& conn, const transport::Frame& frame);
  /// `received`: when the read that brought it completed (the latency a
  /// call's metrics record ends there).
  void on_reply(ClientConnection& conn, transport::Frame& frame, TimePoint received);
  void on_closed(ClientConnection& conn, const boost::system::error_code& ec, const std::string& reason);
  /// Starts a connect attempt to `conn` if it is wanted, down, and its
  /// backoff allows one at `now` (any thread but the timer's worker).
  void maybe_reconnect(ClientConnection& conn, TimePoint now);
  std::chrono::milliseconds idle_timeout_for(std::chrono::milliseconds heartbeat) const;
  const ClientOptions& options() const noexcept { return options_; }

  /// Where a completion comes from: it decides whether the handler may run
  /// inline and whether abandoned attempts are told to their servers.
  enum class Origin : std::uint8_t { reply, timer, cancel_slot, other };
  /// Completes `call` with `ec` unless it is done already (any thread but
  /// the timer's worker).
  void cancel(const CallPtr& call, boost::system::error_code ec, std::string message, Origin origin);
  // Posted from the call's timeouts (executor); `fired`: when the timer's
  // worker ran the timeout (on the client's clock), for the timeline.
  void on_deadline(const CallPtr& call, TimePoint fired);
  void on_aux(const CallPtr& call, TimePoint fired);
  /// Posted from a connection's sweep timeout, due at `reached`, run by the
  /// timer's worker at `fired` (executor): ends the calls in its table past
  /// their deadline and arms the sweep for the next one.
  void sweep(ClientConnection& conn, TimePoint reached, TimePoint fired);
  /// Sweep timeouts in progress on the timer's worker: close() waits for
  /// them, so none posts into an executor after it returned.
  common::WorkGate& sweep_work() noexcept { return sweep_work_; }

  /// Test hook: runs before each attempt is encoded and written, on the
  /// thread sending it (never the timer's worker). Not for production use.
  static inline std::function<void(std::string_view method, int attempt)> before_send_hook;

 private:
  using CallLock = std::unique_lock<common::SpinLock>;
  /// What completing a call leaves to do once its lock is released: invoke
  /// the handler, tell servers about abandoned attempts (`deliver`).
  struct Completion {
    bool armed = false;
    boost::asio::any_completion_handler<Client::Signature> handler;
    boost::system::error_code ec;
    Response response;
    bool may_run_inline = false;
    std::optional<TimePoint> context;
    std::optional<TraceContext> trace;  // put in force while the handler runs
    // Attempts abandoned in flight: their channel and request id (CANCEL).
    boost::container::small_vector<std::pair<std::shared_ptr<transport::Channel>, std::uint64_t>, 1> abandoned;
    // A reference to the call being worked on that its holder no longer
    // needs: start_call's own, and the table entry of an attempt dropped.
    // The next attempt's table entry takes it over instead of counting a new
    // one; else it is released with the completion, after the call's lock.
    CallPtr spare;
  };

  // Each of these runs with the call's lock held (asserted).
  /// Starts the call's next attempt: on a ready provider, else into the
  /// waiting list, or failed as unavailable when it does not wait for ready
  /// and every provider is in backoff after a failed connect.
  void dispatch(CallLock& lock, Call& call, Completion& done);
  /// Sends an attempt on `conn`; false (nothing changed) if it is not ready.
  bool send_attempt(CallLock& lock, Call& call, const std::shared_ptr<ClientConnection>& conn, Completion& done);
  /// An attempt failed (already out of the books): retry it, or complete the
  /// call. `provider`: where it failed (identity only), if anywhere.
  void attempt_failed(CallLock& lock, Call& call, const ClientConnection* provider, Failure failure,
                      boost::system::error_code ec, std::string message, Completion& done);
  /// Completes the call (false if it was done already).
  /// `at`: when it ended, for its metrics (the epoch: read the clock now).
  bool complete(CallLock& lock, Call& call, boost::system::error_code ec, Response response, Origin origin,
                Completion& done, TimePoint at = TimePoint{});
  /// Whether adding a traceparent keeps the call's body within
  /// ChannelOptions::max_body (the strings are lent and given back).
  bool fits_with_traceparent(std::string& method, std::string& payload, transport::Attachments& attachments) const;
  /// Adds the call to the recent timeouts (and logs it at debug level).
  void record_timeout(const Call& call, CallCode code, TimePoint t, std::string timeline);
  /// complete()'s work for a call that failed: the metrics, and for a
  /// timeout its timeline (appended to the message) and /timeouts record.
  void completed_with_error(Call& call, boost::system::error_code ec, Response& response, TimePoint at);
  /// The timeline of `call`, timed out at `t` (timeline.h).
  std::string timeline_of(const Call& call, TimePoint t) const;
  /// Completes the call with errc::cancelled, "client closed".
  void complete_closed(CallLock& lock, Call& call, Completion& done);
  /// Schedules the aux timeout for the call's nearest event (or none).
  void rearm_aux(CallLock& lock, Call& call, TimePoint now);
  /// Removes the attempt at `index` from the call and its connection's table.
  void drop_attempt(CallLock& lock, Call& call, std::size_t index, bool failed, Completion& done);
  /// Makes sure something ends a running call with a deadline at its deadline:
  /// if nothing does (it never had an attempt swept, or that attempt is
  /// gone), its own timeout goes on the wheel, due `plan.deadline - t`.
  /// False if the timer refused it (stopped).
  bool cover_deadline(CallLock& lock, Call& call, TimePoint t);
  /// Arms `conn`'s sweep to run by `deadline` (`t`: now), unless it will
  /// already (`conn.mu` held). False if the timer refused it.
  bool arm_sweep(ClientConnection& conn, TimePoint deadline, TimePoint t);
  /// A ready provider of `set` for the call's next attempt (or hedge, which
  /// avoids the providers it already waits on): its index in `set.conns`.
  std::optional<std::size_t> pick(CallLock& lock, const Call& call, const ProviderSet& set, bool avoid_live);
  /// "<what> after N ms calling 'm' on <peer>": the peer of `provider`, else
  /// of the latest attempt, else every provider.
  std::string describe(const Call& call, std::string_view what, const ClientConnection* provider = nullptr) const;
  std::string attempt_timed_out(const Call& call, const Call::Attempt& a, bool server_too) const;

  /// Nothing worth waiting for (lock-free): every provider of `set` is idle
  /// after a failed connect attempt, or the set is known and empty, or the
  /// source failed before reporting any.
  static bool nothing_to_wait_for(const ProviderSet& set) noexcept;
  /// A provider of `set` is ready (lock-free).
  /// A provider is ready with a slot free under max_active_per_provider.
  bool any_slot(const ProviderSet& set) const noexcept;
  /// Fails the attempt of a call that does not wait for ready when there is
  /// nothing to wait for (unavailable, naming the connect errors or why there
  /// is no provider).
  void fail_unavailable(CallLock& lock, Call& call, const ProviderSet& set, Completion& done);
  /// Dispatches the calls waiting for a ready connection (one became ready,
  /// or a new set holds a ready one). Takes books_mu_ to take the waiting list,
  /// releases it, then takes each call's lock in turn (never the two nested).
  void dispatch_waiting();
  /// After a connect attempt failed or the set changed: if there is now
  /// nothing to wait for, fails the attempts of the waiting calls that do not
  /// wait for ready.
  void fail_fast_waiting();

  /// Creates failback_ (needs weak_from_this: called by init()).
  void make_failback();

  // ---- the provider set (set_mu_ held)
  /// Makes `endpoints` the set: keeps the providers in both, brings back or
  /// creates the new ones, retires the ones that left.
  /// Channels to close once set_mu_ is released: a close may run the
  /// channel's on_close inline (a strand dispatch), which takes set_mu_.
  using ToClose = std::vector<std::shared_ptr<transport::Channel>>;
  void apply_set(std::unique_lock<std::mutex>& set_lock, std::vector<boost::asio::ip::tcp::endpoint> endpoints,
                 ToClose& to_close);
  std::shared_ptr<ClientConnection> make_connection(const boost::asio::ip::tcp::endpoint& endpoint);
  /// `conn` left the set: no new attempts, no reconnects; its channel closes
  /// once its attempts are done, or after options.removal_grace.
  void retire(const std::shared_ptr<ClientConnection>& conn, ToClose& to_close);
  /// Closes what retire() left to close (set_mu_ not held).
  static void close_retired(ToClose& to_close);
  /// A retired provider is back before its channel closed.
  void revive(const std::shared_ptr<ClientConnection>& conn);
  /// A retired provider's channel closed (or it had none): forget it.
  void forget_retired(ClientConnection& conn);
  /// The last attempt on a retired provider ended: close its channel.
  void close_drained(ClientConnection& conn);
  /// An attempt on `conn` ended (its table entry taken, under `conn.mu`):
  /// one fewer active there. Returns the count before.
  static std::uint64_t take_active(ClientConnection& conn) noexcept {
    assert(conn.mu.held());
    const auto before = conn.active.load(std::memory_order_relaxed);
    conn.active.store(before - 1, std::memory_order_relaxed);
    return before;
  }
  /// After an attempt on `conn` ended (its `active` decremented from `before`).
  void attempt_ended(ClientConnection& conn, std::uint64_t before);
  /// The current set's connections, then the retired ones still draining.
  std::vector<std::shared_ptr<ClientConnection>> all_connections() const;
  /// The current set (a pointer copy).
  std::shared_ptr<const ProviderSet> current_set() const { return set_.load(); }
  /// The current set, held for the calling thread while the pin lives: from
  /// the thread's own cache line (thread_slot.h), without a lock or a
  /// reference count, while the set is the one the thread saw last; else
  /// copied as current_set() does. Pins nest (a retry sent from inside a
  /// dispatch): an inner pin never lets go of the set an outer one holds.
  class SetPin {
   public:
    explicit SetPin(const ClientCore& core);
    ~SetPin() {
      if (line_) --line_->pins;
    }
    SetPin(const SetPin&) = delete;
    SetPin& operator=(const SetPin&) = delete;
    const ProviderSet& operator*() const noexcept { return *set_; }
    const ProviderSet* operator->() const noexcept { return set_; }

    // The cache (ClientCore::set_cache_): the set a thread slot saw last,
    // with the version of set_ it came with. Only its slot's thread touches
    // a line.
    struct alignas(64) Line {
      std::uint64_t version = ~std::uint64_t{0};
      std::shared_ptr<const ProviderSet> set;
      int pins = 0;
    };

   private:
    Line* line_ = nullptr;  // null: held_ holds the set
    std::shared_ptr<const ProviderSet> held_;
    const ProviderSet* set_ = nullptr;
  };

  void deliver(Completion& done);
  void schedule_deadline(const CallPtr& call, std::chrono::milliseconds budget, std::error_code& ec);
  void wake_all(TimePoint now);
  /// Starts a connect attempt if due (conn's lock held).
  void attempt_connect(std::unique_lock<common::SpinLock>& conn_lock, ClientConnection& conn, TimePoint now);
  std::uint64_t random() noexcept;

  boost::asio::any_io_executor ex_;
  // ex_ when it is an io_context's executor (the usual case), for the check
  // that lets a reply's handler run inline without going through ex_.
  const boost::asio::io_context::executor_type* io_ex_;
  timer::Timer& timer_;
  const ClientOptions options_;
  const timer::Clock* const clock_;
  SharedPtrCell<const ProviderSet> set_;
  mutable std::array<SetPin::Line, common::kThreadSlots> set_cache_;  // SetPin's, one line per thread slot
  std::shared_ptr<ProviderSource> source_;  // set by init(source), then fixed
  mutable std::mutex set_mu_;
  // Guarded by set_mu_: providers that left the set and still drain.
  std::map<boost::asio::ip::tcp::endpoint, std::shared_ptr<ClientConnection>> retiring_;
  std::uint64_t next_seed_ = 1;  // guarded by set_mu_
  // Guarded by set_mu_: the counters of providers that left and were closed
  // (at most kLeftKept, the oldest dropped), handed back to a connection to
  // the same endpoint if it joins again, so per-provider counts never drop.
  static constexpr std::size_t kLeftKept = 1024;
  std::map<boost::asio::ip::tcp::endpoint, ProviderStats> left_;
  std::vector<boost::asio::ip::tcp::endpoint> left_order_;
  /// Keeps `conn`'s counters: its attempts and failures in left_, its
  /// tasks' counts in the client's totals (set_mu_ held).
  void remember_left(const ClientConnection& conn);
  std::atomic<bool> started_{false};  // a call or connect() came: new providers connect at once
  std::unique_ptr<LoadBalancer> balancer_;
  RetryBudget budget_;
  std::shared_ptr<FailbackQueue> failback_;

  std::atomic<bool> closed_{false};
  common::WorkGate sweep_work_;
  std::mutex books_mu_;
  std::vector<CallPtr> waiting_;                     // calls waiting for a ready connection
  std::unordered_map<Call*, CallPtr> backoff_;       // calls between attempts
  std::atomic<std::uint64_t> next_event_id_{1};
  std::atomic<std::uint64_t> rng_;
  boost::asio::executor_work_guard<boost::asio::any_io_executor> work_;
  std::mutex close_mu_;  // close() runs once, others wait for it

  MethodTable methods_;
  TimeoutLog timeout_log_;
  // What every call adds to, per thread slot (no locked add); the rest are
  // rarer events.
  static constexpr std::size_t kOkCounter = 0, kAttemptsCounter = 1;
  common::SlotCounters<2> hot_;
  std::atomic<std::uint64_t> failed_{0}, timeouts_{0}, late_{0}, connects_{0},
      connect_failures_{0}, pending_{0}, retries_{0}, hedges_{0}, refusals_{0}, attempts_unplaced_{0},
      cancelled_attempts_{0}, attempt_timeouts_{0}, provider_sets_{0}, providers_added_{0},
      providers_removed_{0}, empty_sets_ignored_{0}, forgotten_heartbeats_{0}, forgotten_idle_closes_{0};
  // ClientOptions::tls, loaded by the constructor; last, so the members above
  // keep their places (and cache lines) with or without it.
  std::optional<transport::TlsContext> tls_;
};

}  // namespace wheelrpc::rpc::detail
