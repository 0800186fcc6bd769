#pragma once
// What one provider's attempts did, for outlier detection and load-aware
// balancing (ProviderReview): counts and latency summed over the current
// interval, failures in a row, its ejection state, and the last load report
// it sent. Attempt endings write it from any thread (relaxed atomics, no
// lock); ProviderReview reads and resets the interval on the client's
// executor, and alone changes the state.

#include <atomic>
#include <chrono>
#include <cstdint>

#include <wheelrpc/rpc/status.h>
#include <wheelrpc/transport/attachments.h>

namespace wheelrpc::rpc::detail {

class OutlierStats {
 public:
  enum class State : std::uint8_t { healthy, ejected, probation };

  /// What an attempt's end asks of ProviderReview.
  enum class Verdict : std::uint8_t {
    none,
    look_now,     ///< failures in a row reached the limit: judge it at once
    probe_ok,     ///< on probation: enough good probes in a row
    probe_failed  ///< on probation: a probe failed (or was too slow)
  };

  /// Whether a reply with `status` says something bad of its provider (the
  /// server failed, timed out or shed it), as opposed to the caller's own
  /// errors (not found, bad request, an application code) and a server
  /// leaving (shutting_down), which count as neither.
  static bool provider_failure(Status status) noexcept;
  static bool neutral(Status status) noexcept { return status == Status::shutting_down; }

  /// An attempt ended: `failed`, or answered in `latency_ns` (< 0: no reply,
  /// a failure). `consecutive_limit` (0: off), `probe_successes` and
  /// `probe_latency_ns` (0: no latency bound) are the options'.
  Verdict record(bool failed, std::int64_t latency_ns, unsigned consecutive_limit, unsigned probe_successes) noexcept;

  /// The interval's counts, taken and reset (ProviderReview only).
  struct Interval {
    std::uint64_t ok = 0, failed = 0, replied = 0, latency_ns = 0;
    std::uint64_t ended() const noexcept { return ok + failed; }
  };
  Interval take() noexcept;

  State state() const noexcept { return state_.load(std::memory_order_relaxed); }
  /// ProviderReview only (its executor, its lock).
  void set_state(State s) noexcept {
    probe_ok_.store(0, std::memory_order_relaxed);
    consecutive_.store(0, std::memory_order_relaxed);
    state_.store(s, std::memory_order_release);
  }
  /// The latency above which a probe counts as failed (0: none); set by
  /// ProviderReview from its peers' latency.
  void set_probe_latency_limit(std::int64_t ns) noexcept { probe_limit_ns_.store(ns, std::memory_order_relaxed); }

  /// Load-aware balancing: the share of its weight it gets, per mille (1..1000).
  std::uint32_t load_factor() const noexcept { return load_factor_.load(std::memory_order_relaxed); }
  void set_load_factor(std::uint32_t f) noexcept { load_factor_.store(f, std::memory_order_relaxed); }

  /// Its last load report (ORCA): utilization 0..1 (the application's if set,
  /// else the CPU's), replies per second, and when it came (ns of the
  /// client's clock; 0: none yet). Written by the reply's thread.
  void set_report(double utilization, double rps, std::int64_t at_ns) noexcept {
    report_util_.store(utilization, std::memory_order_relaxed);
    report_rps_.store(rps, std::memory_order_relaxed);
    report_at_ns_.store(at_ns, std::memory_order_release);
  }
  /// Reads the load report (ORCA) among a reply's `attachments`, if there is
  /// a well-formed one (set_report; `at_ns`: when it came). True if read.
  bool read_report(const transport::Attachments& attachments, std::int64_t at_ns);
  double report_utilization() const noexcept { return report_util_.load(std::memory_order_relaxed); }
  double report_rps() const noexcept { return report_rps_.load(std::memory_order_relaxed); }
  std::int64_t report_at_ns() const noexcept { return report_at_ns_.load(std::memory_order_acquire); }

 private:
  std::atomic<State> state_{State::healthy};
  std::atomic<std::uint64_t> ok_{0}, failed_{0}, replied_{0}, latency_ns_{0};
  std::atomic<std::uint32_t> consecutive_{0};
  std::atomic<std::uint32_t> probe_ok_{0};
  std::atomic<std::int64_t> probe_limit_ns_{0};
  std::atomic<std::uint32_t> load_factor_{1000};
  std::atomic<double> report_util_{-1.0}, report_rps_{0.0};
  std::atomic<std::int64_t> report_at_ns_{0};
};

}  // namespace wheelrpc::rpc::detail
