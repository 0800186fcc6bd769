// Subchannel's views and outcome records: what it reports of itself
// (ProviderStats, ConnectionInfo, its last error) and what an attempt's end
// tells outlier detection and load-aware balancing (ProviderReview).
#include <algorithm>

#include "base/method_metrics.h"
#include "client/client_context.h"
#include "client/health_watch.h"
#include "client/provider_review.h"
#include "client/subchannel.h"

namespace wheelrpc::rpc::detail {
using Lock = common::LockGuard<common::SpinLock>;

std::string Subchannel::last_error() const {
  Lock lock(mu_);  // before the watch's (leaf) lock
  return last_error_.empty() && health_ ? health_->why_not_serving() : last_error_;
}

void Subchannel::count_failure(bool provider_fault) noexcept {
  failures_.fetch_add(1, std::memory_order_relaxed);
  const auto& review = ctx_->review;
  if (!review || !provider_fault) return;
  const auto& o = review->options();
  const auto v = outlier_.record(true, -1, review->ejects() ? o.consecutive_failures : 0, o.probe_successes);
  if (v != OutlierStats::Verdict::none) review->on_verdict({shared_from_this(), &outlier_}, v);
}

void Subchannel::note_reply(Status status, std::chrono::nanoseconds latency, const transport::Attachments& attachments,
                            TimePoint received) {
  const auto& review = ctx_->review;
  if (!review) return;
  if (!attachments.empty() && outlier_.read_report(attachments, received.time_since_epoch().count())) {
    ClientMetrics::count(ctx_->metrics.load_reports);
  }
  if (OutlierStats::neutral(status)) return;
  const auto& o = review->options();
  const bool failed = status != Status::ok && OutlierStats::provider_failure(status);  // ok: the common case
  const auto v = outlier_.record(failed, std::max<std::int64_t>(latency.count(), 0),
                                 review->ejects() ? o.consecutive_failures : 0, o.probe_successes);
  if (v != OutlierStats::Verdict::none) review->on_verdict({shared_from_this(), &outlier_}, v);
}

ProviderStats Subchannel::stats() const {
  Lock lock(mu_);
  return ProviderStats{peer_,
                       ready(),
                       active_.load(),
                       attempts_.load(),
                       failures_.load(std::memory_order_relaxed),
                       last_error_,
                       retired_.load(std::memory_order_relaxed),
                       oks_.load(),
                       cancelled_.load(std::memory_order_relaxed),
                       connect_attempts_.load()};
}

void Subchannel::fill_review(ProviderStats& out) const {
  if (ctx_->review) ctx_->review->fill(outlier_, out);
}

ConnectionInfo Subchannel::info(TimePoint t) const {
  ConnectionInfo info;
  std::shared_ptr<transport::Channel> ch;
  {
    Lock lock(mu_);
    if (transport_) {
      ch = transport_->channel();
      info.streams = transport_->open_streams();
    }
    switch (state_) {
      case State::idle:
        info.state =
            failing_.load(std::memory_order_relaxed) ? ConnectionInfo::State::backoff : ConnectionInfo::State::idle;
        if (info.state == ConnectionInfo::State::backoff) {
          info.next_attempt_in = next_attempt_ > t ? std::chrono::ceil<std::chrono::milliseconds>(next_attempt_ - t)
                                                   : std::chrono::milliseconds(0);
        }
        break;
      case State::connecting:
      case State::handshaking: info.state = ConnectionInfo::State::connecting; break;
      case State::ready: info.state = ConnectionInfo::State::ready; break;
    }
    if (retired_.load(std::memory_order_relaxed)) info.state = ConnectionInfo::State::closing;
  }
  info.remote = peer_;
  if (ch) fill_channel_info(info, *ch);
  info.heartbeat = std::chrono::milliseconds(heartbeat_ms_.load(std::memory_order_relaxed));
  info.reconnect_attempts = connect_attempts_.load();
  info.in_flight = active_.load();
  if (health_ && info.state == ConnectionInfo::State::ready) info.health = std::string(health_name(health()));
  if (ctx_->review) ctx_->review->fill(outlier_, info);
  if (ch) info.user_timeout = std::chrono::milliseconds(user_timeout_ms_.load(std::memory_order_relaxed));
  return info;
}

std::optional<transport::Channel::Clock::time_point> Subchannel::last_write() const {
  if (const auto ch = watched_channel_.load()) return ch->last_write();
  return std::nullopt;
}

}  // namespace wheelrpc::rpc::detail
