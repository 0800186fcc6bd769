// The JSON behind /status, /connections and /timeouts.
#include <cmath>
#include <ctime>

#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "admin_core.h"

namespace wheelrpc::admin {
namespace json = boost::json;

namespace {

/// "2026-11-23T00:40:00.123Z"
std::string iso_time(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms % 1000);
}

/// Milliseconds rounded to the microsecond, for JSON.
double round_ms(double seconds) { return std::round(seconds * 1e6) / 1e3; }

/// count, p50, p99, max (ms). The percentiles are clamped to [lo_s, max_s]
/// (the fastest and slowest calls known): interpolating inside a bucket
/// would otherwise show a p99 above the max.
json::value latency_json(const rpc::LatencyHistogram& h, double lo_s, double max_s) {
  json::object o;
  o["count"] = h.count;
  if (h.count == 0) {
    o["p50"] = nullptr;
    o["p99"] = nullptr;
    o["max"] = nullptr;
  } else {
    o["p50"] = round_ms(h.quantile(0.5, lo_s, max_s));
    o["p99"] = round_ms(h.quantile(0.99, lo_s, max_s));
    o["max"] = round_ms(max_s);
  }
  return o;
}

/// A side's streams, or a method's: open, opened, messages each way.
json::object stream_counts_json(const rpc::StreamStats& s) {
  json::object o;
  o["open"] = s.open;
  o["opened"] = s.opened;
  o["messages_in"] = s.messages_in;
  o["messages_out"] = s.messages_out;
  return o;
}

/// A method's streams: the counts, then how they ended, by cause
/// (`ended`) and by cause and status (`ended_codes`); non-zero ones only.
json::object method_streams_json(const rpc::MethodStats& m) {
  json::object o = stream_counts_json(m.streams);
  json::object ended, codes;
  for (const auto& e : m.stream_ends) {
    if (e.count == 0) continue;
    const std::string cause(e.cause);
    auto& n = ended[cause];
    n = (n.is_null() ? 0 : n.to_number<std::uint64_t>()) + e.count;
    auto& by_code = codes[cause];
    if (!by_code.is_object()) by_code = json::object{};
    by_code.as_object()[rpc::to_string(e.code)] = e.count;
  }
  o["ended"] = std::move(ended);
  o["ended_codes"] = std::move(codes);
  return o;
}

json::value ms_or_null(std::chrono::milliseconds ms) {
  if (ms.count() < 0) return nullptr;
  return ms.count();
}

json::value text_or_null(const std::string& s) {
  if (s.empty()) return nullptr;
  return json::value(s);
}

json::object traffic_json(const rpc::PayloadTraffic& t) {
  json::object o;
  o["bytes"] = t.bytes;
  o["wire_bytes"] = t.wire_bytes;
  o["compressed"] = t.compressed;
  o["ratio"] = std::round(t.ratio() * 100) / 100;
  return o;
}

/// A side's payloads summed over its methods: bytes to the application, on
/// the wire, how many went compressed, and bytes / wire_bytes (1 when none).
json::object compression_json(const std::vector<rpc::MethodStats>& methods) {
  rpc::PayloadTraffic sent, received;
  for (const auto& m : methods) {
    add_traffic(sent, m.sent);
    add_traffic(received, m.received);
  }
  return json::object{{"sent", traffic_json(sent)}, {"received", traffic_json(received)}};
}

}  // namespace

json::array AdminCore::methods_json(const std::vector<rpc::MethodStats>& methods, const std::string& owner,
                                    bool server_side) const {
  json::array out;
  common::LockGuard lock(mu_);
  for (const auto& m : methods) {
    json::object o;
    o["method"] = m.method;
    o["calls"] = m.calls();
    o["ok"] = m.handled[0];
    o["in_flight"] = m.in_flight;
    // Errors by gRPC status, and each status by the framework's detail (the `reason` label).
    json::object errors, reasons;
    for (std::size_t i = 1; i < rpc::kCallCodes; ++i) {
      if (m.handled[i] == 0) continue;
      const auto code = static_cast<rpc::CallCode>(i);
      const std::string status(rpc::to_string(rpc::call_status(code)));
      auto& n = errors[status];
      n = (n.is_null() ? 0 : n.to_number<std::uint64_t>()) + m.handled[i];
      auto& by_reason = reasons[status];
      if (!by_reason.is_object()) by_reason = json::object{};
      by_reason.as_object()[rpc::call_code_name(code)] = m.handled[i];
    }
    o["errors"] = std::move(errors);
    o["error_reasons"] = std::move(reasons);
    if (server_side) o["deadline_exceeded"] = m.deadline_exceeded;
    // Last 10 s: now less the sample taken 10 s ago (or the oldest kept).
    rpc::LatencyHistogram recent = m.latency_fine;
    if (auto it = history_.find(owner + '\n' + m.method); it != history_.end() && !it->second.empty()) {
      recent = m.latency_fine.since(it->second.front());
    }
    json::object latency;
    // The recent max is the upper bound of its slowest bucket, at most the true max so far.
    latency["recent"] = latency_json(recent, m.min_s, std::min(recent.max_bound(), m.max_s));
    latency["total"] = latency_json(m.latency_fine, m.min_s, m.max_s);
    o["latency_ms"] = std::move(latency);
    if (m.streams.opened != 0) o["streams"] = method_streams_json(m);
    out.push_back(std::move(o));
  }
  return out;
}

