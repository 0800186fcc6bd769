#pragma once
// The engine behind Client: connections to the servers, the pending-call table,
// the waiting list, deadlines and completion.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/rpc/backoff.h>
#include <wheelrpc/rpc/channel_timer_task.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/retry_timer_task.h>
#include <wheelrpc/transport/channel.h>

#include "call.h"
#include "pending_table.h"
#include "retry_budget.h"
#include "work_gate.h"

namespace wheelrpc::rpc::detail {

class ClientCore;

/// The connection to one server. Its handler methods run on its channel's strand.
class ClientConnection final : public transport::ChannelHandler {
 public:
  enum class State { idle, connecting, handshaking, ready };

  ClientConnection(std::shared_ptr<ClientCore> core, boost::asio::ip::tcp::endpoint endpoint,
                   std::string peer, const BackoffOptions& backoff_options, std::uint64_t seed)
      : backoff(backoff_options, seed), core_(std::move(core)), endpoint_(endpoint), peer_(std::move(peer)) {}

  void on_frame(transport::Channel& channel, transport::Frame& frame) override;
  void on_close(transport::Channel& channel, const boost::system::error_code& ec,
                const std::string& reason) override;

  const boost::asio::ip::tcp::endpoint& endpoint() const noexcept { return endpoint_; }
  const std::string& peer() const noexcept { return peer_; }

  // Guarded by the core's mutex.
  State state = State::idle;
  std::shared_ptr<transport::Channel> channel;
  std::chrono::milliseconds heartbeat{0};  // agreed in the HELLO exchange
  bool wanted = false;                     // used once: keep it connected from now on
  Backoff backoff;                         // delays between connect attempts
  std::chrono::steady_clock::time_point next_attempt{};  // no attempt before this
  std::string last_error;                  // of the last failed attempt, "" once connected
  std::uint64_t active = 0;                // attempts in flight on it
  std::uint64_t attempts = 0;              // attempts sent to it
  std::uint64_t failures = 0;              // of which failed
  std::shared_ptr<HeartbeatTimerTask> heartbeat_task;  // this channel's timer tasks
  std::shared_ptr<ReconnectTimerTask> reconnect_task;

 private:
  std::shared_ptr<ClientCore> core_;  // the cycle is broken by ClientCore::close()
  boost::asio::ip::tcp::endpoint endpoint_;
  std::string peer_;
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  using Clock = Call::Clock;

  ClientCore(boost::asio::any_io_executor ex, timer::Timer& timer, ClientOptions options);
  /// Creates the connection objects (needs shared_from_this, so not in the constructor).
  void init(const std::vector<boost::asio::ip::tcp::endpoint>& servers);

  void start_call(std::string method, std::string payload, CallOptions options,
                  boost::asio::any_completion_handler<Client::Signature> handler);
  void send_failback(RetryTimerTask::Delivery delivery);
  void connect_all();
  void close();
  ClientStats stats() const;
  std::vector<ProviderStats> providers() const;
  const boost::asio::any_io_executor& executor() const noexcept { return ex_; }

  // From connections (their strands).
  void on_connected(ClientConnection* conn, boost::system::error_code ec,
                    boost::asio::ip::tcp::socket socket);
  void on_hello(ClientConnection* conn, const transport::Frame& frame);
  void on_reply(ClientConnection* conn, transport::Frame& frame);
  void on_closed(ClientConnection* conn, const boost::system::error_code& ec, const std::string& reason);

  /// Where a completion comes from: it decides whether the deadline must be
  /// cancelled and whether the handler may run inline.
  enum class Origin { reply, timer, cancel_slot, other };
  /// Completes `call` if nobody did yet (thread-safe).
  void cancel(Call* call, boost::system::error_code ec, std::string message, Origin origin = Origin::other);
  // From the call's timeouts (timer worker; the aux one via the executor).
  void on_deadline(Call* call);
  void on_aux(Call* call);

 private:
  /// How a failed attempt may be retried.
  enum class Retry { always, if_idempotent, never };
  using Lock = std::unique_lock<std::mutex>;

