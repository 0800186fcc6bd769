#include "client/outlier_stats.h"

#include <cmath>

#include <wheelrpc/rpc/status_code.h>

#include "base/orca_load_report.h"

namespace wheelrpc::rpc::detail {

bool OutlierStats::provider_failure(Status status) noexcept {
  switch (status) {
    case Status::server_timeout:
    case Status::server_error:
    case Status::overloaded: return true;
    default: break;
  }
  const auto s = static_cast<int>(status);
  const auto first = static_cast<int>(Status::first_code);
  if (s < first || s > static_cast<int>(Status::last_code)) return false;
  switch (static_cast<StatusCode>(s - first)) {
    case StatusCode::unknown:
    case StatusCode::deadline_exceeded:
    case StatusCode::resource_exhausted:
    case StatusCode::internal:
    case StatusCode::unavailable:
    case StatusCode::data_loss: return true;
    default: return false;
  }
}

OutlierStats::Verdict OutlierStats::record(bool failed, std::int64_t latency_ns, unsigned consecutive_limit,
                                           unsigned probe_successes) noexcept {
  (failed ? failed_ : ok_).fetch_add(1, std::memory_order_relaxed);
  if (latency_ns >= 0) {
    replied_.fetch_add(1, std::memory_order_relaxed);
    latency_ns_.fetch_add(static_cast<std::uint64_t>(latency_ns), std::memory_order_relaxed);
  }
  switch (state()) {
    case State::healthy:
      if (failed) {
        const auto n = consecutive_.fetch_add(1, std::memory_order_relaxed) + 1;
        if (consecutive_limit != 0 && n == consecutive_limit) return Verdict::look_now;
      } else if (consecutive_.load(std::memory_order_relaxed) != 0) {
        consecutive_.store(0, std::memory_order_relaxed);
      }
      return Verdict::none;
    case State::probation: {
      const auto limit = probe_limit_ns_.load(std::memory_order_relaxed);
      if (failed || (limit > 0 && latency_ns > limit)) return Verdict::probe_failed;
      const auto n = probe_ok_.fetch_add(1, std::memory_order_relaxed) + 1;
      return n == probe_successes ? Verdict::probe_ok : Verdict::none;
    }
    case State::ejected: break;  // attempts sent before its ejection
  }
  return Verdict::none;
}

bool OutlierStats::read_report(const transport::Attachments& attachments, std::int64_t at_ns) {
  for (const auto& [key, value] : attachments) {
    if (key != kLoadReportKey) continue;
    auto report = decode(value);
    if (!report) return false;  // malformed: ignored
    // The application's utilization when the server sets one, else its CPU's.
    const double util = report->application_utilization > 0 ? report->application_utilization : report->cpu_utilization;
    if (!std::isfinite(util) || !std::isfinite(report->rps_fractional) || util < 0 || report->rps_fractional < 0) {
      return false;
    }
    set_report(util, report->rps_fractional, at_ns);
    return true;
  }
  return false;
}

OutlierStats::Interval OutlierStats::take() noexcept {
  Interval out;
  out.ok = ok_.exchange(0, std::memory_order_relaxed);
  out.failed = failed_.exchange(0, std::memory_order_relaxed);
  out.replied = replied_.exchange(0, std::memory_order_relaxed);
  out.latency_ns = latency_ns_.exchange(0, std::memory_order_relaxed);
  return out;
}

}  // namespace wheelrpc::rpc::detail
