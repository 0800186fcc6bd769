#pragma once
/// Channel timer tasks (Dubbo's AbstractTimerTask and its subclasses): periodic
/// checks of a set of channels on the shared HashedWheelTimer.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/backoff.h>
#include <wheelrpc/timer/timer.h>
#include <wheelrpc/transport/channel.h>

namespace wheelrpc::rpc {

/// A channel a task watches, with the intervals agreed for it.
struct WatchedChannel {
  /// The connection; null while a client connection is down.
  std::shared_ptr<transport::Channel> channel;
  /// Heartbeat interval agreed in the HELLO exchange.
  std::chrono::milliseconds heartbeat{0};
  /// How long the channel may stay idle before it is closed: CloseTimerTask
  /// (no read or no write for that long) and ReconnectTimerTask (no read).
  std::chrono::milliseconds idle_timeout{0};
  /// ReconnectTimerTask: starts a reconnect attempt if one is due under the
  /// connection's backoff. Called where the task's check runs (possibly the
  /// timer's worker): it must only decide and post. Empty elsewhere.
  std::function<void(std::chrono::steady_clock::time_point now)> reconnect;
  /// CloseTimerTask: closes the channel at this time (steady clock) whatever
  /// its traffic: a drain's end (a provider that left the set gets
  /// `removal_grace`, heartbeats and all). max() = no such deadline.
  std::chrono::steady_clock::time_point close_at = std::chrono::steady_clock::time_point::max();
};

/// Appends the channels to check to `out` (empty; a vector of the running
/// thread's that keeps its capacity, so a run allocates nothing once it has
/// grown),
/// each time the task runs; returns false once their owner is gone (the task
/// then stops for good). Called where the check runs: on the task's executor
/// if it has one, else on the timer's worker, where it must be O(1) and take
/// no lock the I/O path holds for longer than a pointer copy.
using ChannelProvider = std::function<bool(std::vector<WatchedChannel>& out)>;

/// Runs `do_task` on every channel the provider returns, every `tick`, on the
/// shared timer, and reschedules itself after each run. Stops for good when
/// cancelled, when the provider reports its owner gone, or when the timer
/// stops. An exception from the work is logged (logger "wheelrpc.rpc") and the
/// task is still rescheduled.
///
/// A task that watches a single channel and checks it on the timer's worker
/// (no executor: a client's per-connection tasks) sleeps until that channel
/// next needs it (`next_check`: its heartbeat due, its idle timeout), at most
/// `tick` unless `sleeps_past_tick()`; so an idle connection costs about one
/// run per heartbeat, not one per tick, and nothing is checked later than its
/// due time. A task over many channels runs every tick.
///
/// Where the check runs: with an `executor`, the timer's worker only posts it
/// there (a provider that walks many channels or takes its owner's lock runs
/// there, never on the wheel). Without one it runs on the worker, and the
/// provider must then be O(1) and take at most a leaf lock held for a pointer
/// copy. Either way the checks of the
/// built-in tasks only read atomics and decide; what touches a channel (a
/// heartbeat's send, a close, a reconnect) is posted to the channel's strand
/// or its owner's executor.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: `start`, `cancel` and the getters
/// are safe from any thread.
class AbstractTimerTask : public timer::TimerTask, public std::enable_shared_from_this<AbstractTimerTask> {
 public:
  /// `tick`: between runs (at least 1 ms). `executor`: where checks run (see
  /// above); empty = on the timer's worker.
  AbstractTimerTask(ChannelProvider provider, std::chrono::milliseconds tick,
                    boost::asio::any_io_executor executor = {});

