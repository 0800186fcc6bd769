#include <wheelrpc/rpc/introspection.h>

#include <algorithm>
#include <cmath>

namespace wheelrpc::rpc {

namespace {

// Per CallCode: its reason label and its status. The application's codes
// follow StatusCode's order from CANCELLED, and their reason is one word.
struct CallCodeRow {
  std::string_view reason;
  StatusCode status;
};
constexpr std::size_t kFirstApp = static_cast<std::size_t>(CallCode::app_cancelled);
constexpr CallCodeRow kFramework[kFirstApp] = {
    {"ok", StatusCode::ok},
    {"timeout", StatusCode::deadline_exceeded},
    {"server_timeout", StatusCode::deadline_exceeded},
    {"connection_lost", StatusCode::unavailable},
    {"unavailable", StatusCode::unavailable},
    {"method_not_found", StatusCode::unimplemented},
    {"bad_request", StatusCode::invalid_argument},
    {"server_error", StatusCode::unknown},
    {"cancelled", StatusCode::cancelled},
    {"too_many_pending", StatusCode::resource_exhausted},
    {"resource_exhausted", StatusCode::resource_exhausted},
    {"aborted", StatusCode::cancelled},
    {"other", StatusCode::unknown},
    {"stream_misuse", StatusCode::failed_precondition},
};
static_assert(kFirstApp + kStatusCodes - 1 == kCallCodes, "one application code per StatusCode but OK");
static_assert(static_cast<std::size_t>(CallCode::app_unauthenticated) == kCallCodes - 1);

}  // namespace

std::string_view call_code_name(CallCode code) noexcept {
  const auto i = static_cast<std::size_t>(code);
  if (i < kFirstApp) return kFramework[i].reason;
  return i < kCallCodes ? std::string_view("application") : std::string_view("other");
}

StatusCode call_status(CallCode code) noexcept {
  const auto i = static_cast<std::size_t>(code);
  if (i < kFirstApp) return kFramework[i].status;
  return i < kCallCodes ? static_cast<StatusCode>(i - kFirstApp + 1) : StatusCode::unknown;
}

CallCode application_code(StatusCode code) noexcept {
  const int v = static_cast<int>(code);
  if (v <= 0 || v >= kStatusCodes) return v == 0 ? CallCode::ok : CallCode::app_unknown;
  return static_cast<CallCode>(kFirstApp + static_cast<std::size_t>(v) - 1);
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

double LatencyHistogram::quantile(double q, double lo, double hi) const noexcept {
  const double v = quantile(q);
  if (count == 0 || hi < lo) return v;
  return std::clamp(v, lo, hi);
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
