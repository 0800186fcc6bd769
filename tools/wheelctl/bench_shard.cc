#include "bench_shard.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include <boost/asio/post.hpp>

namespace wheelrpc::wheelctl {
namespace {

// After the window (or a stop), the calls in flight get their own timeout
// plus this much before the client is closed under them: the client fails
// each at its deadline already, so this only catches a deadline that never
// fires (it should not happen; the run must end anyway).
constexpr std::chrono::seconds kDrainSlack{2};

rpc::ClientOptions client_options(const BenchTarget& target, const ShardPlan& plan) {
  rpc::ClientOptions o;
  o.protocol = target.protocol;
  o.tls = target.tls;
  o.load_balance = target.load_balance;
  o.health_check = target.health_check;
  o.metrics = false;  // the bench keeps its own figures; per-method metrics would cost per call
  o.max_pending_calls = std::max<std::size_t>(o.max_pending_calls, std::size_t{plan.max_in_flight} + plan.concurrency);
  return o;
}

}  // namespace

BenchShard::BenchShard(const BenchTarget& target, const std::vector<boost::asio::ip::tcp::endpoint>& servers,
                       timer::Timer& timer, ShardPlan plan)
    : timer_(timer), plan_(plan), method_(target.method_path), request_(target.request), timeout_(target.timeout) {
  call_options_.timeout = target.timeout;
  // A load test counts each call's own outcome: a retry would hide a failure
  // and add load the schedule did not ask for. Even a call a provider refused
  // unprocessed (a graceful shutdown's drain) counts as failed: what keeps a
  // rolling restart clean is the provider saying NOT_SERVING before it
  // refuses anything (--health-check, and a shutdown grace on the server).
  call_options_.retries = 0;
  call_options_.inherit_deadline = false;
  call_options_.attachments = target.metadata;
  client_.emplace(io_.get_executor(), timer_, servers, client_options(target, plan_));
}

BenchShard::~BenchShard() {
  schedule_.cancel();
  drain_bound_.cancel();
}

bool BenchShard::in_shard_thread() noexcept { return io_.get_executor().running_in_this_thread(); }

std::int64_t BenchShard::now_ns() const noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count();
}

std::int64_t BenchShard::intended_of(std::uint64_t k) const noexcept {
  const double j = static_cast<double>(k) * plan_.shards + plan_.index;
  return static_cast<std::int64_t>(j * 1e9 / plan_.rate);
}

void BenchShard::warm_up(std::function<void()> done) {
  boost::asio::post(io_, [this, done = std::move(done)]() mutable {
    client_->async_call(method_, request_, call_options_,
                        [done = std::move(done)](const boost::system::error_code&, const rpc::Response&) { done(); });
  });
}

void BenchShard::start(Clock::time_point t0, Clock::time_point t_end) {
  boost::asio::post(io_, [this, t0, t_end] {
    assert(in_shard_thread());
    epoch_ = t0;
    end_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(t_end - t0).count();
    last_completion_ = t0;
    started_ = true;
    if (window_over_ || cancelled_) {  // stopped while warming up
      end_ns_ = 0;
      window_over_ = true;
      maybe_finish();
      return;
    }
    // The drain bound of a run whose calls all hang: the window, then a timeout.
    arm_drain_bound(std::chrono::nanoseconds(end_ns_) + timeout_ + kDrainSlack);
    if (plan_.rate > 0) {
      pump(now_ns());
    } else {
      const std::int64_t now = now_ns();
      for (unsigned i = 0; i < plan_.concurrency; ++i) issue(now);
    }
  });
}

void BenchShard::stop_starting() {
  boost::asio::post(io_, [this] {
    if (finished_ || window_over_) return;
    if (!started_) {
      window_over_ = true;  // start() ends the run at once
      return;
    }
    end_ns_ = std::min(end_ns_, now_ns());
    end_window();
    maybe_finish();
  });
}

void BenchShard::cancel_all() {
  boost::asio::post(io_, [this] { force_end(); });
}

