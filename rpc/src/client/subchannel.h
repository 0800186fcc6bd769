#pragma once
// A Subchannel: the client's connection to one provider (gRPC's word). It
// owns its connect / TLS / HELLO / backoff / reconnect state machine, its
// HeartbeatTimerTask and ReconnectTimerTask (and CloseTimerTask while it
// drains after leaving the provider set), the table of attempts sent on it
// with the one sweep timeout that ends those past their deadlines, and its
// counters, and with ClientOptions::health_check the HealthWatch of its
// connections (health_watch.h): a connection takes calls only once its watch
// says SERVING. It speaks to its provider through a ClientTransport (the
// protocol seam, client_transport.h): one per connection it makes, made by
// the wire factory the client was given (ClientContext::make_transport). It
// tells its owner about events through a SubchannelListener.
//
// Threads: channel events run on the channel's strand; connect completions
// and posted work on the client's executor; its timer tasks check lock-free
// mirrors on the timer's worker and post anything that acts. Its state is
// guarded by `mu_`, a leaf lock per provider taken after a call's lock, never
// before one; the atomics mirror what load balancing and the timer tasks
// read without it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/common/single_writer_counter.h>
#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/rpc/backoff.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/transport/channel.h>

#include "client/call.h"
#include "base/channel_timer_task.h"
#include "client/health_watch.h"
#include "wire/client_transport.h"
#include "client/load_balancer.h"
#include "client/outlier_stats.h"
#include "client/provider_review.h"
#include "base/pending_table.h"
#include "base/shared_ptr_cell.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class SubchannelListener;

class Subchannel final : public ClientTransportEvents, public std::enable_shared_from_this<Subchannel> {
 public:
  enum class State : std::uint8_t { idle, connecting, handshaking, ready };

  /// `restored`: the counters of an earlier subchannel to the same endpoint
  /// that left the set (per-provider counts never drop), or null.
  Subchannel(std::shared_ptr<ClientContext> ctx, std::weak_ptr<SubchannelListener> listener,
             boost::asio::ip::tcp::endpoint endpoint, std::uint64_t seed, const ProviderStats* restored);
  /// Starts its heartbeat and reconnect tasks on the client's timer (and
  /// makes its HealthWatch if health checking is on).
  void start_tasks();

  const boost::asio::ip::tcp::endpoint& endpoint() const noexcept { return endpoint_; }
  const std::string& peer() const noexcept { return peer_; }

  // ---- lock-free views (any thread)
  /// What load balancing sees: a provider with `max_active` attempts in
  /// flight (0: no limit) is not eligible, as if not ready.
  ProviderSnapshot snapshot(std::size_t max_active) const noexcept {
    const auto n = active_.load();
    const auto od = outlier_.state();
    return {ready() && (max_active == 0 || n < max_active),
            n,
            failures_.load(std::memory_order_relaxed),
            100,
            od == OutlierStats::State::ejected,
            od == OutlierStats::State::probation};
  }
  /// Ready and below `max_active` attempts in flight (0: no limit).
  bool has_slot(std::size_t max_active) const noexcept {
    return ready() && (max_active == 0 || active_.load() < max_active);
  }
  /// Connected, and with health checking its watch says it takes calls
  /// (SERVING, or no health service there): new attempts may go.
  bool ready() const noexcept {
    return ready_.load(std::memory_order_acquire) && (!health_ || takes_calls(health_->state()));
  }
  /// Idle after a failed connect attempt, waiting out its backoff; or
  /// connected and unhealthy (its watch said not SERVING, or failed): either
  /// way not worth waiting for (calls that do not wait for ready fail).
  bool in_backoff() const noexcept {
    return (state_mirror_.load(std::memory_order_acquire) == State::idle && failing_.load(std::memory_order_acquire)) ||
           health() == HealthState::not_serving;
  }
  /// A connect or handshake is under way, or its health watch's first answer.
  bool connecting() const noexcept {
    const auto s = state_mirror_.load(std::memory_order_relaxed);
    const auto h = health();
    return s == State::connecting || s == State::handshaking || draining_.load(std::memory_order_relaxed) ||
           (s == State::ready && health_ && (h == HealthState::checking || h == HealthState::off));
  }
  /// What its health watch says of its connection (off: not watched). Lock-free.
  HealthState health() const noexcept { return health_ ? health_->state() : HealthState::off; }
  std::uint64_t heartbeats_sent() const noexcept;
  std::uint64_t idle_closes() const noexcept;

  // ---- connecting (any thread but the timer's worker)
  /// Keeps it connected from now on; starts a connect attempt if one is due at `t`.
  void want(TimePoint t);
  /// Starts a connect attempt if it is wanted, down, and its backoff allows one at `t`.
  void maybe_reconnect(TimePoint t);
  /// Its provider source reported it again (a new registration, or back
  /// after it left): the reconnect backoff starts over, and a provider in
  /// backoff is connected at once.
  void reset_backoff(TimePoint t);

