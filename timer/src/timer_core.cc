#include "timer_core.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

#include <pthread.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <wheelrpc/timer/expiry_batch.h>

#include "fast_clock.h"
#include "log.h"

namespace wheelrpc::timer::detail {
namespace {

// The timer whose task this thread is running (stop() and run_expired() must
// not be called from there).
thread_local const TimerCore* t_in_task = nullptr;

std::atomic<std::uint32_t> g_next_thread_hint{0};

// Each thread gets a fixed hint at its first schedule; shard = hint & mask.
std::uint32_t thread_hint() noexcept {
  thread_local const std::uint32_t hint = g_next_thread_hint.fetch_add(1, std::memory_order_relaxed);
  return hint;
}

constexpr std::int64_t kMaxDeadlineNs = std::int64_t{1} << 62;

struct InTask {
  explicit InTask(const TimerCore* core) noexcept : saved(t_in_task) { t_in_task = core; }
  ~InTask() { t_in_task = saved; }
  const TimerCore* saved;
};

}  // namespace

TimerCore::TimerCore(HashedWheelTimer& owner, HashedWheelTimerOptions o)
    : owner_(&owner),
      tick_(o.tick_duration),
      div_(o.tick_duration.count()),
      slot_bits_(std::max(
          1u, static_cast<unsigned>(std::bit_width(std::bit_ceil(std::max<std::size_t>(o.ticks_per_wheel, 1)) - 1)))),
      max_pending_(o.max_pending_timeouts),
      executor_(std::move(o.executor)),
      clock_(o.clock),
      manual_(o.manual_drive),
      thread_name_(o.thread_name.substr(0, 15)),
      start_(o.clock ? o.clock->now() : std::chrono::steady_clock::now()),
      start_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(start_.time_since_epoch()).count()),
      max_lead_(std::min<std::chrono::nanoseconds>(std::chrono::microseconds(200), o.tick_duration / 4)),
      max_sleep_ticks_(std::min<std::uint64_t>(kMaxSleepTicks,
                                               std::max<std::uint64_t>(1, std::chrono::hours(24) / o.tick_duration))) {
  std::size_t n = o.shards ? o.shards : std::max(1u, std::thread::hardware_concurrency());
  n = std::bit_ceil(std::min<std::size_t>(n, 32));
  shards_.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) shards_.push_back(std::make_unique<Shard>(i, slot_bits_));
  shard_mask_ = static_cast<std::uint32_t>(n - 1);
  batch_.reserve(1024);
}

TimerCore::~TimerCore() {
  if (!is_stopped()) stop();
  if (const auto n = in_flight_.load()) {
    logger()->error(
        "HashedWheelTimer destroyed with {} expired tasks still held by its executor; "
        "they must be run or destroyed before the timer",
        n);
  }
  // Unprocessed records still own their tasks.
  for (auto& s : shards_) {
    common::LockGuard lock(s->lock);
    for (std::uint32_t i = 0; s->valid(i); ++i) {
      Node& n = s->node(i);
      if (state_of(n.tag) == kUnprocessed) destroy_task_box(n.task);
    }
  }
}

std::int64_t TimerCore::now_ns() const noexcept {
  const auto now = clock_ ? clock_->now() : std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now - start_).count();
}

// The producer's reading: never behind the steady clock (see fast_clock.h), so
// deadlines computed from it are never early.
std::int64_t TimerCore::schedule_now_ns() const noexcept {
  if (clock_) return now_ns();
  return FastClock::now_ns() - start_ns_;
}

// Never early: the deadline is rounded up to a whole tick, and a delay of zero
// or less means the next tick.
std::uint64_t TimerCore::deadline_tick(std::int64_t now, std::chrono::nanoseconds delay) const noexcept {
  const std::int64_t d = delay.count();
  if (d <= 0) return static_cast<std::uint64_t>(div_.floor_div(now) + 1);
  // Both terms stay below 2^62, so the sum cannot overflow; beyond that, saturate.
  if (d >= kMaxDeadlineNs - now) return static_cast<std::uint64_t>(div_.floor_div(kMaxDeadlineNs));
  return static_cast<std::uint64_t>(div_.floor_div(now + d - 1) + 1);
}

Shard& TimerCore::local_shard() noexcept { return *shards_[thread_hint() & shard_mask_]; }

