#include "client/provider_review.h"

#include <algorithm>
#include <cmath>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "base/log.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

/// The median of `v` (not empty); the mean of the middle two for an even size.
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/// Providers that answered more than this long ago are reported as not
/// current: their load factor goes back to full (a healed provider is tried).
constexpr int kForgetAfterQuietReviews = 10;
/// A load report older than this is not used.
constexpr std::int64_t kReportFreshNs = 10'000'000'000;
/// The least share of its weight a provider keeps under load-aware balancing
/// (per mille): enough attempts to notice when it recovers.
constexpr std::uint32_t kMinLoadFactor = 10;

}  // namespace

ProviderReview::ProviderReview(asio::any_io_executor ex, timer::Timer& timer, const timer::Clock* clock,
                               OutlierDetectionOptions options, bool eject)
    : ex_(std::move(ex)),
      timer_(timer),
      clock_(clock),
      options_(options),
      eject_(eject),
      period_(eject ? options.interval : milliseconds(500)) {}

void ProviderReview::start() { schedule_review(); }

void ProviderReview::schedule_review() {
  {
    common::LockGuard lock(mu_);
    if (closed_) return;  // the client closed: its timer may be going away
  }
  // The timer's worker only posts the review.
  std::error_code ec;
  auto t = timer_.new_timeout(
      [weak = weak_from_this()] {
        auto self = weak.lock();
        if (!self) return;
        common::WorkGate::Scope in(self->gate_);
        if (!in) return;
        asio::post(self->ex_, [self] {
          self->review(self->now());
          self->schedule_review();
        });
      },
      period_, ec);
  common::LockGuard lock(mu_);
  if (closed_) {
    t.cancel();
    return;
  }
  if (ec) {
    logger()->error("provider review: cannot schedule the next review: {}", ec.message());
    return;
  }
  next_ = std::move(t);
}

void ProviderReview::track(const std::vector<Reviewed>& providers) {
  common::LockGuard lock(mu_);
  if (closed_) return;
  std::map<const OutlierStats*, Entry> next;
  for (const auto& p : providers) {
    auto it = entries_.find(p.stats.get());
    if (it != entries_.end()) {
      next.emplace(p.stats.get(), std::move(it->second));
      entries_.erase(it);
    } else {
      Entry e;
      e.stats = p.stats;
      e.peer = p.peer;
      next.emplace(p.stats.get(), std::move(e));
    }
  }
  // Those that left: their ejection ends with them (one that comes back
  // starts healthy).
  for (auto& [key, e] : entries_) {
    e.ends.cancel();
    if (auto stats = e.stats.lock()) stats->set_state(OutlierStats::State::healthy);
  }
  entries_ = std::move(next);
}

std::size_t ProviderReview::ejected_locked() const {
  std::size_t n = 0;
  for (const auto& [key, e] : entries_) {
    if (auto stats = e.stats.lock(); stats && stats->state() != OutlierStats::State::healthy) ++n;
  }
  return n;
}

std::size_t ProviderReview::max_ejected_locked() const { return entries_.size() * options_.max_ejection_percent / 100; }

void ProviderReview::eject_locked(Entry& e, OutlierStats& stats, std::string why, TimePoint t) {
  e.in_a_row = std::min(e.in_a_row + 1, 30u);
  auto length = options_.base_ejection_time;
  for (unsigned i = 1; i < e.in_a_row && length < options_.max_ejection_time; ++i) length *= 2;
  length = std::min(length, options_.max_ejection_time);
  e.until = t + length;
  e.why = std::move(why);
  ++e.ejections;
  ++ejections_;
  stats.set_state(OutlierStats::State::ejected);
  logger()->warn("peer={} ejected for {} ms: {} (ejection {} in a row)", e.peer, length.count(), e.why, e.in_a_row);
  // The timer's worker only posts the ejection's end.
  std::error_code ec;
  e.ends = timer_.new_timeout(
      [weak = weak_from_this(), key = &stats, n = e.ejections] {
        auto self = weak.lock();
        if (!self) return;
        common::WorkGate::Scope in(self->gate_);
        if (!in) return;
        asio::post(self->ex_, [self, key, n] { self->end_ejection(key, n); });
      },
      length, ec);
  if (ec) {
    // No timer (the client is closing): nothing would end it.
    stats.set_state(OutlierStats::State::healthy);
    logger()->error("peer={}: cannot schedule the end of its ejection ({}): not ejected", e.peer, ec.message());
  }
}

void ProviderReview::end_ejection(const OutlierStats* key, std::uint64_t ejection) {
  common::LockGuard lock(mu_);
  if (closed_) return;
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.ejections != ejection) return;  // it left, or was ejected anew
  auto stats = it->second.stats.lock();
  if (!stats || stats->state() != OutlierStats::State::ejected) return;
  stats->set_state(OutlierStats::State::probation);
  logger()->info("peer={} on probation: {} good attempt(s) in a row bring it back", it->second.peer,
                 options_.probe_successes);
}