void BenchShard::issue(std::int64_t intended_ns) {
  ++in_flight_;
  client_->async_call(method_, request_, call_options_,
                      [this, intended_ns](const boost::system::error_code& ec, const rpc::Response& response) {
                        on_complete(ec, response, intended_ns);
                      });
}

void BenchShard::on_complete(const boost::system::error_code& ec, const rpc::Response& response,
                             std::int64_t intended_ns) {
  assert(in_shard_thread());
  const std::int64_t now = now_ns();
  --in_flight_;
  last_completion_ = epoch_ + std::chrono::nanoseconds(now);
  if (!ec) {
    ++ok_;
    latency_.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - intended_ns)));
  } else {
    ++by_status_[static_cast<std::size_t>(rpc::status_code_of(ec))];
    failed_.store(failed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (first_error_.empty()) first_error_ = response.error_message.empty() ? ec.message() : response.error_message;
  }
  // Only this thread writes the counters: a plain store, no locked add.
  completed_.store(completed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (!window_over_ && now >= end_ns_) end_window();
  if (!window_over_) {
    if (plan_.rate > 0) {
      pump(now);  // a call held back by the cap may start now
    } else {
      issue(now);  // closed loop: one new call per completion
    }
  }
  maybe_finish();
}

void BenchShard::pump(std::int64_t now) {
  assert(in_shard_thread());
  while (!window_over_) {
    const std::int64_t t = intended_of(next_k_);
    if (t >= end_ns_) {
      end_window();
      return;
    }
    if (t > now) {
      arm_schedule(t - now);
      return;
    }
    if (in_flight_ >= plan_.max_in_flight) {
      // Due but held back; the next completion pumps again. Its latency still
      // counts from `t`, so the wait shows (coordinated omission corrected).
      if (capped_k_ != next_k_) {
        capped_k_ = next_k_;
        ++cap_hits_;
      }
      return;
    }
    issue(t);
    ++next_k_;
  }
}

void BenchShard::arm_schedule(std::int64_t delay_ns) {
  if (schedule_armed_) return;
  schedule_armed_ = true;
  std::error_code ec;
  // The wheel fires at its tick (BenchRun: 100 us in an open loop), at or
  // after the delay; every call due by then starts at once, each timed from
  // its own intended start.
  schedule_ = timer_.new_timeout(
      [this] {
        boost::asio::post(io_, [this] {
          schedule_armed_ = false;
          if (finished_) return;
          const std::int64_t now = now_ns();
          if (!window_over_ && now >= end_ns_ && intended_of(next_k_) >= end_ns_) end_window();
          if (!window_over_) pump(now);
          maybe_finish();
        });
      },
      std::chrono::nanoseconds(delay_ns), ec);
  if (ec) schedule_armed_ = false;  // the timer stopped: the run is ending
}

void BenchShard::end_window() {
  assert(in_shard_thread());
  window_over_ = true;
  if (plan_.rate > 0) {
    for (std::uint64_t k = next_k_; intended_of(k) < end_ns_; ++k) ++unsent_;
    schedule_.cancel();
  }
  // The calls in flight end within their timeout; the bound is a safety net.
  arm_drain_bound(timeout_ + kDrainSlack);
}

void BenchShard::arm_drain_bound(std::chrono::nanoseconds delay) {
  drain_bound_.cancel();
  std::error_code ec;
  drain_bound_ = timer_.new_timeout([this] { boost::asio::post(io_, [this] { force_end(); }); }, delay, ec);
}

void BenchShard::force_end() {
  assert(in_shard_thread());
  if (finished_) return;
  if (started_ && !window_over_) end_window();
  window_over_ = true;
  cancelled_ = true;
  // Fails every call in flight (and the warm-up call) with errc::cancelled;
  // their completions still come here and are counted.
  client_->close();
  maybe_finish();
}

void BenchShard::maybe_finish() {
  if (finished_ || !started_ || !window_over_ || in_flight_ > 0) return;
  finished_ = true;
  schedule_.cancel();
  drain_bound_.cancel();
  client_->close();  // releases io_: its run() returns once the posted work is done
  if (on_finished_) on_finished_();
}

}  // namespace wheelrpc::wheelctl
