#include <wheelrpc/rpc/introspection.h>

#include <algorithm>
#include <cmath>

namespace wheelrpc::rpc {

std::string_view call_code_name(CallCode code) noexcept {
  switch (code) {
    case CallCode::ok: return "ok";
    case CallCode::timeout: return "timeout";
    case CallCode::server_timeout: return "server_timeout";
    case CallCode::connection_lost: return "connection_lost";
    case CallCode::unavailable: return "unavailable";
    case CallCode::method_not_found: return "method_not_found";
    case CallCode::bad_request: return "bad_request";
    case CallCode::server_error: return "server_error";
    case CallCode::cancelled: return "cancelled";
    case CallCode::too_many_pending: return "too_many_pending";
    case CallCode::resource_exhausted: return "resource_exhausted";
    case CallCode::aborted: return "aborted";
    case CallCode::other: break;
  }
  return "other";
}

std::string_view timeout_phase_name(TimeoutPhase phase) noexcept {
  switch (phase) {
    case TimeoutPhase::connecting: return "connecting";
    case TimeoutPhase::waiting_to_send: return "waiting to be sent";
    case TimeoutPhase::sent_waiting: return "sent, waiting for the reply";
    case TimeoutPhase::server: return "server timed out";
    case TimeoutPhase::in_handler: return "in the handler";
    case TimeoutPhase::queued: return "queued for the handler";
    case TimeoutPhase::streaming: return "streaming";
  }
  return "unknown";
}

std::string_view connection_state_name(ConnectionInfo::State state) noexcept {
  switch (state) {
    case ConnectionInfo::State::idle: return "idle";
    case ConnectionInfo::State::connecting: return "connecting";
    case ConnectionInfo::State::ready: return "ready";
    case ConnectionInfo::State::backoff: return "backoff";
    case ConnectionInfo::State::closing: return "closing";
  }
  return "unknown";
}

std::uint64_t MethodStats::calls() const noexcept {
  std::uint64_t n = 0;
  for (auto c : handled) n += c;
  return n;
}

double LatencyHistogram::quantile(double q) const noexcept {
  if (count == 0 || counts.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = std::max(1.0, std::ceil(q * static_cast<double>(count)));
  double seen = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    const double before = seen;
    seen += static_cast<double>(counts[i]);
    if (seen >= rank) {
      const double lo = i == 0 ? 0 : bounds[i - 1];
      if (i >= bounds.size()) return lo;  // above every bound: its lower edge is all we know
      const double hi = bounds[i];
      return lo + (hi - lo) * (rank - before) / static_cast<double>(counts[i]);
    }
  }
  return bounds.empty() ? 0 : bounds.back();
}

double LatencyHistogram::max_bound() const noexcept {
  for (std::size_t i = counts.size(); i-- > 0;) {
    if (counts[i] == 0) continue;
    return i < bounds.size() ? bounds[i] : (bounds.empty() ? 0 : bounds.back());
  }
  return 0;
}

LatencyHistogram LatencyHistogram::since(const LatencyHistogram& earlier) const {
  LatencyHistogram out = *this;
  if (earlier.counts.size() != counts.size()) return out;
  out.count = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out.counts[i] = counts[i] >= earlier.counts[i] ? counts[i] - earlier.counts[i] : 0;
    out.count += out.counts[i];
  }
  out.sum = std::max(0.0, sum - earlier.sum);
  return out;
}

}  // namespace wheelrpc::rpc