  /// Schedules the first run one tick from now. Thread-safe.
  void start(timer::Timer& timer);
  /// Lets a task watching a single channel from the timer's worker run up to
  /// `grid` later than its channel is due, at the next multiple of `grid` on
  /// the steady clock (never earlier than due): many such tasks (a process's
  /// connections, each with its own tasks) then come due in the same few
  /// ticks, so the worker wakes once per grid step and their work is handed
  /// on together (one job per executor and tick, see HeartbeatTimerTask),
  /// instead of a wake-up for every connection. 0 (the default): run when
  /// due. Call before start(); not thread-safe.
  void set_coalescing(std::chrono::nanoseconds grid) noexcept {
    coalesce_ = grid.count() > 0 ? grid : std::chrono::nanoseconds(0);
  }
  std::chrono::nanoseconds coalescing() const noexcept { return coalesce_; }
  /// `t` rounded up to a multiple of `grid` (since the steady clock's epoch);
  /// `t` itself for a grid of zero.
  static std::chrono::steady_clock::time_point coalesced(std::chrono::steady_clock::time_point t,
                                                         std::chrono::nanoseconds grid) noexcept;
  /// Runs the next check within `delay` (on the timer's clock) instead of at
  /// the next tick, if that is sooner: for an owner that knows a channel needs
  /// one (a reconnect whose backoff ends then). Later runs keep the tick. A
  /// run in progress or posted reschedules itself within `delay` instead.
  /// O(1); thread-safe; a no-op before start() and after cancel(). Must not
  /// be called with a lock the provider takes.
  void check_within(std::chrono::nanoseconds delay);
  /// Stops the task for good. A check in progress on another thread is waited
  /// for, so once cancel() returns the task touches no channel any more and
  /// posts nothing (and the executor behind them may be destroyed); a check
  /// already posted and not started does nothing when it runs. Thread-safe;
  /// must not be called with a lock the provider takes.
  void cancel() noexcept;
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  std::chrono::milliseconds tick() const noexcept { return tick_; }
  /// Runs so far (for tests and stats).
  std::uint64_t runs() const noexcept { return runs_.load(std::memory_order_relaxed); }

  void run(timer::Timeout& timeout) final;
  /// For a batch that hands on what this task decided (HeartbeatTimerTask's
  /// sends, after the check has returned): counts as a check in progress,
  /// so cancel() waits for it; false if cancelled (hand on nothing). Either
  /// way end_handing_on() follows. Any thread; the task must be alive.
  bool begin_handing_on() noexcept;
  void end_handing_on() noexcept;

 protected:
  /// The check for one channel: decides, and posts what touches the channel.
  virtual void do_task(const WatchedChannel& watched, std::chrono::steady_clock::time_point now) = 0;
  /// After `do_task(watched, now)`: when the channel next needs a check
  /// (steady clock); time_point::max() (the default) = no sooner than the
  /// tick. Used by a task watching a single channel (see above); must be
  /// O(1) and read only atomics.
  virtual std::chrono::steady_clock::time_point next_check(const WatchedChannel& watched,
                                                           std::chrono::steady_clock::time_point now) const;
  /// Whether a single-channel task on the worker may sleep past the tick until
  /// `next_check` (default false: at most one tick). Only for a task whose due
  /// time moves no earlier by itself; an owner that brings it forward calls
  /// check_within().
  virtual bool sleeps_past_tick() const noexcept { return false; }
  /// A name for logs.
  virtual const char* name() const noexcept = 0;
  /// The time a check runs at (steady clock): timer::fast_steady_now(); a
  /// test on a manual clock returns that clock's time.
  virtual std::chrono::steady_clock::time_point clock_now() const noexcept;

 private:
  void reschedule(timer::Timer& timer, std::chrono::nanoseconds delay);
  /// Schedules the next run after `delay` (mu_ held).
  void schedule_locked(timer::Timer& timer, std::chrono::nanoseconds delay) WHEELRPC_REQUIRES(mu_);
  /// Runs the check; returns when the next one is due (at most the tick).
  std::chrono::nanoseconds check();

