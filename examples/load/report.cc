#include "load/report.h"

#include <cstdio>
#include <map>
#include <string>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "load/text_histogram.h"
#include "support/json_line.h"

namespace wheelrpc::examples::load {

namespace json = boost::json;
using support::JsonLine;

namespace {

/// {"name":count,...}, names in order.
json::object errors_json(const std::map<std::string, std::uint64_t>& errors) {
  json::object o;
  for (const auto& [name, n] : errors) o[name] = n;
  return o;
}
json::object errors_json(const Tally& tally) { return errors_json(tally.errors); }

/// [{"peer":"ip:port","attempts":N,"failures":N,"removed":B,"ok":N,
/// "cancelled":N,"in_flight":N,"ejections":N,"ejection":"","load_factor":N},...]:
/// every provider ever in the set, in the
/// order first seen (--server order for a fixed list); "removed": it is no
/// longer in the set. attempts = ok + failures + cancelled + in_flight.
json::array providers_json(const std::vector<rpc::ProviderStats>& providers) {
  json::array a;
  for (const auto& p : providers) {
    a.push_back(json::object{{"peer", p.peer},
                             {"attempts", p.attempts},
                             {"failures", p.failures},
                             {"removed", p.removed},
                             {"ok", p.ok},
                             {"cancelled", p.cancelled},
                             {"in_flight", p.active},
                             {"ejections", p.ejections},
                             {"ejection", p.ejection},
                             {"load_factor", p.load_factor}});
  }
  return a;
}

/// {"name":"the message of its first failed call",...}
json::object examples_json(const std::map<std::string, std::string>& examples) {
  json::object o;
  for (const auto& [name, message] : examples) o[name] = message;
  return o;
}
json::object examples_json(const Tally& tally) { return examples_json(tally.examples); }

using ull = unsigned long long;

/// {"elapsed_s":S,"ok_per_s":R,"attempts":{"ip:port":N,...}}: what came after
/// --warmup-s; null without it (or a run shorter than it).
json::value warm_json(const Summary& s) {
  if (!s.warm) return nullptr;
  json::object attempts;
  for (const auto& [peer, n] : s.warm->attempts) attempts[peer] = n;
  return json::object{{"elapsed_s", s.warm->elapsed_s},
                      {"ok_per_s", static_cast<double>(s.warm->ok) / s.warm->elapsed_s},
                      {"attempts", std::move(attempts)}};
}

}  // namespace

void print_progress(const Config& cfg, const Tally& tally, const Progress& p) {
  if (cfg.json) {
    JsonLine()
        .num("t_ms", static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(p.elapsed).count()))
        .num("ok", static_cast<ull>(tally.ok))
        .value("errors", errors_json(tally))
        .num("providers_now", p.providers_now)
        .print();
    return;
  }
  std::printf("[%6.1f s] %llu ok, %llu failed, %zu in flight, %.0f ok calls/s, %llu connects, %zu providers\n",
              std::chrono::duration<double>(p.elapsed).count(), static_cast<ull>(tally.ok),
              static_cast<ull>(tally.total_errors()), p.in_flight, p.ok_per_s, static_cast<ull>(p.connects),
              p.providers_now);
  std::fflush(stdout);
}

