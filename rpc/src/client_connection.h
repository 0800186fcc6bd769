#pragma once
// The client's connection to one provider: its channel, the HELLO exchange,
// the reconnect backoff, its own pending table and its timer tasks.
//
// Threads: channel events (on_frame, on_close) run on the channel's strand.
// Everything under `mu` may be read and written from any thread with `mu`
// held; `mu` is per provider, so providers never contend with each other,
// and it is taken after a call's lock, never before one. The atomics mirror
// what load balancing and the timer tasks read without a lock.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/rpc/backoff.h>
#include "channel_timer_task.h"
#include <wheelrpc/transport/channel.h>

#include "call.h"
#include <wheelrpc/common/spin_lock.h>
#include "load_balancer.h"
#include "pending_table.h"

namespace wheelrpc::rpc::detail {

class ClientCore;

/// A shared_ptr any thread may read and replace, behind a leaf spin lock held
/// only to copy or swap the pointer (no I/O, no other lock, never across a
/// call). libstdc++ 12's std::atomic<std::shared_ptr> is such a lock too, but
/// one ThreadSanitizer cannot see through.
template <class T>
class SharedPtrCell {
 public:
  std::shared_ptr<T> load() const {
    std::lock_guard lock(mu_);
    return ptr_;
  }
  void store(std::shared_ptr<T> p) {
    {
      std::lock_guard lock(mu_);
      ptr_.swap(p);
      version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    // The old pointer is released here, outside the lock.
  }
  /// Counts the stores: a load() after reading a version (acquire) returns
  /// the pointer stored with it or a later one.
  std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }

 private:
  mutable common::SpinLock mu_;
  std::shared_ptr<T> ptr_;
  std::atomic<std::uint64_t> version_{0};  // written under mu_
};

class ClientConnection final : public transport::ChannelHandler,
                               public std::enable_shared_from_this<ClientConnection> {
 public:
  enum class State : std::uint8_t { idle, connecting, handshaking, ready };

  ClientConnection(std::weak_ptr<ClientCore> core, boost::asio::ip::tcp::endpoint endpoint, std::string peer,
                   const BackoffOptions& backoff_options, std::uint64_t seed);

  // Channel events (the channel's strand).
  void on_frame(transport::Channel& channel, transport::Frame& frame) override;
  void on_close(transport::Channel& channel, const boost::system::error_code& ec,
                const std::string& reason) override;
  void on_frames_delivered(transport::Channel& channel) override;

  const boost::asio::ip::tcp::endpoint& endpoint() const noexcept { return endpoint_; }
  const std::string& peer() const noexcept { return peer_; }

  /// What load balancing sees (lock-free): a provider with `max_active`
  /// attempts in flight (0: no limit) is not eligible, as if not ready.
  ProviderSnapshot snapshot(std::size_t max_active) const noexcept {
    const auto n = active.load(std::memory_order_relaxed);
    return {ready.load(std::memory_order_acquire) && (max_active == 0 || n < max_active), n,
            failures.load(std::memory_order_relaxed)};
  }
  /// Ready and below `max_active` attempts in flight (0: no limit).
  bool has_slot(std::size_t max_active) const noexcept {
    return ready.load(std::memory_order_acquire) &&
           (max_active == 0 || active.load(std::memory_order_relaxed) < max_active);
  }
  /// Idle after a failed connect attempt, waiting out its backoff (lock-free).
  bool in_backoff() const noexcept {
    return state_mirror.load(std::memory_order_acquire) == State::idle && failing.load(std::memory_order_acquire);
  }
  /// The channel the timer tasks watch, with its intervals (O(1): atomics, and
  /// the channel pointer copied under its leaf lock).
  bool watched(std::vector<WatchedChannel>& out);

  // ---- lock-free mirrors (written with `mu` held)
  std::atomic<bool> ready{false};
  std::atomic<State> state_mirror{State::idle};
  std::atomic<bool> wanted{false};  // keep it connected (set on first use; cleared when it leaves the set)
  /// It left the client's provider set: no new attempts, no reconnects; its
  /// channel closes once its attempts are done, or after the grace period
  /// (its CloseTimerTask).
  std::atomic<bool> retired{false};
  /// Its last connect attempt failed (cleared once ready): while `idle` too,
  /// it is in backoff, and calls that do not wait for ready do not wait for it.
  std::atomic<bool> failing{false};
  // Attempts in flight on it: only ever written under `mu` (with the table
  // entry that each attempt has there), so a plain add; read anywhere.
  std::atomic<std::uint64_t> active{0};
  std::atomic<std::uint64_t> attempts{0};  // attempts sent to it
  std::atomic<std::uint64_t> failures{0};  // of which failed
  std::atomic<std::uint64_t> oks{0};       // of which answered with a reply
  std::atomic<std::uint64_t> cancelled{0};  // of which abandoned in flight
  std::atomic<std::uint64_t> connect_attempts{0};
  std::atomic<std::int64_t> heartbeat_ms{0};   // agreed in the HELLO exchange
  std::atomic<std::uint32_t> peer_max_body{transport::kDefaultMaxBody};  // the server's, from its HELLO
  std::atomic<std::int64_t> idle_timeout_ms{0};  // the reconnect task's limit (handshake: connect_timeout)
  SharedPtrCell<transport::Channel> watched_channel;

  // ---- guarded by `mu`
  common::SpinLock mu;
  State state = State::idle;
  bool closed = false;  // the client closed: nothing new goes in
  std::shared_ptr<transport::Channel> channel;
  Backoff backoff;                // delays between connect attempts
  TimePoint next_attempt{};       // no connect attempt before this
  std::string last_error;         // of the last failed connect, "" once connected
  PendingTable<CallPtr> table;    // attempts sent on this connection
  // The one timeout that sweeps `table` for calls past their deadline
  // (ClientCore::sweep): armed for the earliest deadline in it, or earlier.
  timer::Timeout sweep_timeout;
  TimePoint sweep_at = kNever;    // when it runs (kNever: not armed)
  std::shared_ptr<HeartbeatTimerTask> heartbeat_task;
  std::shared_ptr<ReconnectTimerTask> reconnect_task;
  std::shared_ptr<CloseTimerTask> close_task;  // while retired

  /// Sets `state` and its mirrors (`mu` held).
  void set_state(State s) noexcept;
  /// The sweep timeout due at `due` ran (the timer's worker): posts the
  /// sweep to the client's executor. O(1).
  void on_sweep_due(TimePoint due);

 private:
  std::weak_ptr<ClientCore> core_;  // the core owns the connection
  // The core, held while the channel delivers one read's frames (its
  // strand only): one reference per batch instead of one per reply.
  std::shared_ptr<ClientCore> batch_core_;
  ClientCore* batch_core();
  const boost::asio::ip::tcp::endpoint endpoint_;
  const std::string peer_;
};

}  // namespace wheelrpc::rpc::detail