json::object AdminCore::status_json() const {
  json::object o;
  o["time"] = iso_time(std::chrono::system_clock::now());
  o["uptime_s"] =
      std::round(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() * 10) / 10;
  o["process"] = options_.process_name;
  if (server_) {
    const auto state = server_->state();
    const auto stats = server_->stats();
    const auto ep = server_->local_endpoint();
    json::object s;
    s["endpoint"] = state.listening ? json::value(ep.address().to_string() + ":" + std::to_string(ep.port()))
                                    : json::value(nullptr);
    s["listening"] = state.listening;
    s["online"] = state.online;
    s["draining"] = state.draining;
    s["ready"] = state.ready();
    s["connections"] = stats.connections;
    s["streams"] = stream_counts_json(stats.streams);
    const auto methods = server_->method_stats();
    s["compression"] = compression_json(methods);
    s["methods"] = methods_json(methods, "server", true);
    o["server"] = std::move(s);
  } else {
    o["server"] = nullptr;
  }
  json::array clients;
  for (const auto& c : clients_) {
    const auto stats = c.client->stats();
    std::size_t providers = 0;
    for (const auto& p : c.client->providers()) providers += p.removed ? 0 : 1;
    json::object j;
    j["name"] = c.name;
    j["providers"] = providers;
    j["retries"] = stats.retries;
    j["hedges"] = stats.hedges;
    j["late_replies"] = stats.late_replies;
    j["budget_refusals"] = stats.budget_refusals;
    j["ejections"] = stats.ejections;
    j["ejected_now"] = stats.ejected_now;
    json::array ejected;  // the providers outlier detection keeps out now, with why
    for (const auto& p : c.client->providers()) {
      if (p.ejection.empty()) continue;
      ejected.push_back(
          json::object{{"peer", p.peer},
                       {"state", p.ejection},
                       {"why", p.ejected_why},
                       {"for_ms", p.ejected_for_ms < 0 ? json::value(nullptr) : json::value(p.ejected_for_ms)}});
    }
    j["ejected"] = std::move(ejected);
    j["streams"] = stream_counts_json(stats.streams);
    const auto methods = c.client->method_stats();
    j["compression"] = compression_json(methods);
    j["methods"] = methods_json(methods, "client " + c.name, false);
    clients.push_back(std::move(j));
  }
  o["clients"] = std::move(clients);
  json::array sections;
  for (const auto& [title, values] : sections_) {
    json::array rows;
    for (auto& [name, value] : values()) rows.push_back(json::object{{"name", name}, {"value", value}});
    sections.push_back(json::object{{"title", title}, {"values", std::move(rows)}});
  }
  o["sections"] = std::move(sections);

  const auto t = timer_.stats();
  json::object timer;
  timer["pending"] = t.pending;
  timer["scheduled"] = t.scheduled;
  timer["cancelled"] = t.cancelled;
  timer["expired"] = t.expired;
  timer["wakeups"] = t.wakeups;
  json::array bounds, counts, pending_history;
  std::size_t last = 0;
  for (std::size_t i = 0; i < t.lateness_us.size(); ++i) {
    if (t.lateness_us[i] != 0) last = i;
  }
  for (std::size_t i = 0; i <= std::max<std::size_t>(last, 10) && i < t.lateness_us.size(); ++i) {
    bounds.push_back(std::uint64_t{1} << i);  // bucket 0: < 1 us; bucket i: [2^(i-1), 2^i) us
    counts.push_back(t.lateness_us[i]);
  }
  json::object lateness;
  lateness["bounds_us"] = std::move(bounds);
  lateness["counts"] = std::move(counts);
  lateness["p50_us"] = t.lateness_quantile_us(0.5);
  lateness["p99_us"] = t.lateness_quantile_us(0.99);
  lateness["max_bucket_us"] = t.expired ? json::value(std::uint64_t{1} << last) : json::value(nullptr);
  timer["lateness"] = std::move(lateness);
  {
    common::LockGuard lock(mu_);
    const int n = static_cast<int>(timer_history_.size());
    for (int i = 0; i < n; ++i) {
      pending_history.push_back(json::object{{"t", i - (n - 1)}, {"pending", timer_history_[i].pending}});
    }
    if (n >= 2) {
      const double span_s = n - 1;
      timer["wakeups_per_s"] =
          std::round(static_cast<double>(timer_history_.back().wakeups - timer_history_.front().wakeups) / span_s *
                     10) /
          10;
    } else {
      timer["wakeups_per_s"] = nullptr;
    }
  }
  timer["pending_history"] = std::move(pending_history);
  o["timer"] = std::move(timer);
  return o;
}

