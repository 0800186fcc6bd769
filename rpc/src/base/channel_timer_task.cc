#include "base/channel_timer_task.h"

#include <algorithm>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/timer/expiry_batch.h>
#include <wheelrpc/transport/errc.h>

#include "base/log.h"

namespace wheelrpc::rpc {

namespace {

// The heartbeats one batch decided on (a tick's expirations on the timer's
// worker, or one check on an executor): flushed as one job per executor,
// which enters each channel's strand in turn. One per thread.
class HeartbeatSends final : public timer::ExpiryBatch {
 public:
  // False outside a batch: the caller posts this one itself. `task` outlives
  // the batch (the timeout or the posted check that runs it holds it).
  bool add(const std::shared_ptr<transport::Channel>& channel, AbstractTimerTask& task) {
    if (!defer()) return false;
    sends_.push_back({&task, channel});
    return true;
  }

 private:
  struct Send {
    AbstractTimerTask* task;
    std::shared_ptr<transport::Channel> channel;
  };
  struct Group {
    boost::asio::any_io_executor ex;
    std::vector<std::shared_ptr<transport::Channel>> channels;
  };

  void flush() noexcept override {
    // Each task counts as running while its sends are posted, so a cancel()
    // that returned has nothing of its posted afterwards (the executor
    // behind them may be gone then); a cancelled task's sends are dropped.
    for (auto& s : sends_) {
      if (!s.task->begin_handing_on()) {
        s.channel.reset();
        continue;
      }
      const auto& ex = s.channel->strand().get_inner_executor();
      Group* g = nullptr;
      for (auto& x : groups_) {  // a process has few executors
        if (x.ex == ex) {
          g = &x;
          break;
        }
      }
      if (!g) g = &groups_.emplace_back(Group{ex, {}});
      g->channels.push_back(std::move(s.channel));
    }
    for (auto& g : groups_) {
      const auto n = g.channels.size();
      try {
        boost::asio::post(g.ex, [channels = std::move(g.channels)]() mutable {
          for (auto& ch : channels) {
            const auto& strand = ch->strand();
            boost::asio::dispatch(strand, [c = std::move(ch)] { c->send_heartbeat(); });
          }
        });
      } catch (const std::exception& e) {
        detail::logger()->error("HeartbeatTimerTask could not post {} heartbeats: {}", n, e.what());
      }
    }
    for (auto& s : sends_) s.task->end_handing_on();
    sends_.clear();
    // No executor is kept past the batch: its context may go away meanwhile.
    groups_.clear();
  }

  std::vector<Send> sends_;
  std::vector<Group> groups_;
};

thread_local HeartbeatSends t_heartbeat_sends;

}  // namespace

AbstractTimerTask::AbstractTimerTask(ChannelProvider provider, std::chrono::milliseconds tick,
                                     boost::asio::any_io_executor executor)
    : provider_(std::move(provider)),
      tick_(std::max(tick, std::chrono::milliseconds(1))),
      executor_(std::move(executor)) {}

void AbstractTimerTask::start(timer::Timer& timer) {
  {
    common::LockGuard lock(mu_);
    timer_ = &timer;
  }
  reschedule(timer, tick_);
}

void AbstractTimerTask::reschedule(timer::Timer& timer, std::chrono::nanoseconds delay) {
  common::LockGuard lock(mu_);
  if (cancelled()) return;
  if (sooner_) delay = std::min(delay, *std::exchange(sooner_, std::nullopt));
  schedule_locked(timer, delay);
}

std::chrono::steady_clock::time_point AbstractTimerTask::clock_now() const noexcept { return timer::fast_steady_now(); }

std::chrono::steady_clock::time_point AbstractTimerTask::coalesced(std::chrono::steady_clock::time_point t,
                                                                   std::chrono::nanoseconds grid) noexcept {
  if (grid.count() <= 0) return t;
  const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const auto g = grid.count();
  auto up = since / g * g;
  if (up < since) up += g;  // rounded up: never before `t`
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(up)));
}

void AbstractTimerTask::schedule_locked(timer::Timer& timer, std::chrono::nanoseconds delay) {
  std::error_code ec;
  next_ = timer.new_timeout(std::static_pointer_cast<timer::TimerTask>(shared_from_this()), delay, ec);
  next_at_ = clock_now() + delay;
  if (ec) {  // the timer stopped: so do we
    cancelled_.store(true, std::memory_order_release);
    detail::logger()->debug("{} stops: {}", name(), ec.message());
  }
}