bool TimerCore::start() {
  common::LockGuard lock(start_mu_);
  const int s = state_.load(std::memory_order_acquire);
  if (s != kInit) return s == kStarted;
  if (!manual_) {
    worker_ = std::thread([this] { worker_main(); });
  }
  state_.store(kStarted, std::memory_order_release);
  return true;
}

void TimerCore::reject(TaskBox& box, std::error_code& ec, errc why) noexcept {
  rejected_.fetch_add(1, std::memory_order_relaxed);
  destroy_task_box(box);
  ec = make_error_code(why);
}

Timeout TimerCore::schedule(TaskBox box, std::chrono::nanoseconds delay, std::error_code& ec) noexcept {
  if (state_.load(std::memory_order_acquire) != kStarted) [[unlikely]] {
    bool started = false;
    try {
      started = start();
    } catch (...) {  // no thread could be created
      logger()->error("HashedWheelTimer could not start its worker thread");
      reject(box, ec, errc::out_of_memory);
      return {};
    }
    if (!started) {
      reject(box, ec, errc::timer_stopped);
      return {};
    }
  }
  if (max_pending_ != 0 && pending_total_.fetch_add(1, std::memory_order_relaxed) >= max_pending_) [[unlikely]] {
    pending_total_.fetch_sub(1, std::memory_order_relaxed);
    reject(box, ec, errc::too_many_pending);
    return {};
  }
  const std::uint64_t d = deadline_tick(schedule_now_ns(), delay);
  Shard& shard = local_shard();
  std::uint32_t gen = 0;
  std::uint32_t i;
  bool stopped;
  {
    common::LockGuard lock(shard.lock);
    i = shard.add(box, d, gen);
    stopped = shard.stopped();
  }
  if (i == kNil) [[unlikely]] {
    if (max_pending_ != 0) pending_total_.fetch_sub(1, std::memory_order_relaxed);
    reject(box, ec, stopped ? errc::timer_stopped : errc::out_of_memory);
    return {};
  }
  // Only a new earliest deadline wakes the worker.
  if (d < sleep_until_.load(std::memory_order_seq_cst) && !manual_) [[unlikely]]
    wake_worker();
  ec.clear();
  return handle(shard.id(), i, gen);
}

void TimerCore::wake_worker() noexcept {
  if (wake_pending_.exchange(true, std::memory_order_acq_rel)) return;  // already on its way
  { common::LockGuard lock(wake_mu_); }
  wake_cv_.notify_one();
}

TimeoutState TimerCore::state(std::uint32_t id, std::uint32_t gen) const noexcept {
  const std::uint32_t si = id >> kIndexBits, i = id & kIndexMask;
  if (si >= shards_.size()) return TimeoutState::finished;
  Shard& s = *shards_[si];
  common::LockGuard lock(s.lock);
  if (!s.valid(i)) return TimeoutState::finished;
  const std::uint32_t tag = s.node(i).tag;
  if (gen_of(tag) == gen) {
    switch (state_of(tag)) {
      case kPending:
      case kPendingFar: return TimeoutState::pending;
      case kFiring: return TimeoutState::expired;
      case kUnprocessed: return TimeoutState::unprocessed;
      default: return TimeoutState::finished;
    }
  }
  if (gen_of(tag) == ((gen + 1) & kGenMask)) {
    return (tag & kLastCancelledBit) ? TimeoutState::cancelled : TimeoutState::expired;
  }
  return TimeoutState::finished;
}

bool TimerCore::cancel(std::uint32_t id, std::uint32_t gen) noexcept {
  const std::uint32_t si = id >> kIndexBits, i = id & kIndexMask;
  if (si >= shards_.size()) return false;
  Shard& s = *shards_[si];
  TaskBox box;
  bool was_pending;
  {
    common::LockGuard lock(s.lock);
    if (!s.valid(i)) return false;
    was_pending = state_of(s.node(i).tag) != kUnprocessed;
    if (!s.cancel(i, gen, box)) return false;
  }
  if (max_pending_ != 0 && was_pending) pending_total_.fetch_sub(1, std::memory_order_relaxed);
  destroy_task_box(box);  // outside the lock: a task's destructor may use the timer
  return true;
}

