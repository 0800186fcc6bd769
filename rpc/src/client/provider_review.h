#pragma once
// ProviderReview: judges the client's providers on what its own attempts saw
// (no extra traffic). Every OutlierDetectionOptions::interval it takes each
// provider's interval counts (OutlierStats) and
//  - ejects the outliers (ClientOptions::outlier_detection): too many
//    failures, failures far above its peers', latency far above its peers';
//    at most max_ejection_percent of the providers at once; each ejection in
//    a row twice as long as the last, up to max_ejection_time. When an
//    ejection ends, the provider is on probation: one attempt at a time
//    (CallDriver::pick), back to its full share after probe_successes good
//    ones, ejected again after a bad one;
//  - sets each provider's load factor for LoadBalance::load_aware: its
//    capacity relative to the best provider's: the lower of what its load
//    reports say (calls per second per unit of utilization) and the square
//    of its mean latency's ratio to the best one's.
//
// Threads: the timer's worker only posts (through a WorkGate, so nothing is
// posted once close() returned); the review, ejections and their ends run on
// the client's executor under `mu_`, a leaf lock. Attempt endings call
// on_verdict from any thread but the timer's worker.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/timer/timer.h>

#include "client/attempt_policy.h"
#include "client/outlier_stats.h"

namespace wheelrpc::rpc::detail {

/// A provider as ProviderReview knows it: its record (an aliasing pointer
/// into its Subchannel, which it keeps alive) and its "ip:port".
struct Reviewed {
  std::shared_ptr<OutlierStats> stats;
  std::string peer;
};

class ProviderReview : public std::enable_shared_from_this<ProviderReview> {
 public:
  /// `eject`: outlier detection is on (else it only sets load factors).
  /// `review_period`: how often it runs (the outlier interval, or 500 ms).
  ProviderReview(boost::asio::any_io_executor ex, timer::Timer& timer, const timer::Clock* clock,
                 OutlierDetectionOptions options, bool eject);

  /// Starts the periodic review. Any thread.
  void start();
  /// The providers to judge: the current set's. Called on every new set
  /// (any thread; the pool's lock may be held: this takes only its own).
  void track(const std::vector<Reviewed>& providers);
  /// An attempt's end on a provider asked for `v` (not none): acted on, on
  /// the executor. Any thread but the timer's worker.
  void on_verdict(std::shared_ptr<OutlierStats> stats, OutlierStats::Verdict v);
  /// Cancels its timers; returns once none runs on the timer's worker. Idempotent.
  void close();

  bool ejects() const noexcept { return eject_; }
  const OutlierDetectionOptions& options() const noexcept { return options_; }

  /// What it says of a provider now, for ProviderStats and ConnectionInfo.
  struct View {
    std::string state;  ///< "", "ejected", "probation"
    std::string why;    ///< why it was ejected last
    std::int64_t for_ms = -1;
    std::uint64_t ejections = 0;
    std::uint64_t mean_latency_us = 0;
  };
  View view(const OutlierStats& stats) const;
  /// Adds view(stats) and its load factor and last report to `out`.
  void fill(const OutlierStats& stats, ProviderStats& out) const;
  void fill(const OutlierStats& stats, ConnectionInfo& out) const;
  std::uint64_t ejections() const;
  std::uint64_t ejected_now() const;

  /// One review now, at `t` (the periodic task's work; tests call it with a
  /// manual clock). The executor.
  void review(TimePoint t);

 private:
  struct Entry {
    std::weak_ptr<OutlierStats> stats;
    std::string peer;
    unsigned in_a_row = 0;        // ejections in a row (doubles the next one's length)
    TimePoint until{};            // while ejected
    TimePoint healthy_since{};    // its last return (in_a_row decays one per base_ejection_time after it)
    std::string why;              // of its last ejection
    std::uint64_t ejections = 0;  // so far
    timer::Timeout ends;          // the end of its ejection
    double latency_ns = 0;        // smoothed mean latency (0: none seen)
    int quiet = 0;                // reviews in a row without a reply
  };
  TimePoint now() const noexcept { return clock_ ? clock_->now() : timer::fast_steady_now(); }
  void schedule_review();
  /// Ejects `e` for `why`: state, timer, log. The caller checked the share.
  void eject_locked(Entry& e, OutlierStats& stats, std::string why, TimePoint t) WHEELRPC_REQUIRES(mu_);
  std::size_t ejected_locked() const WHEELRPC_REQUIRES(mu_);
  std::size_t max_ejected_locked() const WHEELRPC_REQUIRES(mu_);
  void act(const std::shared_ptr<OutlierStats>& stats, OutlierStats::Verdict v);
  void end_ejection(const OutlierStats* key, std::uint64_t ejection);
  void set_load_factors_locked() WHEELRPC_REQUIRES(mu_);

  const boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const timer::Clock* const clock_;
  const OutlierDetectionOptions options_;
  const bool eject_;
  const std::chrono::milliseconds period_;
  common::WorkGate gate_;

  mutable common::Mutex mu_;
  bool closed_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::map<const OutlierStats*, Entry> entries_ WHEELRPC_GUARDED_BY(mu_);
  timer::Timeout next_ WHEELRPC_GUARDED_BY(mu_);
  std::uint64_t ejections_ WHEELRPC_GUARDED_BY(mu_) = 0;
};

}  // namespace wheelrpc::rpc::detail