json::object AdminCore::connections_json() const {
  json::array rows;
  auto add = [&](const rpc::ConnectionInfo& c, const std::string& owner) {
    json::object r;
    r["side"] = c.server_side ? "server" : "client";
    r["owner"] = owner;
    r["local"] = text_or_null(c.local);
    r["remote"] = text_or_null(c.remote);
    r["state"] = rpc::connection_state_name(c.state);
    r["age_s"] = std::round(static_cast<double>(c.age.count()) / 100) / 10;
    r["bytes_in"] = c.bytes_in;
    r["bytes_out"] = c.bytes_out;
    r["frames_in"] = c.frames_in;
    r["frames_out"] = c.frames_out;
    r["last_read_age_ms"] = c.local.empty() ? json::value(nullptr) : ms_or_null(c.last_read_age);
    r["last_write_age_ms"] = c.local.empty() ? json::value(nullptr) : ms_or_null(c.last_write_age);
    // null where this side sends none (a server with heartbeats off): not a 0 that looks like a fault.
    r["heartbeats_sent"] = c.sends_heartbeats ? json::value(c.heartbeats_sent) : json::value(nullptr);
    r["heartbeat_interval_ms"] = c.heartbeat.count() > 0 ? json::value(c.heartbeat.count()) : json::value(nullptr);
    r["reconnect_attempts"] = c.server_side ? json::value(nullptr) : json::value(c.reconnect_attempts);
    r["next_attempt_in_ms"] = ms_or_null(c.next_attempt_in);
    r["in_flight"] = c.in_flight;
    r["streams"] = c.streams;
    r["protocol"] = c.protocol;
    // Client-side health checking's view of the provider (ClientOptions::health_check); null where off.
    r["health"] = c.health.empty() ? json::value(nullptr) : json::value(c.health);
    // A client's load-balancing weight and its origin ("registry", "rule <origin>", "default"); null otherwise.
    r["weight"] = c.weight_from.empty() ? json::value(nullptr) : json::value(c.weight);
    r["weight_from"] = text_or_null(c.weight_from);
    // Outlier detection (ClientOptions::outlier_detection): "ejected" or "probation", why, and the ms left; null
    // otherwise.
    r["ejection"] = text_or_null(c.ejection);
    r["ejected_why"] = text_or_null(c.ejected_why);
    r["ejected_for_ms"] = ms_or_null(std::chrono::milliseconds(c.ejected_for_ms));
    r["tcp_user_timeout_ms"] = c.user_timeout.count() > 0 ? json::value(c.user_timeout.count()) : json::value(nullptr);
    r["max_age_in_ms"] = ms_or_null(c.max_age_in);
    rows.push_back(std::move(r));
  };
  if (server_) {
    for (const auto& c : server_->connections()) add(c, options_.process_name);
  }
  for (const auto& nc : clients_) {
    for (const auto& c : nc.client->connections()) add(c, nc.name);
  }
  json::object o;
  o["time"] = iso_time(std::chrono::system_clock::now());
  o["connections"] = std::move(rows);
  return o;
}

json::object AdminCore::timeouts_json() const {
  std::vector<rpc::TimeoutRecord> all;
  if (server_) all = server_->recent_timeouts();
  for (const auto& nc : clients_) {
    auto more = nc.client->recent_timeouts();
    all.insert(all.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.time > b.time; });
  if (all.size() > 256) all.resize(256);
  json::array rows;
  for (const auto& t : all) {
    json::object r;
    r["time"] = iso_time(t.time);
    r["side"] = t.server_side ? "server" : "client";
    r["method"] = t.method;
    // The peer, named for what it is: a client's provider, a server's caller.
    r["provider"] = t.server_side ? json::value(nullptr) : text_or_null(t.provider);
    r["caller"] = t.server_side ? text_or_null(t.provider) : json::value(nullptr);
    r["phase"] = rpc::timeout_phase_name(t.phase);
    r["code"] = rpc::call_code_name(t.code);
    r["status"] = rpc::to_string(rpc::call_status(t.code));
    r["budget_ms"] = static_cast<double>(t.budget.count()) / 1000;
    r["elapsed_ms"] = static_cast<double>(t.elapsed.count()) / 1000;
    r["attempts"] = t.attempts;
    r["trace_id"] = text_or_null(t.trace_id);
    r["timeline"] = text_or_null(t.timeline);
    r["stream_timer"] = text_or_null(t.stream_timer);
    r["timeout_source"] = text_or_null(t.timeout_source);
    rows.push_back(std::move(r));
  }
  json::object o;
  o["time"] = iso_time(std::chrono::system_clock::now());
  o["timeouts"] = std::move(rows);
  return o;
}

}  // namespace wheelrpc::admin