void AbstractTimerTask::check_within(std::chrono::nanoseconds delay) {
  delay = std::max(delay, std::chrono::nanoseconds(0));
  common::LockGuard lock(mu_);
  if (cancelled() || !timer_) return;
  if (next_.state() != timer::TimeoutState::pending) {
    // Running, or posted to the executor: its reschedule() takes this.
    sooner_ = sooner_ ? std::min(*sooner_, delay) : delay;
    return;
  }
  if (clock_now() + delay >= next_at_) return;  // due soon enough
  if (!next_.cancel()) {                        // expired meanwhile: as above
    sooner_ = sooner_ ? std::min(*sooner_, delay) : delay;
    return;
  }
  schedule_locked(*timer_, delay);
}

void AbstractTimerTask::cancel() noexcept {
  {
    common::LockGuard lock(mu_);
    cancelled_.store(true);  // sequentially consistent: pairs with run()'s entry
    next_.cancel();
  }
  if (runner_.load() == std::this_thread::get_id()) return;  // from inside run()
  while (running_.load() != 0) std::this_thread::yield();
}

bool AbstractTimerTask::begin_handing_on() noexcept {
  running_.fetch_add(1);  // sequentially consistent: pairs with cancel()'s store
  return !cancelled_.load();
}

void AbstractTimerTask::end_handing_on() noexcept { running_.fetch_sub(1); }

namespace {
// Counts a check (or the worker's part of a run) in progress, so cancel() can
// wait for it; sequentially consistent, paired with cancel()'s store.
struct Running {
  Running(std::atomic<int>& running, std::atomic<std::thread::id>& runner) : running_(running), runner_(runner) {
    running_.fetch_add(1);
    runner_.store(std::this_thread::get_id());
  }
  ~Running() {
    runner_.store(std::thread::id{});
    running_.fetch_sub(1);
  }
  std::atomic<int>& running_;
  std::atomic<std::thread::id>& runner_;
};
}  // namespace

void AbstractTimerTask::run(timer::Timeout& timeout) {
  std::chrono::nanoseconds delay = tick_;
  {
    Running in(running_, runner_);
    if (cancelled_.load()) return;
    runs_.fetch_add(1, std::memory_order_relaxed);
    if (executor_) {
      // The wheel only decides that a check is due; the check runs on the
      // owner's executor.
      boost::asio::post(executor_, [self = shared_from_this()] { self->check(); });
    } else {
      delay = check();
    }
  }
  if (!cancelled_.load(std::memory_order_acquire)) reschedule(*timeout.timer(), delay);
}

std::chrono::steady_clock::time_point AbstractTimerTask::next_check(const WatchedChannel&,
                                                                    std::chrono::steady_clock::time_point) const {
  return std::chrono::steady_clock::time_point::max();
}

std::chrono::nanoseconds AbstractTimerTask::check() {
  Running in(running_, runner_);
  std::chrono::nanoseconds delay = tick_;
  if (cancelled_.load()) return delay;
  // The provider's answer goes into a vector of this thread's, kept for its
  // capacity: a run allocates nothing once it has grown. Per thread, not per
  // task: a task with an executor may have two checks running at once on a
  // pool. Emptied after the run, whichever way it ends: a task keeps no
  // channel alive, and checks never nest on a thread.
  thread_local std::vector<WatchedChannel> scratch;
  struct Emptied {
    std::vector<WatchedChannel>& v;
    ~Emptied() { v.clear(); }
  } emptied{scratch};
  // What the checks hand on (the heartbeats to send) goes out together at
  // the end of the batch: this check's, or the tick's on the timer's worker.
  timer::ExpiryBatchScope batch;
  try {
    scratch.clear();
    if (!provider_(scratch)) {  // the owner is gone
      cancelled_.store(true, std::memory_order_release);
      return delay;
    }
    const auto* channels = &scratch;
    const auto now = clock_now();
    for (const auto& w : *channels) {
      try {
        do_task(w, now);
      } catch (const std::exception& e) {
        detail::logger()->error("{} failed on conn={}: {}", name(), w.channel ? w.channel->id() : 0, e.what());
      }
    }
    if (channels->size() == 1) {
      // One channel: sleep until it needs a check, if that is before the
      // tick (or whenever it is, for a task that may sleep past the tick).
      const auto due = next_check(channels->front(), now);
      if (due != std::chrono::steady_clock::time_point::max() && (due - now < delay || sleeps_past_tick())) {
        delay = std::max<std::chrono::nanoseconds>(due - now, std::chrono::milliseconds(1));
      }
      // Coalesced: the run moves to the grid's next step, where the other
      // connections' tasks due meanwhile run too.
      if (coalesce_.count() > 0) delay = coalesced(now + delay, coalesce_) - now;
    }
  } catch (const std::exception& e) {
    detail::logger()->error("{} failed: {}", name(), e.what());
  }
  return delay;
}