void print_summary(const Config& cfg, const Tally& tally, const Summary& s) {
  const std::uint64_t failed = tally.total_errors() - tally.timeouts;
  const double overrun_ms = std::chrono::duration<double, std::milli>(tally.max_overrun).count();
  const double rate = static_cast<double>(tally.ok) / s.elapsed_s;
  const double p50 = tally.latency_us.quantile(0.50);
  const double p99 = tally.latency_us.quantile(0.99);
  const char* lb = rpc::to_string(cfg.load_balance);
  if (cfg.json) {
    JsonLine()
        .num("calls", static_cast<ull>(tally.issued))
        .num("ok", static_cast<ull>(tally.ok))
        .num("timeout", static_cast<ull>(tally.timeouts))
        .num("failed", static_cast<ull>(failed))
        .value("errors", errors_json(tally))
        .num("lost", static_cast<ull>(s.lost))
        .num("completed_twice", static_cast<ull>(tally.completed_twice))
        .num("max_overrun_ms", overrun_ms, 3)
        .num("calls_per_s", rate, 0)
        .num("p50_us", p50, 0)
        .num("p99_us", p99, 0)
        .num("elapsed_s", s.elapsed_s, 3)
        .str("method", cfg.method)
        .num("concurrency", cfg.concurrency)
        .num("timeout_ms", static_cast<long long>(cfg.timeout.count()))
        .num("attempts", static_cast<ull>(s.stats.attempts))
        .num("retries", static_cast<ull>(s.stats.retries))
        .num("hedges", static_cast<ull>(s.stats.hedges))
        .num("budget_refusals", static_cast<ull>(s.stats.budget_refusals))
        .num("attempts_unplaced", static_cast<ull>(s.stats.attempts_unplaced))
        .str("lb", lb)
        .value("after_warmup", warm_json(s))
        .value("providers", providers_json(s.providers))
        .value("error_examples", examples_json(tally))
        .value("heartbeat_ms", s.heartbeats.empty() ? json::value(nullptr)
                                                    : json::value(static_cast<long long>(s.heartbeats.back().count())))
        .print();
    return;
  }
  std::printf(
      "\n%llu calls in %.2f s: %llu ok, %llu timed out, %llu failed otherwise, %llu lost, "
      "%llu completed twice\n",
      static_cast<ull>(tally.issued), s.elapsed_s, static_cast<ull>(tally.ok), static_cast<ull>(tally.timeouts),
      static_cast<ull>(failed), static_cast<ull>(s.lost), static_cast<ull>(tally.completed_twice));
  if (tally.ok > 0) std::printf("  ok calls: %.0f/s, latency p50 %.0f us, p99 %.0f us\n", rate, p50, p99);
  if (s.warm) {
    std::printf("  after the warm-up: %.0f ok calls/s over %.2f s (the latencies above count only these)\n",
                static_cast<double>(s.warm->ok) / s.warm->elapsed_s, s.warm->elapsed_s);
  }
  if (!tally.errors.empty()) {
    std::printf("  errors by code:");
    for (const auto& [name, n] : tally.errors) std::printf(" %s=%llu", name.c_str(), static_cast<ull>(n));
    std::printf("\n");
  }
  std::printf("  latest completion after its deadline: %.1f ms\n", overrun_ms);
  std::printf("  attempts: %llu (%llu retries, %llu hedges, %llu budget refusals), lb %s\n",
              static_cast<ull>(s.stats.attempts), static_cast<ull>(s.stats.retries), static_cast<ull>(s.stats.hedges),
              static_cast<ull>(s.stats.budget_refusals), lb);
  // Attempts, not calls: they add up to the line above.
  for (const auto& p : s.providers) {
    std::printf("  provider %s: %llu attempts: %llu ok, %llu failed, %llu cancelled", p.peer.c_str(),
                static_cast<ull>(p.attempts), static_cast<ull>(p.ok), static_cast<ull>(p.failures),
                static_cast<ull>(p.cancelled));
    if (p.active > 0) std::printf(", %llu in flight", static_cast<ull>(p.active));
    if (p.ejections > 0) {
      std::printf(", ejected %llu times%s%s", static_cast<ull>(p.ejections), p.ejection.empty() ? "" : ", now ",
                  p.ejection.c_str());
    }
    if (p.load_factor < 1000) std::printf(", load factor %u/1000", p.load_factor);
    std::printf("%s\n", p.removed ? " (left the set)" : "");
  }
  if (s.stats.attempts_unplaced > 0) {
    std::printf("  no provider to send to: %llu attempts, failed at once (unavailable)\n",
                static_cast<ull>(s.stats.attempts_unplaced));
  }
  if (s.heartbeats.empty()) {
    std::printf("  heartbeat: none agreed (no connection open at the end); proposed %lld ms\n",
                static_cast<long long>(s.proposed_heartbeat.count()));
  } else {
    std::string agreed;
    for (const auto& h : s.heartbeats) agreed += (agreed.empty() ? "" : ", ") + std::to_string(h.count()) + " ms";
    std::printf("  heartbeat: %s agreed (the larger of this client's %lld ms and the server's)\n", agreed.c_str(),
                static_cast<long long>(s.proposed_heartbeat.count()));
  }
  if (!tally.examples.empty()) {
    std::printf("  an example of each error:\n");
    for (const auto& [name, message] : tally.examples) std::printf("    %s: %s\n", name.c_str(), message.c_str());
  }
  if (s.lost > 0) std::printf("  LOST: %llu calls never completed\n", static_cast<ull>(s.lost));
  if (tally.completed_twice > 0) {
    std::printf("  BUG: %llu calls completed more than once\n", static_cast<ull>(tally.completed_twice));
  }
  std::printf("%s\n", text_histogram(tally.latency_us, std::chrono::microseconds(1)).c_str());
  std::fflush(stdout);
}

