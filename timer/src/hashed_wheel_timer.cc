#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>

#include "log.h"
#include "timer_core.h"

namespace wheelrpc::timer {
namespace {

std::atomic<std::size_t> g_instances{0};
std::atomic<bool> g_warned{false};

HashedWheelTimerOptions validated(HashedWheelTimerOptions o) {
  using namespace std::chrono;
  if (o.tick_duration < microseconds(1) || o.tick_duration > hours(1)) {
    throw std::invalid_argument("HashedWheelTimerOptions::tick_duration must be between 1us and 1h, got " +
                                std::to_string(o.tick_duration.count()) + "ns");
  }
  if (o.ticks_per_wheel < 1 || o.ticks_per_wheel > 4096) {
    throw std::invalid_argument("HashedWheelTimerOptions::ticks_per_wheel must be between 1 and 4096, got " +
                                std::to_string(o.ticks_per_wheel));
  }
  if (o.shards > 32) {
    throw std::invalid_argument("HashedWheelTimerOptions::shards must be at most 32, got " + std::to_string(o.shards));
  }
  if (o.clock && !o.manual_drive) {
    throw std::invalid_argument(
        "HashedWheelTimerOptions::clock requires manual_drive (a worker cannot sleep on a "
        "clock that does not follow real time)");
  }
  return o;
}

HashedWheelTimerOptions make_options(std::chrono::nanoseconds tick, std::size_t ticks_per_wheel,
                                     std::size_t max_pending) {
  HashedWheelTimerOptions o;
  o.tick_duration = tick;
  o.ticks_per_wheel = ticks_per_wheel;
  o.max_pending_timeouts = max_pending;
  return o;
}

}  // namespace

HashedWheelTimer::HashedWheelTimer() : HashedWheelTimer(HashedWheelTimerOptions{}) {}

HashedWheelTimer::HashedWheelTimer(std::chrono::nanoseconds tick_duration, std::size_t ticks_per_wheel,
                                   std::size_t max_pending_timeouts)
    : HashedWheelTimer(make_options(tick_duration, ticks_per_wheel, max_pending_timeouts)) {}

HashedWheelTimer::HashedWheelTimer(HashedWheelTimerOptions options)
    : core_(std::make_unique<detail::TimerCore>(*this, validated(std::move(options)))) {
  const std::size_t n = g_instances.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n > kInstanceWarningThreshold && !g_warned.exchange(true)) {
    detail::logger()->warn(
        "{} HashedWheelTimer instances are alive; a HashedWheelTimer is meant to be shared "
        "(one per process), each one owns a thread",
        n);
  }
}

HashedWheelTimer::~HashedWheelTimer() {
  core_.reset();
  g_instances.fetch_sub(1, std::memory_order_relaxed);
}

std::vector<Timeout> HashedWheelTimer::stop() { return core_->stop(); }
bool HashedWheelTimer::is_stopped() const noexcept { return core_->is_stopped(); }
std::size_t HashedWheelTimer::run_expired() { return core_->run_expired(); }
TimerStats HashedWheelTimer::stats() const { return core_->stats(); }
std::chrono::nanoseconds HashedWheelTimer::tick_duration() const noexcept { return core_->tick(); }
std::size_t HashedWheelTimer::ticks_per_wheel() const noexcept { return core_->slots_per_level(); }
std::size_t HashedWheelTimer::shard_count() const noexcept { return core_->shard_count(); }
std::size_t HashedWheelTimer::instance_count() noexcept { return g_instances.load(); }

Timeout HashedWheelTimer::schedule(detail::TaskBox box, std::chrono::nanoseconds delay, std::error_code& ec) noexcept {
  return core_->schedule(box, delay, ec);
}
TimeoutState HashedWheelTimer::timeout_state(std::uint32_t id, std::uint32_t gen) const noexcept {
  return core_->state(id, gen);
}
bool HashedWheelTimer::cancel_timeout(std::uint32_t id, std::uint32_t gen) noexcept { return core_->cancel(id, gen); }
std::shared_ptr<TimerTask> HashedWheelTimer::timeout_task(std::uint32_t id, std::uint32_t gen) const {
  return core_->task(id, gen);
}

std::uint64_t TimerStats::lateness_quantile_us(double q) const noexcept {
  std::uint64_t total = 0;
  for (auto c : lateness_us) total += c;
  if (total == 0) return 0;
  const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * total)));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < lateness_us.size(); ++b) {
    seen += lateness_us[b];
    if (seen >= rank) return b == 0 ? 1 : std::uint64_t{1} << b;
  }
  return std::uint64_t{1} << (lateness_us.size() - 1);
}

ExpiredTask& ExpiredTask::operator=(ExpiredTask&& other) noexcept {
  if (this != &other) {
    if (core_) core_->complete_expired(timeout_, deadline_tick_, false);
    core_ = other.core_;
    timeout_ = other.timeout_;
    deadline_tick_ = other.deadline_tick_;
    other.core_ = nullptr;
  }
  return *this;
}

ExpiredTask::~ExpiredTask() {
  if (core_) core_->complete_expired(timeout_, deadline_tick_, false);
}

void ExpiredTask::operator()() {
  if (auto* core = std::exchange(core_, nullptr)) core->complete_expired(timeout_, deadline_tick_, true);
}

}  // namespace wheelrpc::timer
