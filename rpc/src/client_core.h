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

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/container/small_vector.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/clock.h>

#include "attempt_policy.h"
#include "call.h"
#include "client_connection.h"
#include "failback_queue.h"
#include "load_balancer.h"
#include "retry_budget.h"
#include "work_gate.h"

namespace wheelrpc::rpc::detail {

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore(boost::asio::any_io_executor ex, timer::Timer& timer, ClientOptions options);
  ~ClientCore();
  /// Creates the connections (needs weak_from_this, so not in the constructor).
  void init(const std::vector<boost::asio::ip::tcp::endpoint>& servers);

  void start_call(std::string method, std::string payload, CallOptions options,
                  boost::asio::any_completion_handler<Client::Signature> handler);
  void send_failback(RetryTimerTask::Delivery delivery);
  void connect_all();
  void close();
  ClientStats stats() const;
  std::vector<ProviderStats> providers() const;
  const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
  TimePoint now() const noexcept { return clock_ ? clock_->now() : timer::fast_steady_now(); }

  // From connections (their strands).
  void on_connected(ClientConnection& conn, boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
  void on_hello(ClientConnection& conn, const transport::Frame& frame);
  void on_reply(ClientConnection& conn, transport::Frame& frame);
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
  // Posted from the call's timeouts (executor).
  void on_deadline(const CallPtr& call);
  void on_aux(const CallPtr& call);

  /// Test hook: runs before each attempt is encoded and written, on the
  /// thread sending it (never the timer's worker). Not for production use.
  static inline std::function<void(std::string_view method, int attempt)> before_send_hook;

 private:
  using CallLock = std::unique_lock<CheckedMutex>;
  /// What completing a call leaves to do once its lock is released: invoke
  /// the handler, tell servers about abandoned attempts (`deliver`).
  struct Completion {
    bool armed = false;
    boost::asio::any_completion_handler<Client::Signature> handler;
    boost::system::error_code ec;
    Response response;
    bool may_run_inline = false;
    std::optional<TimePoint> context;
    // Attempts abandoned in flight: their channel and request id (CANCEL).
    boost::container::small_vector<std::pair<std::shared_ptr<transport::Channel>, std::uint64_t>, 1> abandoned;
  };

  // Each of these runs with the call's lock held (asserted).
  /// Starts the call's next attempt: on a ready provider, else into the
  /// waiting list, or failed as unavailable when it does not wait for ready
  /// and every provider is in backoff after a failed connect.
  void dispatch(CallLock& lock, Call& call, Completion& done);
  /// Sends an attempt on `conn`; false (nothing changed) if it is not ready.
  bool send_attempt(CallLock& lock, Call& call, ClientConnection& conn, Completion& done);
  /// An attempt failed (already out of the books): retry it, or complete the call.
  void attempt_failed(CallLock& lock, Call& call, std::optional<std::size_t> provider, Failure failure,
                      boost::system::error_code ec, std::string message, Completion& done);
  /// Completes the call (false if it was done already).
  bool complete(CallLock& lock, Call& call, boost::system::error_code ec, Response response, Origin origin,
                Completion& done);
  /// Completes the call with errc::cancelled, "client closed".
  void complete_closed(CallLock& lock, Call& call, Completion& done);
  /// Schedules the aux timeout for the call's nearest event (or none).
  void rearm_aux(CallLock& lock, Call& call, TimePoint now);
  /// Removes the attempt at `index` from the call and its connection's table.
  void drop_attempt(CallLock& lock, Call& call, std::size_t index, bool failed);
  std::optional<std::size_t> pick(CallLock& lock, const Call& call, bool avoid_live);
  /// "<what> after N ms calling 'm' on <peer>": the peer of `provider`, else
  /// of the latest attempt, else every provider.
  std::string describe(const Call& call, std::string_view what,
                       std::optional<std::size_t> provider = std::nullopt) const;
  std::string attempt_timed_out(const Call& call, const Call::Attempt& a, bool server_too) const;

  /// Every provider is idle after a failed connect attempt (lock-free).
  bool every_provider_in_backoff() const noexcept;
  /// Fails the attempt of a call that does not wait for ready: every
  /// provider is in backoff (unavailable, naming their connect errors).
  void fail_unavailable(CallLock& lock, Call& call, Completion& done);
  /// After a connect attempt failed: if every provider is now in backoff,
  /// fails the attempts of the waiting calls that do not wait for ready.
  void fail_fast_waiting();

  void deliver(Completion& done);
  void schedule_deadline(const CallPtr& call, std::chrono::milliseconds budget, std::error_code& ec);
  void wake_all(TimePoint now);
  /// Starts a connect attempt if due (conn's lock held).
  void attempt_connect(std::unique_lock<CheckedMutex>& conn_lock, ClientConnection& conn, TimePoint now);
  std::uint64_t random() noexcept;

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const ClientOptions options_;
  const timer::Clock* const clock_;
  std::string all_peers_;  // "a:1,b:2", set by init()
  // Fixed by init(); never changes afterwards, so read without a lock.
  std::vector<std::shared_ptr<ClientConnection>> conns_;
  std::unique_ptr<LoadBalancer> balancer_;
  RetryBudget budget_;
  std::shared_ptr<FailbackQueue> failback_;

  std::atomic<bool> closed_{false};
  std::mutex books_mu_;
  std::vector<CallPtr> waiting_;                     // calls waiting for a ready connection
  std::unordered_map<Call*, CallPtr> backoff_;       // calls between attempts
  std::atomic<std::uint64_t> next_event_id_{1};
  std::atomic<std::uint64_t> rng_;
  boost::asio::executor_work_guard<boost::asio::any_io_executor> work_;
  std::mutex close_mu_;  // close() runs once, others wait for it

  std::atomic<std::uint64_t> ok_{0}, failed_{0}, timeouts_{0}, late_{0}, connects_{0},
      connect_failures_{0}, pending_{0}, attempts_{0}, retries_{0}, hedges_{0}, refusals_{0},
      cancelled_attempts_{0}, attempt_timeouts_{0};
};

}  // namespace wheelrpc::rpc::detail