void ProviderReview::on_verdict(std::shared_ptr<OutlierStats> stats, OutlierStats::Verdict v) {
  if (!eject_ || v == OutlierStats::Verdict::none) return;
  asio::post(ex_, [self = shared_from_this(), stats = std::move(stats), v] { self->act(stats, v); });
}

void ProviderReview::act(const std::shared_ptr<OutlierStats>& stats, OutlierStats::Verdict v) {
  common::LockGuard lock(mu_);
  if (closed_) return;
  auto it = entries_.find(stats.get());
  if (it == entries_.end()) return;  // it left the set
  Entry& e = it->second;
  const auto state = stats->state();
  const auto t = now();
  switch (v) {
    case OutlierStats::Verdict::look_now:
      if (state != OutlierStats::State::healthy) return;
      if (ejected_locked() >= max_ejected_locked()) {
        logger()->warn("peer={}: {} failed attempts in a row, not ejected: max_ejection_percent ({} %) reached", e.peer,
                       options_.consecutive_failures, options_.max_ejection_percent);
        return;
      }
      eject_locked(e, *stats, fmt::format("{} failed attempts in a row", options_.consecutive_failures), t);
      return;
    case OutlierStats::Verdict::probe_ok:
      if (state != OutlierStats::State::probation) return;
      stats->set_state(OutlierStats::State::healthy);
      e.healthy_since = t;
      logger()->info("peer={} back to its full share after {} good attempt(s) on probation", e.peer,
                     options_.probe_successes);
      return;
    case OutlierStats::Verdict::probe_failed:
      if (state != OutlierStats::State::probation) return;
      eject_locked(e, *stats, "a probe attempt failed or was too slow; before: " + e.why.substr(0, 200), t);
      return;
    case OutlierStats::Verdict::none: return;
  }
}

void ProviderReview::review(TimePoint t) {
  common::LockGuard lock(mu_);
  if (closed_) return;
  struct Judged {
    Entry* e;
    std::shared_ptr<OutlierStats> stats;
    OutlierStats::Interval iv;
  };
  std::vector<Judged> all;
  all.reserve(entries_.size());
  for (auto& [key, e] : entries_) {
    auto stats = e.stats.lock();
    if (!stats) continue;
    auto iv = stats->take();
    if (iv.replied > 0) {
      const double mean = static_cast<double>(iv.latency_ns) / static_cast<double>(iv.replied);
      e.latency_ns = e.latency_ns == 0 ? mean : (e.latency_ns + mean) / 2;
      e.quiet = 0;
    } else if (++e.quiet >= kForgetAfterQuietReviews) {
      e.latency_ns = 0;
    }
    if (stats->state() == OutlierStats::State::healthy && e.in_a_row > 0 &&
        t - e.healthy_since >= options_.base_ejection_time) {
      --e.in_a_row;  // a full base ejection time healthy: its next ejection is shorter
      e.healthy_since = t;
    }
    all.push_back({&e, std::move(stats), iv});
  }
  if (eject_) {
    const auto gap_ns = static_cast<double>(duration_cast<nanoseconds>(options_.latency_gap).count());
    const double factor = options_.relative_factor;
    auto judged = [&](const Judged& j) {
      return j.stats->state() == OutlierStats::State::healthy && j.iv.ended() >= options_.minimum_requests;
    };
    struct Candidate {
      Judged* j;
      double severity;  // failures first (1 + rate), then latency (its ratio to the peers', below 1)
      std::string why;
    };
    std::vector<Candidate> candidates;
    for (auto& j : all) {
      if (!judged(j)) continue;
      const double rate = static_cast<double>(j.iv.failed) / static_cast<double>(j.iv.ended());
      std::vector<double> peer_rates, peer_latency;
      for (const auto& p : all) {
        if (&p == &j || !judged(p)) continue;
        peer_rates.push_back(static_cast<double>(p.iv.failed) / static_cast<double>(p.iv.ended()));
        if (p.iv.replied >= options_.minimum_requests) {
          peer_latency.push_back(static_cast<double>(p.iv.latency_ns) / static_cast<double>(p.iv.replied));
        }
      }
      const double peers_rate = peer_rates.empty() ? 0.0 : median_of(peer_rates);
      if (options_.failure_percentage != 0 && rate * 100 >= options_.failure_percentage) {
        candidates.push_back({&j, 1 + rate,
                              fmt::format("failed {} of {} attempts ({:.0f} %) in {} ms", j.iv.failed, j.iv.ended(),
                                          rate * 100, period_.count())});
        continue;
      }
      if (options_.relative_failure_floor != 0 && !peer_rates.empty() &&
          rate * 100 >= options_.relative_failure_floor && rate >= factor * peers_rate) {
        candidates.push_back({&j, 1 + rate,
                              fmt::format("failed {} of {} attempts ({:.0f} %), its peers' median {:.1f} %",
                                          j.iv.failed, j.iv.ended(), rate * 100, peers_rate * 100)});
        continue;
      }
      if (gap_ns > 0 && j.iv.replied >= options_.minimum_requests && !peer_latency.empty()) {
        const double mean = static_cast<double>(j.iv.latency_ns) / static_cast<double>(j.iv.replied);
        const double peers = median_of(peer_latency);
        if (mean >= factor * peers && mean - peers >= gap_ns) {
          candidates.push_back({&j, 1 - peers / mean,
                                fmt::format("mean latency {:.1f} ms over {} replies, its peers' median {:.1f} ms",
                                            mean / 1e6, j.iv.replied, peers / 1e6)});
        }
      }
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const Candidate& a, const Candidate& b) { return a.severity > b.severity; });
    for (auto& c : candidates) {
      if (ejected_locked() >= max_ejected_locked()) {
        logger()->warn("peer={} not ejected ({}): max_ejection_percent ({} %) reached", c.j->e->peer, c.why,
                       options_.max_ejection_percent);
        continue;
      }
      eject_locked(*c.j->e, *c.j->stats, std::move(c.why), t);
    }
    // A probe slower than this fails: the healthy providers' latency, as the
    // latency check would judge it.
    std::vector<double> healthy_latency;
    for (const auto& j : all) {
      if (j.stats->state() == OutlierStats::State::healthy && j.e->latency_ns > 0) {
        healthy_latency.push_back(j.e->latency_ns);
      }
    }
    std::int64_t limit = 0;
    if (gap_ns > 0 && !healthy_latency.empty()) {
      const double m = median_of(healthy_latency);
      limit = static_cast<std::int64_t>(std::max(factor * m, m + gap_ns));
    }
    for (const auto& j : all) j.stats->set_probe_latency_limit(limit);
  }
  // Load factors: each provider's capacity relative to the best one's.
  const std::int64_t now_ns = t.time_since_epoch().count();
  std::vector<double> by_latency(all.size(), 0.0), by_report(all.size(), 0.0);
  double best_latency = 0, best_report = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& o = *all[i].stats;
    if (all[i].e->latency_ns > 0) by_latency[i] = 1e9 / all[i].e->latency_ns;
    const auto at = o.report_at_ns();
    const double util = o.report_utilization(), rps = o.report_rps();
    if (at != 0 && now_ns - at < kReportFreshNs && util > 0.01 && rps > 0) by_report[i] = rps / util;
    best_latency = std::max(best_latency, by_latency[i]);
    best_report = std::max(best_report, by_report[i]);
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    double f = 1.0;
    const bool lat = by_latency[i] > 0 && best_latency > 0, rep = by_report[i] > 0 && best_report > 0;
    // Latency: (best / own)^2, as brpc's locality-aware weight (throughput /
    // latency) settles at one call in flight; with reports too, the more
    // pessimistic of the two.
    const double by_lat = lat ? (by_latency[i] / best_latency) * (by_latency[i] / best_latency) : 0.0;
    if (lat && rep) {
      f = std::min(by_lat, by_report[i] / best_report);
    } else if (lat) {
      f = by_lat;
    } else if (rep) {
      f = by_report[i] / best_report;
    }
    const auto permille = static_cast<std::uint32_t>(std::lround(std::clamp(f, 0.0, 1.0) * 1000));
    all[i].stats->set_load_factor(std::clamp(permille, kMinLoadFactor, 1000u));
  }
}