  ChannelProvider provider_;
  const std::chrono::milliseconds tick_;
  boost::asio::any_io_executor executor_;
  std::chrono::nanoseconds coalesce_{0};  // set_coalescing(); fixed once started
  std::atomic<bool> cancelled_{false};
  std::atomic<int> running_{0};            // runs in progress, and batches handing on its work
  std::atomic<std::thread::id> runner_{};  // the thread of the run in progress
  std::atomic<std::uint64_t> runs_{0};
  common::Mutex mu_;
  // Guarded by mu_:
  timer::Timer* timer_ WHEELRPC_GUARDED_BY(mu_) = nullptr;                  // set by start()
  timer::Timeout next_ WHEELRPC_GUARDED_BY(mu_);                            // the next run
  std::chrono::steady_clock::time_point next_at_ WHEELRPC_GUARDED_BY(mu_);  // when it is due (steady clock)
  // check_within() while the timeout was not pending
  std::optional<std::chrono::nanoseconds> sooner_ WHEELRPC_GUARDED_BY(mu_);
};

/// Sends a heartbeat (a two-way event request with an empty body) on every
/// channel idle in reads or in writes for one heartbeat interval; a busy
/// channel sends none. Dubbo's HEARTBEAT_CHECK_TICK: run every interval / 3.
/// The sends of one batch (a tick's expirations on the timer's worker, every
/// task's included, or one check on an executor) are handed on together: one
/// job posted per executor, which enters each channel's strand in turn
/// (asio::dispatch: at once when the strand is free) and sends there. Outside
/// a batch each send is posted to its channel's strand. `heartbeats_sent`
/// counts the ones queued.
class HeartbeatTimerTask final : public AbstractTimerTask {
 public:
  HeartbeatTimerTask(ChannelProvider provider, std::chrono::milliseconds tick,
                     boost::asio::any_io_executor executor = {})
      : AbstractTimerTask(std::move(provider), tick, std::move(executor)) {}
  std::uint64_t heartbeats_sent() const noexcept { return sent_.load(std::memory_order_relaxed); }

 private:
  void do_task(const WatchedChannel& w, std::chrono::steady_clock::time_point now) override;
  std::chrono::steady_clock::time_point next_check(const WatchedChannel& w,
                                                   std::chrono::steady_clock::time_point now) const override;
  const char* name() const noexcept override { return "HeartbeatTimerTask"; }
  std::atomic<std::uint64_t> sent_{0};
};

/// Closes every channel that has read nothing or written nothing for longer
/// than its idle timeout (a server's idle connections), or whose `close_at`
/// has come (a client's draining connection to a provider that left).
class CloseTimerTask final : public AbstractTimerTask {
 public:
  CloseTimerTask(ChannelProvider provider, std::chrono::milliseconds tick, boost::asio::any_io_executor executor = {})
      : AbstractTimerTask(std::move(provider), tick, std::move(executor)) {}
  std::uint64_t closed() const noexcept { return closed_.load(std::memory_order_relaxed); }

 private:
  void do_task(const WatchedChannel& w, std::chrono::steady_clock::time_point now) override;
  std::chrono::steady_clock::time_point next_check(const WatchedChannel& w,
                                                   std::chrono::steady_clock::time_point now) const override;
  const char* name() const noexcept override { return "CloseTimerTask"; }
  std::atomic<std::uint64_t> closed_{0};
};

/// For a client: reconnects every connection that is down (when its backoff
/// says an attempt is due) and closes, to reconnect, every connection that has
/// read nothing for its idle timeout (a half-open peer: heartbeats go out,
/// nothing comes back).
///
/// Watching one open channel from the timer's worker, it sleeps until that
/// channel's idle deadline (last read + idle timeout), past the tick: on a
/// healthy connection it runs about once per idle timeout less one heartbeat,
/// not once per heartbeat. A down channel is checked every tick. An owner that
/// shortens a channel's idle timeout (a client's HELLO: from the connect
/// timeout to the agreed one) or brings a reconnect forward calls
/// check_within() with the new limit.
class ReconnectTimerTask final : public AbstractTimerTask {
 public:
  ReconnectTimerTask(ChannelProvider provider, std::chrono::milliseconds tick,
                     boost::asio::any_io_executor executor = {})
      : AbstractTimerTask(std::move(provider), tick, std::move(executor)) {}
  std::uint64_t idle_closes() const noexcept { return idle_closes_.load(std::memory_order_relaxed); }

 private:
  void do_task(const WatchedChannel& w, std::chrono::steady_clock::time_point now) override;
  std::chrono::steady_clock::time_point next_check(const WatchedChannel& w,
                                                   std::chrono::steady_clock::time_point now) const override;
  bool sleeps_past_tick() const noexcept override { return true; }
  const char* name() const noexcept override { return "ReconnectTimerTask"; }
  std::atomic<std::uint64_t> idle_closes_{0};
};

}  // namespace wheelrpc::rpc