void HeartbeatTimerTask::do_task(const WatchedChannel& w, std::chrono::steady_clock::time_point now) {
  if (!w.channel || !w.channel->is_open() || w.heartbeat.count() <= 0) return;
  if (now - w.channel->last_read() < w.heartbeat && now - w.channel->last_write() < w.heartbeat) return;
  // Encoding and queueing take the channel's write lock: done on its strand,
  // in the connection's protocol (its handler's send_heartbeat: the native
  // wire's empty event request, HTTP/2's PING, each answered as a read).
  sent_.fetch_add(1, std::memory_order_relaxed);
  if (t_heartbeat_sends.add(w.channel, *this)) return;  // sent with the batch's others
  boost::asio::post(w.channel->strand(), [ch = w.channel] { ch->send_heartbeat(); });
}

namespace {
using TimePoint = std::chrono::steady_clock::time_point;
constexpr TimePoint kNoDue = TimePoint::max();
}  // namespace

TimePoint HeartbeatTimerTask::next_check(const WatchedChannel& w, TimePoint now) const {
  if (!w.channel || !w.channel->is_open() || w.heartbeat.count() <= 0) return kNoDue;
  const auto due = std::min(w.channel->last_read(), w.channel->last_write()) + w.heartbeat;
  // Due already: do_task just queued a heartbeat, whose write and reply move
  // both times forward; look again one interval on.
  return due > now ? due : now + w.heartbeat;
}

TimePoint CloseTimerTask::next_check(const WatchedChannel& w, TimePoint now) const {
  if (!w.channel || !w.channel->is_open()) return kNoDue;
  auto due = w.close_at;
  if (w.idle_timeout.count() > 0 && !w.channel->reading_paused()) {
    due = std::min(due, std::min(w.channel->last_read(), w.channel->last_write()) + w.idle_timeout);
  }
  return due > now ? due : kNoDue;  // closing now: the tick looks again
}

TimePoint ReconnectTimerTask::next_check(const WatchedChannel& w, TimePoint now) const {
  if (!w.channel || !w.channel->is_open() || w.idle_timeout.count() <= 0) return kNoDue;
  const auto due = w.channel->last_read() + w.idle_timeout;
  return due > now ? due : kNoDue;  // closing now: the reconnect follows via check_within
}

void CloseTimerTask::do_task(const WatchedChannel& w, std::chrono::steady_clock::time_point now) {
  if (!w.channel || !w.channel->is_open()) return;
  if (now >= w.close_at) {
    closed_.fetch_add(1, std::memory_order_relaxed);
    w.channel->close(transport::make_error_code(transport::errc::idle_timeout),
                     fmt::format("drain deadline reached ({} ms ago)",
                                 std::chrono::duration_cast<std::chrono::milliseconds>(now - w.close_at).count()));
    return;
  }
  if (w.idle_timeout.count() <= 0) return;
  // A channel that stopped reading (back-pressure) is busy, not idle: its
  // requests in flight are as many as it may have, and its peer's heartbeats
  // wait unread (so none is answered).
  if (w.channel->reading_paused()) return;
  const auto read_idle = now - w.channel->last_read();
  const auto write_idle = now - w.channel->last_write();
  if (read_idle <= w.idle_timeout && write_idle <= w.idle_timeout) return;
  closed_.fetch_add(1, std::memory_order_relaxed);
  w.channel->close(
      transport::make_error_code(transport::errc::idle_timeout),
      fmt::format("idle for {} ms (no {}), idle timeout {} ms",
                  std::chrono::duration_cast<std::chrono::milliseconds>(std::max(read_idle, write_idle)).count(),
                  read_idle > w.idle_timeout ? "read" : "write", w.idle_timeout.count()));
}

void ReconnectTimerTask::do_task(const WatchedChannel& w, std::chrono::steady_clock::time_point now) {
  if (!w.channel || !w.channel->is_open()) {
    if (w.reconnect) w.reconnect(now);
    return;
  }
  if (w.idle_timeout.count() <= 0) return;
  const auto read_idle = now - w.channel->last_read();
  if (read_idle <= w.idle_timeout) return;
  idle_closes_.fetch_add(1, std::memory_order_relaxed);
  // Close; the next run reconnects (the first attempt after a loss is fast).
  w.channel->close(
      transport::make_error_code(transport::errc::idle_timeout),
      fmt::format("read nothing for {} ms (idle timeout {} ms): peer unresponsive",
                  std::chrono::duration_cast<std::chrono::milliseconds>(read_idle).count(), w.idle_timeout.count()));
}

}  // namespace wheelrpc::rpc