ProviderReview::View ProviderReview::view(const OutlierStats& stats) const {
  View v;
  common::LockGuard lock(mu_);
  auto it = entries_.find(&stats);
  if (it == entries_.end()) return v;
  const Entry& e = it->second;
  v.why = e.why;
  v.ejections = e.ejections;
  v.mean_latency_us = static_cast<std::uint64_t>(e.latency_ns / 1000);
  switch (stats.state()) {
    case OutlierStats::State::healthy: break;
    case OutlierStats::State::ejected:
      v.state = "ejected";
      v.for_ms = std::max<std::int64_t>(0, duration_cast<milliseconds>(e.until - now()).count());
      break;
    case OutlierStats::State::probation: v.state = "probation"; break;
  }
  return v;
}

void ProviderReview::fill(const OutlierStats& stats, ProviderStats& out) const {
  auto v = view(stats);
  out.ejection = std::move(v.state);
  out.ejected_why = std::move(v.why);
  out.ejected_for_ms = v.for_ms;
  out.ejections = v.ejections;
  out.mean_latency_us = v.mean_latency_us;
  out.load_factor = stats.load_factor();
  if (stats.report_at_ns() != 0) out.reported_utilization = stats.report_utilization();
}

void ProviderReview::fill(const OutlierStats& stats, ConnectionInfo& out) const {
  auto v = view(stats);
  out.ejection = std::move(v.state);
  out.ejected_why = std::move(v.why);
  out.ejected_for_ms = v.for_ms;
}

std::uint64_t ProviderReview::ejections() const {
  common::LockGuard lock(mu_);
  return ejections_;
}

std::uint64_t ProviderReview::ejected_now() const {
  common::LockGuard lock(mu_);
  return ejected_locked();
}

void ProviderReview::close() {
  {
    common::LockGuard lock(mu_);
    if (closed_) return;
    closed_ = true;
    next_.cancel();
    for (auto& [key, e] : entries_) e.ends.cancel();
  }
  gate_.close_and_wait();
}

}  // namespace wheelrpc::rpc::detail
