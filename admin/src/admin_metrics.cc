// GET /metrics: the Prometheus exposition of the server, the clients (summed
// per method and per provider across clients) and the timer.
#include <algorithm>
#include <array>
#include <map>

#include <wheelrpc/admin/exposition.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "admin_core.h"

namespace wheelrpc::admin {
namespace {

HistogramSnapshot to_snapshot(const rpc::LatencyHistogram& h) {
  return HistogramSnapshot{h.bounds, h.counts, h.sum, h.count};
}

/// Adds `b` into `a` (same bounds), for a method called by several clients.
void merge(rpc::MethodStats& a, const rpc::MethodStats& b) {
  for (std::size_t i = 0; i < rpc::kCallCodes; ++i) a.handled[i] += b.handled[i];
  a.in_flight += b.in_flight;
  a.deadline_exceeded += b.deadline_exceeded;
  a.shed += b.shed;
  for (std::size_t i = 0; i < a.latency.counts.size() && i < b.latency.counts.size(); ++i) {
    a.latency.counts[i] += b.latency.counts[i];
  }
  a.latency.count += b.latency.count;
  a.latency.sum += b.latency.sum;
  add_traffic(a.sent, b.sent);
  add_traffic(a.received, b.received);
  a.streams.opened += b.streams.opened;
  a.streams.open += b.streams.open;
  a.streams.messages_in += b.streams.messages_in;
  a.streams.messages_out += b.streams.messages_out;
  for (const auto& e : b.stream_ends) {
    auto it = std::find_if(a.stream_ends.begin(), a.stream_ends.end(),
                           [&](const auto& x) { return x.cause == e.cause && x.code == e.code; });
    if (it != a.stream_ends.end()) {
      it->count += e.count;
    } else {
      a.stream_ends.push_back(e);
    }
  }
}

/// CallCodes in the order their samples are written: by status code, then
/// as CallCode lists them (OK first, each status's details together).
const std::array<rpc::CallCode, rpc::kCallCodes>& exposition_order() {
  static const auto order = [] {
    std::array<rpc::CallCode, rpc::kCallCodes> o{};
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = static_cast<rpc::CallCode>(i);
    std::stable_sort(o.begin(), o.end(), [](rpc::CallCode a, rpc::CallCode b) {
      return static_cast<int>(rpc::call_status(a)) < static_cast<int>(rpc::call_status(b));
    });
    return o;
  }();
  return order;
}

/// `code` is the gRPC status name, `reason` the framework's detail
/// (rpc::CallCode): every pair present for every method, zeros included.
void handled_family(TextExposition& out, std::string_view name, std::string_view help,
                    const std::vector<rpc::MethodStats>& methods) {
  out.begin(name, MetricType::counter, help);
  for (const auto& m : methods) {
    for (const rpc::CallCode c : exposition_order()) {
      out.sample(
          {{"method", m.method}, {"code", rpc::to_string(rpc::call_status(c))}, {"reason", rpc::call_code_name(c)}},
          static_cast<double>(m.handled[static_cast<std::size_t>(c)]));
    }
  }
}

void latency_family(TextExposition& out, std::string_view name, std::string_view help,
                    const std::vector<rpc::MethodStats>& methods) {
  out.begin(name, MetricType::histogram, help);
  for (const auto& m : methods) out.histogram({{"method", m.method}}, to_snapshot(m.latency));
}

/// The payloads of one side ("server", "client") by method and direction
/// (every pair present, zeros included): their bytes to the application,
/// on the wire, and how many went compressed.
void payload_families(TextExposition& out, std::string_view side, const std::vector<rpc::MethodStats>& methods) {
  const std::string prefix = "wheelrpc_" + std::string(side);
  auto family = [&](const std::string& name, std::string_view help, std::uint64_t rpc::PayloadTraffic::*field) {
    out.begin(name, MetricType::counter, help);
    for (const auto& m : methods) {
      out.sample({{"method", m.method}, {"direction", "sent"}}, static_cast<double>(m.sent.*field));
      out.sample({{"method", m.method}, {"direction", "received"}}, static_cast<double>(m.received.*field));
    }
  };
  family(prefix + "_payload_bytes_total",
         "Payload bytes (unary and stream messages) as the application sees them: before compression when sent, "
         "after decompression when received; by method and direction.",
         &rpc::PayloadTraffic::bytes);
  family(prefix + "_payload_wire_bytes_total",
         "The same payloads' bytes on the wire (after compression when sent, before decompression when received; "
         "equal to the payload bytes when uncompressed), by method and direction.",
         &rpc::PayloadTraffic::wire_bytes);
  family(prefix + "_payloads_compressed_total",
         "Payloads (unary and stream messages) that went compressed, by method and direction.",
         &rpc::PayloadTraffic::compressed);
}

/// The streams of one side ("server", "client") by method: open, opened,
/// messages each way, ends by cause and status code. A method is listed
/// once its first stream opened (a unary method has none).
void stream_families(TextExposition& out, std::string_view side, const std::vector<rpc::MethodStats>& methods) {
  const std::string prefix = "wheelrpc_" + std::string(side) + "_streams";
  auto streamed = [](const rpc::MethodStats& m) { return m.streams.opened != 0; };
  out.begin(prefix + "_open", MetricType::gauge, "Streams open now, by method.");
  for (const auto& m : methods) {
    if (streamed(m)) out.sample({{"method", m.method}}, static_cast<double>(m.streams.open));
  }
  out.begin(prefix + "_opened_total", MetricType::counter, "Streams started (a client's: opens attempted), by method.");
  for (const auto& m : methods) {
    if (streamed(m)) out.sample({{"method", m.method}}, static_cast<double>(m.streams.opened));
  }
  out.begin(prefix + "_messages_total", MetricType::counter, "Stream messages, by method and direction.");
  for (const auto& m : methods) {
    if (!streamed(m)) continue;
    out.sample({{"method", m.method}, {"direction", "in"}}, static_cast<double>(m.streams.messages_in));
    out.sample({{"method", m.method}, {"direction", "out"}}, static_cast<double>(m.streams.messages_out));
  }
  out.begin(prefix + "_ended_total", MetricType::counter,
            "Streams ended (each once), by method, gRPC status code and cause: ok, error, cancelled, deadline, "
            "message_idle, write_stall, first_message, connection_lost, refused, protocol, shutdown.");
  for (const auto& m : methods) {
    if (!streamed(m)) continue;
    for (const auto& e : m.stream_ends) {
      out.sample({{"method", m.method}, {"code", rpc::to_string(e.code)}, {"cause", e.cause}},
                 static_cast<double>(e.count));
    }
  }
}

}  // namespace

std::string AdminCore::metrics_text() const {
  TextExposition out;
  if (server_) {
    const auto methods = server_->method_stats();
    const auto stats = server_->stats();
    handled_family(out, "wheelrpc_server_handled_total", "Requests the server completed, by method and outcome code.",
                   methods);
    latency_family(out, "wheelrpc_server_handling_seconds",
                   "Time from reading a request to queueing its reply, by method.", methods);
    out.begin("wheelrpc_server_in_flight", MetricType::gauge, "Requests read and not yet answered, by method.");
    for (const auto& m : methods) out.sample({{"method", m.method}}, static_cast<double>(m.in_flight));
    out.begin("wheelrpc_server_deadline_exceeded_total", MetricType::counter,
              "Requests answered server_timeout because the caller's deadline passed before the handler replied.");
    for (const auto& m : methods) out.sample({{"method", m.method}}, static_cast<double>(m.deadline_exceeded));
    out.begin("wheelrpc_server_shed_total", MetricType::counter,
              "Requests answered server_timeout without running the handler: their deadline passed before it "
              "could start.");
    for (const auto& m : methods) out.sample({{"method", m.method}}, static_cast<double>(m.shed));
    payload_families(out, "server", methods);
    out.begin("wheelrpc_server_undecodable_total", MetricType::counter,
              "Requests and stream messages refused because their compressed payload could not be decoded: an "
              "algorithm the server did not announce, past the body or ratio limit, or corrupt.");
    out.sample({}, static_cast<double>(stats.undecodable));
    out.begin("wheelrpc_server_queued", MetricType::gauge, "Requests waiting for the server's handler executor.");
    out.sample({}, static_cast<double>(stats.queued));
    out.begin("wheelrpc_server_concurrency_limit", MetricType::gauge, "The server's concurrency limit now (0: none).");
    out.sample({}, static_cast<double>(stats.concurrency_limit));
    out.begin("wheelrpc_server_connections", MetricType::gauge, "Connections the server has open.");
    out.sample({}, static_cast<double>(stats.connections));
    stream_families(out, "server", methods);
  }

  rpc::ClientStats sum;  // the clients' counters, summed
  if (!clients_.empty()) {
    std::vector<rpc::MethodStats> methods;  // summed across clients, in the order first seen
    std::map<std::string, std::size_t> index;
    std::map<std::string, std::array<std::uint64_t, 4>> providers;  // ok, failed, cancelled, connect attempts
    for (const auto& nc : clients_) {
      for (auto& m : nc.client->method_stats()) {
        auto [it, fresh] = index.emplace(m.method, methods.size());
        if (fresh) {
          methods.push_back(std::move(m));
        } else {
          merge(methods[it->second], m);
        }
      }
      for (const auto& p : nc.client->providers()) {
        auto& row = providers[p.peer];
        row[0] += p.ok;
        row[1] += p.failures;
        row[2] += p.cancelled;
        row[3] += p.connect_attempts;
      }
      const auto s = nc.client->stats();
      sum.retries += s.retries;
      sum.hedges += s.hedges;
      sum.budget_refusals += s.budget_refusals;
      sum.late_replies += s.late_replies;
      sum.heartbeats_sent += s.heartbeats_sent;
      sum.idle_closes += s.idle_closes;
      sum.rule_updates += s.rule_updates;
      sum.rule_errors += s.rule_errors;
      sum.ejections += s.ejections;
      sum.ejected_now += s.ejected_now;
      sum.load_reports += s.load_reports;
    }
    handled_family(out, "wheelrpc_client_handled_total", "Calls the clients completed, by method and outcome code.",
                   methods);
    latency_family(out, "wheelrpc_client_handling_seconds",
                   "Time from starting a call to its completion (retries included), by method.", methods);
    out.begin("wheelrpc_client_in_flight", MetricType::gauge, "Calls started and not yet completed, by method.");
    for (const auto& m : methods) out.sample({{"method", m.method}}, static_cast<double>(m.in_flight));
    payload_families(out, "client", methods);
    out.begin("wheelrpc_client_attempts_total", MetricType::counter,
              "Attempts sent to each provider, by result: ok (a reply), failed, cancelled (abandoned in flight).");
    for (const auto& [peer, row] : providers) {
      out.sample({{"provider", peer}, {"result", "ok"}}, static_cast<double>(row[0]));
      out.sample({{"provider", peer}, {"result", "failed"}}, static_cast<double>(row[1]));
      out.sample({{"provider", peer}, {"result", "cancelled"}}, static_cast<double>(row[2]));
    }
    out.begin("wheelrpc_client_retries_total", MetricType::counter, "Retries started after a failed attempt.");
    out.sample({}, static_cast<double>(sum.retries));
    out.begin("wheelrpc_client_hedges_total", MetricType::counter,
              "Hedged attempts started while another attempt was in flight.");
    out.sample({}, static_cast<double>(sum.hedges));
    out.begin("wheelrpc_client_retry_budget_refusals_total", MetricType::counter,
              "Retries and hedges the retry budget refused.");
    out.sample({}, static_cast<double>(sum.budget_refusals));
    out.begin("wheelrpc_client_late_replies_total", MetricType::counter,
              "Replies that arrived after their call had completed (dropped).");
    out.sample({}, static_cast<double>(sum.late_replies));
    out.begin("wheelrpc_client_rule_updates_total", MetricType::counter,
              "Runtime rule sets the clients put in force (docs/governance.md).");
    out.sample({}, static_cast<double>(sum.rule_updates));
    out.begin("wheelrpc_client_rule_errors_total", MetricType::counter,
              "Failed reports of the clients' rule sources; the last good rules stood.");
    out.sample({}, static_cast<double>(sum.rule_errors));
    out.begin("wheelrpc_client_ejections_total", MetricType::counter,
              "Providers ejected by the clients' outlier detection (docs/load_balancing.md).");
    out.sample({}, static_cast<double>(sum.ejections));
    out.begin("wheelrpc_client_ejected_providers", MetricType::gauge,
              "Providers the clients' outlier detection keeps out now (ejected or on probation).");
    out.sample({}, static_cast<double>(sum.ejected_now));
    out.begin("wheelrpc_client_load_reports_total", MetricType::counter,
              "Load reports (ORCA) the clients read from replies.");
    out.sample({}, static_cast<double>(sum.load_reports));
    out.begin("wheelrpc_reconnect_attempts_total", MetricType::counter,
              "Connect attempts to each provider (the first one included).");
    for (const auto& [peer, row] : providers) out.sample({{"provider", peer}}, static_cast<double>(row[3]));
    stream_families(out, "client", methods);
  }

  // Channel tasks, by side (each side present only when shown).
  const auto server_stats = server_ ? server_->stats() : rpc::ServerStats{};
  out.begin("wheelrpc_heartbeats_sent_total", MetricType::counter, "Heartbeats sent on idle connections, by side.");
  if (!clients_.empty()) out.sample({{"side", "client"}}, static_cast<double>(sum.heartbeats_sent));
  if (server_) out.sample({{"side", "server"}}, static_cast<double>(server_stats.heartbeats_sent));
  out.begin("wheelrpc_idle_closes_total", MetricType::counter,
            "Connections closed for reading nothing within their idle timeout, by side.");
  if (!clients_.empty()) out.sample({{"side", "client"}}, static_cast<double>(sum.idle_closes));
  if (server_) out.sample({{"side", "server"}}, static_cast<double>(server_stats.idle_closes));

  if (server_) {
    out.begin("wheelrpc_server_aged_connections_total", MetricType::counter,
              "Connections drained at their maximum age (ServerKeepaliveOptions::max_connection_age).");
    out.sample({}, static_cast<double>(server_stats.aged_connections));
    out.begin("wheelrpc_server_age_grace_closes_total", MetricType::counter,
              "Aged connections closed at the end of their grace with a call or stream still open.");
    out.sample({}, static_cast<double>(server_stats.age_grace_closes));
    // Every reason present, zeros included, so a rate() sees the first one.
    out.begin("wheelrpc_server_bad_input_total", MetricType::counter,
              "Connections the server closed for bad input, by reason.");
    const std::pair<const char*, std::uint64_t> reasons[] = {{"bad_magic", server_stats.bad_magic},
                                                             {"bad_version", server_stats.bad_version},
                                                             {"oversize_frame", server_stats.oversize_frames},
                                                             {"malformed_frame", server_stats.malformed_frames},
                                                             {"no_hello", server_stats.no_hello},
                                                             {"hello_timeout", server_stats.hello_timeouts},
                                                             {"http2", server_stats.http2_errors}};
    for (const auto& [reason, n] : reasons) out.sample({{"reason", reason}}, static_cast<double>(n));
  }

  // Connections by side and state, every state present.
  constexpr rpc::ConnectionInfo::State kStates[] = {
      rpc::ConnectionInfo::State::idle, rpc::ConnectionInfo::State::connecting, rpc::ConnectionInfo::State::ready,
      rpc::ConnectionInfo::State::backoff, rpc::ConnectionInfo::State::closing};
  std::array<std::array<std::uint64_t, 5>, 2> by_state{};
  if (server_) {
    for (const auto& c : server_->connections()) ++by_state[1][static_cast<std::size_t>(c.state)];
  }
  for (const auto& nc : clients_) {
    for (const auto& c : nc.client->connections()) ++by_state[0][static_cast<std::size_t>(c.state)];
  }
  out.begin("wheelrpc_connections", MetricType::gauge, "Connections by side and state.");
  for (int side = 0; side < 2; ++side) {
    if (side == 0 && clients_.empty()) continue;
    if (side == 1 && !server_) continue;
    for (auto st : kStates) {
      out.sample({{"side", side == 0 ? "client" : "server"}, {"state", rpc::connection_state_name(st)}},
                 static_cast<double>(by_state[side][static_cast<std::size_t>(st)]));
    }
  }

  const auto t = timer_.stats();
  out.begin("wheelrpc_timer_pending", MetricType::gauge,
            "Timeouts scheduled on the shared timer and not yet run or cancelled.");
  out.sample({}, static_cast<double>(t.pending));
  out.begin("wheelrpc_timer_scheduled_total", MetricType::counter, "Timeouts scheduled on the shared timer.");
  out.sample({}, static_cast<double>(t.scheduled));
  out.begin("wheelrpc_timer_cancelled_total", MetricType::counter, "Timeouts cancelled before they ran.");
  out.sample({}, static_cast<double>(t.cancelled));
  out.begin("wheelrpc_timer_expired_total", MetricType::counter, "Timeouts that reached their deadline and ran.");
  out.sample({}, static_cast<double>(t.expired));
  out.begin("wheelrpc_timer_wakeups_total", MetricType::counter, "Times the timer's worker woke up.");
  out.sample({}, static_cast<double>(t.wakeups));
  // The timer's own lateness buckets: bucket 0 below 1 us, bucket i below 2^i us.
  HistogramSnapshot lateness;
  for (std::size_t i = 0; i + 1 < t.lateness_us.size(); ++i) {
    lateness.bounds.push_back(static_cast<double>(std::uint64_t{1} << i) / 1e6);
  }
  lateness.counts.assign(t.lateness_us.begin(), t.lateness_us.end());
  for (auto c : lateness.counts) lateness.count += c;
  double sum_s = 0;  // bucket midpoints: the timer keeps no exact sum
  for (std::size_t i = 0; i < lateness.counts.size(); ++i) {
    const double lo = i == 0 ? 0 : static_cast<double>(std::uint64_t{1} << (i - 1));
    const double hi = static_cast<double>(std::uint64_t{1} << i);
    sum_s += static_cast<double>(lateness.counts[i]) * (lo + hi) / 2 / 1e6;
  }
  lateness.sum = sum_s;
  out.begin("wheelrpc_timer_lateness_seconds", MetricType::histogram,
            "How late timer tasks started after their tick-rounded deadline (sum from bucket midpoints).");
  out.histogram({}, lateness);
  for (const auto& write : metrics_) write(out);
  return std::move(out).str();
}

}  // namespace wheelrpc::admin
