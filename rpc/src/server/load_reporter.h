#pragma once
// The server's load reports (ServerOptions::load_reports; ORCA's
// OrcaLoadReport, base/orca_load_report.h): sampled on the timer, carried by
// one reply per connection and interval.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/timer/timer.h>
#include <wheelrpc/transport/attachments.h>

#include "base/orca_load_report.h"
#include "base/shared_ptr_cell.h"

namespace wheelrpc::rpc::detail {

class ServerHost;

/// Samples the server's load every `interval` and keeps the encoded report
/// ready for the replies:
/// - cpu_utilization: the process's CPU time (getrusage, user + system) over
///   the interval's wall time times the CPUs it may run on
///   (sched_getaffinity), 0..1;
/// - named_metrics "inflight" (requests not yet answered) and
///   "queue_wait_ms" (how long the last request run from
///   ServerOptions::handler_executor waited there during the interval; 0:
///   none did);
/// - rps_fractional and eps: answers, and non-OK answers, per second over
///   the interval;
/// - application_utilization: set_application_utilization's, when set.
///
/// The timer's worker only decides a sample is due: the sampling is posted
/// to the server's executor, which schedules the next one (so two samples are
/// at least `interval` apart). A reply takes the report through
/// attach_if_due(): a load and a compare, and the copy of the report into
/// the reply once per connection and sample.
///
/// @par Thread Safety
/// attach_if_due, set_application_utilization and current from any thread;
/// start once, from any thread but the timer's worker.
class LoadReporter {
 public:
  /// What a sample reads of its server, once per sample: on the executor
  /// (the first one by start(), on its caller's thread).
  struct Sources {
    std::function<std::uint64_t()> in_flight;              // requests not yet answered
    std::function<std::uint64_t()> answered;               // requests answered so far, any status
    std::function<std::uint64_t()> failed;                 // of those, answered with another status than OK
    std::function<std::chrono::nanoseconds()> queue_wait;  // the handler queue's recent wait, taken (0: none)
  };

  LoadReporter(std::chrono::milliseconds interval, Sources sources);

  /// Takes the first sample now, then one every interval: `host`'s timer
  /// decides, its executor samples; a task enters host.timer_work() before
  /// it posts, so the samples end once the host closes it (stop()). Once: a
  /// later call does nothing.
  void start(ServerHost& host);

  /// Server::set_application_utilization: 0..1 (more past a soft limit);
  /// negative or not finite clears it. Seen from the next sample on.
  void set_application_utilization(double utilization) noexcept;

  /// Appends the current report to a reply's `attachments` (as trailing
  /// metadata under kLoadReportKey: after the kTrailersMarker, added if
  /// absent) if its connection has not carried this sample yet; `seen` is
  /// the connection's record of the last sample it carried. No lock, no
  /// allocation when not due. Any thread.
  void attach_if_due(std::atomic<std::uint64_t>& seen, transport::Attachments& attachments) const;

  /// Samples now (the posted job; tests call it directly). On the executor.
  void sample();
  /// The last report (before the first sample: all zero), encoded.
  std::shared_ptr<const std::string> current() const { return report_.load(); }
  /// The report of the last sample, decoded form.
  LoadReport last() const;

  std::chrono::milliseconds interval() const noexcept { return interval_; }
  /// The CPUs the process may run on (at least 1).
  static unsigned cpu_count() noexcept;
  /// The process's CPU time so far, user and system, all threads.
  static std::chrono::nanoseconds process_cpu_time() noexcept;

 private:
  void schedule_next();

  const std::chrono::milliseconds interval_;
  const Sources sources_;
  const unsigned cpus_;
  std::atomic<bool> started_{false};
  ServerHost* host_ = nullptr;  // set by start(); the host owns this
  std::atomic<double> application_utilization_{-1.0};
  SharedPtrCell<const std::string> report_;

  // The previous sample's readings (the executor's; one sample at a time).
  std::chrono::steady_clock::time_point last_wall_{};
  std::chrono::nanoseconds last_cpu_{0};
  std::uint64_t last_answered_ = 0, last_failed_ = 0;

  mutable common::Mutex mu_;  // a leaf: the last report's fields
  LoadReport last_ WHEELRPC_GUARDED_BY(mu_);
};

}  // namespace wheelrpc::rpc::detail