  // ---- attempts (with the attempt's call lock held; never the timer's worker)
  /// Where an attempt went: its request id, the transport (held for the
  /// send unless the send runs inside that transport's own delivery), and
  /// whether its table entry carries the call's deadline for the sweep.
  struct Placed {
    std::uint64_t id = 0;
    ClientTransport* transport = nullptr;
    std::shared_ptr<ClientTransport> held;
    bool swept = false;
  };
  /// Enters an attempt of `call` in the table if it is ready with a slot free
  /// under `max_active` (false: nothing changed). The entry takes `spare`
  /// (a reference to the call nobody needs any more) if there is one. With
  /// `sweep`, the entry carries `deadline` and the sweep is armed for it.
  bool place(Call& call, CallPtr& spare, bool sweep, TimePoint deadline, TimePoint t, std::size_t max_active,
             Placed& out);
  using SendResult = ClientTransport::SendResult;
  /// Encodes and writes the request of `call`'s placed attempt (its payload
  /// and attachments are lent and given back). `wire`: the budget the server
  /// is given (0: none). On too_big, `body` and `limit` say by how much
  /// (the limit is the lower of ours and the server's, from its HELLO).
  SendResult send(const Placed& placed, Call& call, std::chrono::milliseconds wire, std::size_t& body,
                  std::uint32_t& limit);
  /// Takes the attempt `id` out of the table (null if it is gone: answered,
  /// swept or lost) and frees its slot.
  CallPtr take(std::uint64_t id);
  /// take(reply.id), counting the reply's payload in its call's method
  /// metrics (as send counts the request's).
  CallPtr take(const IncomingReply& reply);
  /// Its transport now (null: not connected): where an attempt abandoned in
  /// flight is told to the server, once the call's lock is released
  /// (Completion::abandoned).
  std::shared_ptr<ClientTransport> transport() const;
  /// An attempt on it failed. `provider_fault`: the failure says something
  /// of the provider (lost, timed out, not sent, or a reply the provider
  /// failed: OutlierStats::provider_failure), which outlier detection counts.
  void count_failure(bool provider_fault = true) noexcept;
  /// A reply with `status` came `latency` after its attempt was sent, maybe
  /// with a load report among its attachments: for outlier detection and
  /// load-aware balancing (ClientContext::review is set). Its strand.
  void note_reply(Status status, std::chrono::nanoseconds latency, const transport::Attachments& attachments,
                  TimePoint received);
  /// Its outlier detection and load-balancing record (ProviderReview).
  OutlierStats& outlier() noexcept { return outlier_; }
  const OutlierStats& outlier() const noexcept { return outlier_; }
  /// As ProviderReview knows it.
  Reviewed reviewed() { return {{shared_from_this(), &outlier_}, peer_}; }
  void count_cancelled() noexcept { cancelled_.fetch_add(1, std::memory_order_relaxed); }
  /// A reply that answered an attempt (its strand only).
  void count_ok() noexcept { oks_.add(); }

  // ---- the provider set (the pool's lock held)
  /// It left the set: no new attempts, no reconnects. True if it drains (its
  /// channel closes once its attempts are done, `close_now` if there are
  /// none, or after ClientOptions::removal_grace); false if it had nothing
  /// to drain (its tasks are stopped: forget it).
  bool retire(std::shared_ptr<ClientTransport>& close_now);
  /// A retired subchannel is back before its channel closed.
  void revive();
  /// Stops its timer tasks for good (it left and is forgotten).
  void stop_tasks();

  // ---- snapshots and close
  /// Why its last connect failed; else why its health watch says it is not
  /// serving; "" when neither.
  std::string last_error() const;
  ProviderStats stats() const;
  /// Adds what ProviderReview says of it (ejection, load factor) to `out`.
  void fill_review(ProviderStats& out) const;
  ConnectionInfo info(TimePoint t) const;
  /// When its socket last wrote, if it has a channel (for a timeline).
  std::optional<transport::Channel::Clock::time_point> last_write() const;
  /// The client closed: nothing new goes in; hands over the calls in its
  /// table and its transport (to be closed by the caller) and stops its tasks.
  void shut(std::vector<CallPtr>& calls, std::vector<std::shared_ptr<ClientTransport>>& transports);

  // ---- transport events (the connection's strand)
  void on_handshake(std::optional<std::chrono::milliseconds> heartbeat, std::uint32_t max_body) override;
  void on_too_many_pings() override;
  void on_goaway() override;
  void on_transport_reply(IncomingReply& reply, TimePoint received) override;
  void on_transport_closed(const boost::system::error_code& ec, const std::string& reason) override;
  void on_batch_end() override;