void print_stream_progress(const Config& cfg, const StreamTally& tally, const StreamProgress& p) {
  if (cfg.json) {
    JsonLine()
        .num("t_ms", static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(p.elapsed).count()))
        .num("streams", static_cast<ull>(tally.streams))
        .num("streams_ok", static_cast<ull>(tally.ok))
        .value("errors", errors_json(tally.errors))
        .num("open", p.open)
        .print();
    return;
  }
  std::printf("[%6.1f s] %llu streams: %llu ok, %llu failed, %zu open; %llu messages sent, %llu received\n",
              std::chrono::duration<double>(p.elapsed).count(), static_cast<ull>(tally.streams),
              static_cast<ull>(tally.ok), static_cast<ull>(tally.total_errors()), p.open,
              static_cast<ull>(tally.messages_sent), static_cast<ull>(tally.messages_received));
  std::fflush(stdout);
}

void print_stream_summary(const Config& cfg, const StreamTally& tally, double elapsed_s) {
  const double max_gap_ms = std::chrono::duration<double, std::milli>(tally.max_gap).count();
  if (cfg.json) {
    JsonLine()
        .str("method", cfg.method)
        .num("streams", static_cast<ull>(tally.streams))
        .num("streams_ok", static_cast<ull>(tally.ok))
        .num("messages_sent", static_cast<ull>(tally.messages_sent))
        .num("messages_received", static_cast<ull>(tally.messages_received))
        .num("max_gap_ms", max_gap_ms)
        .value("errors", errors_json(tally.errors))
        .num("lost", static_cast<ull>(tally.lost))
        .num("completed_twice", static_cast<ull>(tally.completed_twice))
        .value("error_examples", examples_json(tally.examples))
        .num("elapsed_s", elapsed_s)
        .print();
    return;
  }
  std::printf("\n%llu %s streams in %.2f s: %llu ok, %llu failed, %llu lost, %llu completed twice\n",
              static_cast<ull>(tally.streams), cfg.method.c_str(), elapsed_s, static_cast<ull>(tally.ok),
              static_cast<ull>(tally.total_errors()), static_cast<ull>(tally.lost),
              static_cast<ull>(tally.completed_twice));
  std::printf("  messages: %llu sent, %llu received; longest wait between two messages of a stream: %.1f ms\n",
              static_cast<ull>(tally.messages_sent), static_cast<ull>(tally.messages_received), max_gap_ms);
  if (!tally.errors.empty()) {
    std::printf("  errors by code:");
    for (const auto& [name, n] : tally.errors) std::printf(" %s=%llu", name.c_str(), static_cast<ull>(n));
    std::printf("\n");
    std::printf("  an example of each error:\n");
    for (const auto& [name, message] : tally.examples) std::printf("    %s: %s\n", name.c_str(), message.c_str());
  }
  if (tally.lost > 0) std::printf("  LOST: %llu streams whose end never completed\n", static_cast<ull>(tally.lost));
  if (tally.completed_twice > 0) {
    std::printf("  BUG: %llu ends completed more than once\n", static_cast<ull>(tally.completed_twice));
  }
  std::fflush(stdout);
}

}  // namespace wheelrpc::examples::load
