#include "bench_run.h"

#include <algorithm>
#include <cassert>
#include <csignal>
#include <cstdio>
#include <ostream>
#include <thread>

#include <boost/asio/post.hpp>

namespace wheelrpc::wheelctl {
namespace {

constexpr unsigned kMaxThreads = 64;
constexpr unsigned kDefaultMaxInFlight = 10000;
// The wheel's tick: every deadline's resolution, and in an open loop the
// schedule's. A call due inside a tick starts when the tick ends, and that
// wait counts in its latency, so the open loop ticks finer: its cost is a
// wake-up of the timer's worker per tick with something due.
constexpr std::chrono::microseconds kClosedLoopTick{1000};
constexpr std::chrono::microseconds kOpenLoopTick{100};

}  // namespace

unsigned BenchRun::threads_for(const BenchOptions& options) noexcept {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned n = options.threads;
  if (n == 0) {
    // Closed loop: one thread per 128 calls in flight, up to one per core. One connection
    // carries 128 calls well; splitting them over more connections costs a server that
    // shares the machine more CPU per call than the second client thread saves.
    n = options.rate > 0 ? cores : std::min(cores, std::max(1u, (options.concurrency + 127) / 128));
  }
  n = std::min(n, kMaxThreads);
  if (options.rate <= 0) n = std::min(n, std::max(1u, options.concurrency));  // a thread needs a call to keep busy
  return n;
}

BenchRun::BenchRun(const BenchTarget& target, const BenchOptions& options,
                   std::vector<boost::asio::ip::tcp::endpoint> servers)
    : target_(target), options_(options), timer_(options.rate > 0 ? kOpenLoopTick : kClosedLoopTick) {
  const unsigned n = threads_for(options_);
  if (options_.rate > 0) {
    max_in_flight_ =
        options_.max_in_flight ? options_.max_in_flight : std::max(kDefaultMaxInFlight, options_.concurrency);
  }
  for (unsigned i = 0; i < n; ++i) {
    ShardPlan plan;
    plan.index = i;
    plan.shards = n;
    plan.concurrency = options_.concurrency / n + (i < options_.concurrency % n ? 1 : 0);
    plan.rate = options_.rate;
    plan.max_in_flight = std::max(1u, (max_in_flight_ + n - 1) / n);
    shards_.push_back(std::make_unique<BenchShard>(target_, servers, timer_, plan));
    shards_.back()->on_finished([this] { on_shard_finished(); });
  }
  if (options_.handle_sigint) {
    signals_.emplace(shards_[0]->io(), SIGINT);
  }
}

BenchRun::~BenchRun() {
  (void)timer_.stop();  // no task may post into a shard being destroyed
}

void BenchRun::interrupt() {
  const unsigned n = interrupts_.fetch_add(1) + 1;
  for (auto& shard : shards_) {
    if (n == 1) {
      shard->stop_starting();
    } else {
      shard->cancel_all();
    }
  }
}

void BenchRun::wait_signal() {
  signals_->async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;  // cancelled: the run is over
    interrupt();
    if (!all_finished_) wait_signal();
  });
}

void BenchRun::on_warm() {
  if (warmed_.fetch_add(1) + 1 != shards_.size()) return;
  // The last shard to warm up: every connection is made (or failed); one
  // clock for all.
  t0_ = Clock::now();
  const auto t_end = t0_ + options_.duration;
  for (auto& shard : shards_) shard->start(t0_, t_end);
  if (options_.progress) {
    boost::asio::post(shards_[0]->io(), [this, t0 = t0_] {
      progress_t0_ = last_progress_ = t0;
      arm_progress();
    });
  }
}

void BenchRun::arm_progress() {
  if (all_finished_) return;
  std::error_code ec;
  progress_ = timer_.new_timeout(
      [this] {
        boost::asio::post(shards_[0]->io(), [this] {
          if (all_finished_) return;
          print_progress();
          arm_progress();
        });
      },
      std::chrono::seconds(1), ec);
}

void BenchRun::print_progress() {
  std::uint64_t completed = 0, failed = 0;
  for (const auto& shard : shards_) {
    completed += shard->completed();
    failed += shard->failed();
  }
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_progress_).count();
  const double elapsed = std::chrono::duration<double>(now - progress_t0_).count();
  const double per_s = since > 0 ? static_cast<double>(completed - last_completed_) / since : 0;
  char line[160];
  std::snprintf(line, sizeof line, "[%5.1fs] calls %llu  calls/s %.0f  errors %llu\n", elapsed,
                static_cast<unsigned long long>(completed), per_s, static_cast<unsigned long long>(failed));
  *err_ << line << std::flush;
  last_completed_ = completed;
  last_progress_ = now;
}

void BenchRun::on_shard_finished() {
  if (finished_.fetch_add(1) + 1 != shards_.size()) return;
  // Shard 0's io_context still holds the signal wait and the progress line:
  // end them there, so that its run() returns.
  boost::asio::post(shards_[0]->io(), [this] {
    all_finished_ = true;
    progress_.cancel();
    if (signals_) signals_->cancel();
  });
}

BenchResult BenchRun::run(std::ostream& err) {
  err_ = &err;
  if (signals_) wait_signal();
  for (auto& shard : shards_) shard->warm_up([this] { on_warm(); });
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < shards_.size(); ++i) {
    threads.emplace_back([shard = shards_[i].get()] { shard->io().run(); });
  }
  shards_[0]->io().run();
  for (auto& t : threads) t.join();
  (void)timer_.stop();  // no task runs (or posts) from here on

  BenchResult r;
  r.concurrency = options_.concurrency;
  r.rate = options_.rate;
  r.threads = static_cast<unsigned>(shards_.size());
  r.max_in_flight = max_in_flight_;
  r.protocol = target_.protocol;
  r.interrupted = interrupts_.load() > 0;
  Clock::time_point last = t0_;
  for (const auto& shard : shards_) {
    r.latency.merge(shard->latency());
    r.calls += shard->completed();
    r.errors += shard->failed();
    r.ok += shard->ok();
    for (std::size_t c = 0; c < r.errors_by_status.size(); ++c) r.errors_by_status[c] += shard->errors_by_status()[c];
    r.cap_hits += shard->cap_hits();
    r.unsent += shard->unsent();
    last = std::max(last, shard->last_completion());
    if (r.first_error.empty()) r.first_error = shard->first_error();
  }
  r.duration_s = std::chrono::duration<double>(last - t0_).count();
  return r;
}

}  // namespace wheelrpc::wheelctl