 private:
  void set_state(State s) noexcept WHEELRPC_REQUIRES(mu_);
  void attempt_connect_locked(TimePoint t) WHEELRPC_REQUIRES(mu_);
  void on_connected(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
  /// Arms the sweep to run by `deadline` (`t`: now), unless it will
  /// already. False if the timer refused it.
  bool arm_sweep_locked(TimePoint deadline, TimePoint t) WHEELRPC_REQUIRES(mu_);
  /// The sweep timeout due at `due` ran (the timer's worker): posts sweep(). O(1).
  void on_sweep_due(TimePoint due);
  /// Takes the calls past their deadline out of the table, arms the sweep
  /// for the next one, and hands them to the listener (the executor).
  void sweep(TimePoint reached, TimePoint fired, SubchannelListener& listener);
  /// After an attempt ended (`active` dropped from `before`): a freed slot,
  /// or a drained retired subchannel.
  void attempt_ended(std::uint64_t before);
  /// The last attempt on a retired subchannel ended: close its channel.
  void close_drained();
  /// The channel the timer tasks watch, with its intervals (the timer's
  /// worker: atomics, and the channel pointer copied under its leaf lock).
  bool watched(std::vector<WatchedChannel>& out);
  /// The listener, held while the transport delivers one read's events (its
  /// strand only): one reference per batch instead of one per reply.
  SubchannelListener* batch_listener();
  /// Its health watch says `h` now (the executor or its strand): calls
  /// waiting for a provider may go, or fail fast.
  void on_health(HealthState h);

  const std::shared_ptr<ClientContext> ctx_;
  const std::weak_ptr<SubchannelListener> listener_;
  std::shared_ptr<SubchannelListener> batch_listener_;
  const boost::asio::ip::tcp::endpoint endpoint_;
  const std::string peer_;

  // ---- lock-free mirrors (written with mu_ held, or atomically)
  std::atomic<bool> ready_{false};
  std::atomic<State> state_mirror_{State::idle};
  std::atomic<bool> wanted_{false};   // keep it connected (set on first use; cleared when it leaves the set)
  std::atomic<bool> retired_{false};  // it left the provider set (see retire())
  /// Its connection takes no new calls (a GOAWAY) and is ready_ no more
  /// until the next one is: calls wait for that one (connecting()).
  std::atomic<bool> draining_{false};
  /// Its last connect attempt failed (cleared once ready): while idle too,
  /// it is in backoff, and calls that do not wait for ready do not wait for it.
  std::atomic<bool> failing_{false};
  common::SingleWriterCounter<std::uint64_t> active_;            // attempts in flight (written under mu_)
  common::SingleWriterCounter<std::uint64_t> attempts_;          // attempts sent (written under mu_)
  common::SingleWriterCounter<std::uint64_t> oks_;               // answered with a reply (its strand)
  common::SingleWriterCounter<std::uint64_t> connect_attempts_;  // written under mu_
  std::atomic<std::uint64_t> failures_{0};                       // attempts that failed
  std::atomic<std::uint64_t> cancelled_{0};                      // attempts abandoned in flight
  std::atomic<std::int64_t> heartbeat_ms_{0};                    // agreed in the HELLO exchange
  std::atomic<std::int64_t> user_timeout_ms_{0};                 // the TCP_USER_TIMEOUT it set on its socket
  std::atomic<int> ping_backoff_{0};  // gRPC: how often a server answered too_many_pings (each doubles the interval)
  std::atomic<std::int64_t> idle_timeout_ms_{0};  // the reconnect task's limit (handshake: connect_timeout)
  SharedPtrCell<transport::Channel> watched_channel_;
  OutlierStats outlier_;  // ProviderReview's record of it

  // ---- guarded by mu_
  mutable common::SpinLock mu_;
  State state_ WHEELRPC_GUARDED_BY(mu_) = State::idle;
  bool closed_ WHEELRPC_GUARDED_BY(mu_) = false;  // the client closed: nothing new goes in
  std::shared_ptr<ClientTransport> transport_ WHEELRPC_GUARDED_BY(mu_);
  Backoff backoff_ WHEELRPC_GUARDED_BY(mu_);              // delays between connect attempts
  TimePoint next_attempt_ WHEELRPC_GUARDED_BY(mu_){};     // no connect attempt before this
  std::string last_error_ WHEELRPC_GUARDED_BY(mu_);       // of the last failed connect, "" once connected
  PendingTable<CallPtr> table_ WHEELRPC_GUARDED_BY(mu_);  // attempts sent on it
  // The one timeout that sweeps table_ for calls past their deadline: armed
  // for the earliest deadline in it, or earlier.
  timer::Timeout sweep_timeout_ WHEELRPC_GUARDED_BY(mu_);
  TimePoint sweep_at_ WHEELRPC_GUARDED_BY(mu_) = kNever;  // when it runs (kNever: not armed)
  // Set once by start_tasks(), before anyone else sees the subchannel.
  std::shared_ptr<HeartbeatTimerTask> heartbeat_task_;
  std::shared_ptr<ReconnectTimerTask> reconnect_task_;
  std::shared_ptr<HealthWatch> health_;                                  // null without ClientOptions::health_check
  std::shared_ptr<CloseTimerTask> close_task_ WHEELRPC_GUARDED_BY(mu_);  // while retired
};

}  // namespace wheelrpc::rpc::detail