std::shared_ptr<TimerTask> TimerCore::task(std::uint32_t id, std::uint32_t gen) const {
  const std::uint32_t si = id >> kIndexBits, i = id & kIndexMask;
  std::shared_ptr<TimerTask> out;
  if (si >= shards_.size()) return out;
  Shard& s = *shards_[si];
  common::LockGuard lock(s.lock);
  if (!s.valid(i)) return out;
  Node& n = s.node(i);
  if (gen_of(n.tag) == gen && state_of(n.tag) != kFree && n.task.ops && n.task.ops->get_task) {
    n.task.ops->get_task(n.task, out);
  }
  return out;
}

void TimerCore::check_not_in_task(const char* what) const {
  if (t_in_task == this || worker_id_.load() == std::this_thread::get_id()) {
    throw std::logic_error(std::string("HashedWheelTimer::") + what +
                           " cannot be called from inside one of the timer's own tasks");
  }
}

std::vector<Timeout> TimerCore::stop() {
  check_not_in_task("stop()");
  int s = state_.load(std::memory_order_acquire);
  {
    common::LockGuard lock(start_mu_);  // orders against a concurrent lazy start
    s = state_.exchange(kStopped, std::memory_order_acq_rel);
  }
  if (s == kStopped) return {};
  {
    common::LockGuard lock(wake_mu_);
    stop_requested_ = true;
  }
  wake_cv_.notify_all();
  if (worker_.joinable()) worker_.join();

  std::vector<std::pair<std::uint32_t, std::uint32_t>> left;
  std::vector<Timeout> out;
  for (auto& sh : shards_) {
    left.clear();
    {
      common::LockGuard lock(sh->lock);
      sh->stop(left);
    }
    out.reserve(out.size() + left.size());
    for (auto [i, gen] : left) out.push_back(handle(sh->id(), i, gen));
  }
  pending_total_.store(0, std::memory_order_relaxed);
  return out;
}

void TimerCore::record_lateness(std::uint64_t deadline_tick) noexcept {
  const std::int64_t late_ns = now_ns() - static_cast<std::int64_t>(deadline_tick) * tick_.count();
  const std::uint64_t us = late_ns > 0 ? static_cast<std::uint64_t>(late_ns) / 1000 : 0;
  const std::size_t b = std::min<std::size_t>(std::bit_width(us), TimerStats::kLatenessBuckets - 1);
  lateness_[b].fetch_add(1, std::memory_order_relaxed);
}

void TimerCore::run_one(const Fired& f) {
  Shard& s = *shards_[f.shard];
  Node& n = s.firing_node(f.index);
  Timeout t = handle(f.shard, f.index, f.gen);
  record_lateness(f.deadline);
  try {
    InTask in_task(this);
    n.task.ops->run(n.task, t);
  } catch (const std::exception& e) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("timer task threw: {} (timeout={}:{})", e.what(), t.id(), t.generation());
  } catch (...) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("timer task threw a non-std exception (timeout={}:{})", t.id(), t.generation());
  }
}