  // Each of these is entered with the lock held and returns with it released.
  /// Starts the call's next attempt: on a ready provider, else into the
  /// waiting list (or failed, without wait_for_ready).
  void dispatch(Lock& lock, Call* call);
  /// Sends an attempt of `call` on `conn`.
  void send_attempt(Lock& lock, ClientConnection* conn, Call* call);
  /// An attempt failed (already out of the books): retry it, or complete the call.
  void attempt_failed(Lock& lock, Call* call, ClientConnection* conn, boost::system::error_code ec,
                      std::string message, Retry retry);
  /// Completes the call (false if it was done already).
  bool finish(Lock& lock, Call* call, boost::system::error_code ec, Response response, Origin origin);

  // Lock held.
  /// Attempts abandoned in flight: their channel and request id.
  using Abandoned = boost::container::small_vector<std::pair<std::shared_ptr<transport::Channel>, std::uint64_t>, 1>;
  /// Takes the call out of every book; returns the references to release.
  /// Attempts in flight are added to `abandoned`, if given.
  int unbook(Call* call, Abandoned* abandoned = nullptr);
  /// Removes one sent attempt (by position) from the table and its provider.
  void drop_attempt(Call* call, std::size_t index, bool failed);
  /// Schedules the aux timeout for the call's nearest event (or none).
  /// Returns references to release (an aux timeout it cancelled).
  int rearm_aux(Call* call, Clock::time_point now);
  ClientConnection* pick(const Call* call, bool avoid_live = false);
  std::chrono::milliseconds retry_delay(int retry);
  void wake_all(Clock::time_point now);
  std::uint64_t random() noexcept;
  /// "<what> after N ms calling 'm' on <peer>": the peer of `on`, else of the
  /// latest attempt, else every provider.
  std::string describe(const Call* call, std::string_view what, const ClientConnection* on = nullptr) const;
  /// The message of an attempt that ran out of its own timeout.
  std::string attempt_timed_out(const Call* call, const Call::Attempt& a, bool server_too) const;
  /// " (attempt k of n)" once the call made more than one attempt, or
  /// `always` (a retry was wanted and not made).
  std::string attempt_note(const Call* call, bool always = false) const;

  /// Starts an attempt if the connection is down, wanted and its backoff
  /// allows one now (lock held).
  void attempt(ClientConnection* conn, Clock::time_point now);
  void connect(ClientConnection* conn);  // lock held
  void maybe_reconnect(ClientConnection* conn, Clock::time_point now);
  std::optional<std::vector<WatchedChannel>> watched(ClientConnection* conn);
  std::chrono::milliseconds idle_timeout_for(const ClientConnection& conn) const;

  // Failback.
  void failback_result(RetryTimerTask::Delivery delivery, boost::system::error_code ec, const Response& r);
  void failback_resend(const std::shared_ptr<RetryTimerTask>& task);

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const ClientOptions options_;
  std::string all_peers_;  // "a:1,b:2", set by init()

  mutable std::mutex mu_;
  bool closed_ = false;
  std::atomic<bool> closed_flag_{false};  // closed_, readable without the lock
  std::vector<std::shared_ptr<ClientConnection>> conns_;
  std::size_t next_conn_ = 0;
  std::uint64_t rng_;
  std::vector<Call*> waiting_;      // each holds a reference; done ones are dropped lazily
  std::unordered_set<Call*> backoff_;  // calls between attempts; each holds a reference
  PendingTable<Call> table_;        // sent attempts; each entry holds a reference
  RetryBudget budget_;
  std::unordered_map<RetryTimerTask*, std::pair<std::shared_ptr<RetryTimerTask>, timer::Timeout>> failback_;
  std::uint64_t next_event_id_ = 1;
  boost::asio::executor_work_guard<boost::asio::any_io_executor> work_;
  WorkGate timer_work_;  // deadline, aux and failback callbacks in progress

  std::atomic<std::uint64_t> calls_{0}, ok_{0}, failed_{0}, timeouts_{0}, late_{0}, connects_{0},
      connect_failures_{0}, pending_{0}, attempts_{0}, retries_{0}, hedges_{0}, refusals_{0},
      cancelled_attempts_{0}, attempt_timeouts_{0}, fb_delivered_{0}, fb_retries_{0}, fb_given_up_{0},
      fb_dropped_{0};
};

}  // namespace wheelrpc::rpc::detail