void TimerCore::complete_expired(const Timeout& t, std::uint64_t deadline_tick, bool run) noexcept {
  const std::uint32_t si = t.id() >> kIndexBits, i = t.id() & kIndexMask;
  if (run) {
    run_one(Fired{si, i, t.generation(), deadline_tick});
  } else {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
  Shard& s = *shards_[si];
  TaskBox box;
  {
    common::LockGuard lock(s.lock);
    s.finish(i, box);
  }
  destroy_task_box(box);
  in_flight_.fetch_sub(1, std::memory_order_release);
}

std::size_t TimerCore::expire(std::uint64_t now, std::uint64_t& next) {
  batch_.clear();
  next = kNever;
  for (auto& s : shards_) {
    common::LockGuard lock(s->lock);
    s->advance(now, batch_);
    next = std::min(next, s->next_event());
  }
  const std::size_t n = batch_.size();
  if (n == 0) return 0;
  if (max_pending_ != 0) pending_total_.fetch_sub(n, std::memory_order_relaxed);

  if (executor_) {
    in_flight_.fetch_add(n, std::memory_order_relaxed);
    for (const Fired& f : batch_) {
      ExpiredTask task(this, handle(f.shard, f.index, f.gen), f.deadline);
      try {
        executor_(std::move(task));
      } catch (const std::exception& e) {  // the task, if not moved, frees itself
        logger()->error("timer executor threw: {}", e.what());
      } catch (...) {
        logger()->error("timer executor threw a non-std exception");
      }
    }
    return n;
  }

  {
    // One tick's expirations run as one batch: what their tasks gathered
    // (ExpiryBatch) is handed on once, after the last of them.
    ExpiryBatchScope batch;
    for (const Fired& f : batch_) run_one(f);
  }
  // Free the records shard by shard, one lock each; destroy tasks outside locks.
  std::vector<TaskBox> boxes;
  boxes.reserve(n);
  for (auto& s : shards_) {
    common::LockGuard lock(s->lock);
    for (const Fired& f : batch_) {
      if (f.shard != s->id()) continue;
      boxes.emplace_back();
      s->finish(f.index, boxes.back());
    }
  }
  for (TaskBox& b : boxes) destroy_task_box(b);
  return n;
}

std::size_t TimerCore::run_expired() {
  if (!manual_) throw std::logic_error("HashedWheelTimer::run_expired() requires manual_drive");
  check_not_in_task("run_expired()");
  if (state_.load(std::memory_order_acquire) != kStarted) return 0;
  std::uint64_t next;
  return expire(static_cast<std::uint64_t>(div_.floor_div(now_ns())), next);
}

void TimerCore::worker_main() {
  worker_id_.store(std::this_thread::get_id());
#if defined(__linux__)
  pthread_setname_np(pthread_self(), thread_name_.c_str());
  // Wake within a few microseconds of the deadline instead of the default 50 µs slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  common::UniqueLock lock(wake_mu_);
  while (!stop_requested_) {
    lock.unlock();
    // Publish "awake" before scanning: see the protocol in timer_core.h.
    sleep_until_.store(kAwake, std::memory_order_seq_cst);
    const std::uint64_t now = static_cast<std::uint64_t>(div_.floor_div(now_ns()));
    std::uint64_t next;
    expire(now, next);
    next = std::min(next, now + max_sleep_ticks_);
    lock.lock();
    if (wake_pending_.load(std::memory_order_acquire) || stop_requested_) {
      wake_pending_.store(false, std::memory_order_relaxed);
      continue;
    }
    sleep_until_.store(next, std::memory_order_seq_cst);
    const auto boundary = start_ + next * tick_;
    // Aim early by the wake-up latency seen so far, then spin the rest: the
    // first task runs microseconds after its tick instead of tens of them.
    const auto until = boundary - lead_;
    bool timed_out = false;
    while (!stop_requested_ && !wake_pending_.load(std::memory_order_acquire)) {
      // The wait unlocks and locks wake_mu_ under `lock`: the analysis sees
      // it held throughout, as it is whenever this thread runs.
      std::unique_lock native(wake_mu_.native(), std::adopt_lock);
      const std::cv_status status = wake_cv_.wait_until(native, until);
      native.release();
      if (status == std::cv_status::timeout && std::chrono::steady_clock::now() >= until) {
        timed_out = true;
        break;
      }
    }
    wake_pending_.store(false, std::memory_order_relaxed);
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    if (timed_out) {
      lock.unlock();
      auto woke = std::chrono::steady_clock::now();
      const auto overshoot = std::chrono::duration_cast<std::chrono::nanoseconds>(woke - until);
      lead_ = std::clamp((lead_ * 7 + overshoot) / 8, std::chrono::nanoseconds{0}, max_lead_);
      while (woke < boundary) {
        WHEELRPC_CPU_RELAX();
        woke = std::chrono::steady_clock::now();
      }
      lock.lock();
    }
  }
}

TimerStats TimerCore::stats() const {
  TimerStats st;
  for (const auto& s : shards_) {
    st.pending += s->pending.load();
    st.scheduled += s->scheduled.load();
    st.cancelled += s->cancelled.load();
    st.expired += s->expired.load();
  }
  st.failed = failed_.load(std::memory_order_relaxed);
  st.dropped = dropped_.load(std::memory_order_relaxed);
  st.rejected = rejected_.load(std::memory_order_relaxed);
  st.wakeups = wakeups_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < st.lateness_us.size(); ++i) {
    st.lateness_us[i] = lateness_[i].load(std::memory_order_relaxed);
  }
  return st;
}

}  // namespace wheelrpc::timer::detail
