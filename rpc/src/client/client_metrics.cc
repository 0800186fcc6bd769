#include "client/client_metrics.h"

#include <wheelrpc/rpc/errc.h>

#include <fmt/format.h>

#include "client/call.h"
#include "base/log.h"

namespace wheelrpc::rpc::detail {

void ClientMetrics::count_failed(const boost::system::error_code& ec) noexcept {
  failed.fetch_add(1, std::memory_order_relaxed);
  if (ec == errc::timeout) timeouts.fetch_add(1, std::memory_order_relaxed);
}

std::string timeout_source(const Call& call) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(call.plan.budget).count();
  if (call.timeout_origin) return fmt::format("timeout {} ms ({})", ms, *call.timeout_origin);
  return fmt::format("timeout {} ms ({})", ms, to_string(call.timeout_layer));
}

void ClientMetrics::record_timeout(const Call& call, std::string_view provider, CallCode code, TimePoint t,
                                   std::string timeline, bool connecting) {
  TimeoutRecord r;
  r.timeline = std::move(timeline);
  r.time = std::chrono::system_clock::now();
  r.method = call.method;
  r.provider = provider;
  r.code = code;
  if (code == CallCode::server_timeout) {
    r.phase = TimeoutPhase::server;
  } else if (call.timeout_phase) {
    r.phase = *call.timeout_phase;
  } else if (!call.live.empty()) {
    r.phase = TimeoutPhase::sent_waiting;
  } else {
    r.phase =
        call.phase != Call::Phase::backoff && connecting ? TimeoutPhase::connecting : TimeoutPhase::waiting_to_send;
  }
  r.budget = call.plan.has_deadline ? std::chrono::duration_cast<std::chrono::microseconds>(call.plan.budget)
                                    : std::chrono::microseconds(0);
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(t - call.start);
  r.attempts = call.attempts;
  r.trace_id = call.trace.trace_id_hex();
  if (call.plan.has_deadline && !call.inherited) r.timeout_source = timeout_source(call);
  logger()->debug("call '{}' ended {} ({}) after {} us, {} attempt(s), provider {} trace={}", r.method,
                  call_code_name(code), timeout_phase_name(r.phase), r.elapsed.count(), r.attempts,
                  r.provider.empty() ? "-" : r.provider, r.trace_id);
  timeout_log.add(std::move(r));
}

void ClientMetrics::fill(ClientStats& s) const noexcept {
  auto get = [](const Counter& a) { return a.load(std::memory_order_relaxed); };
  s.ok = hot_.value(kOkCounter);
  s.failed = get(failed);
  s.pending = get(pending);
  s.calls = s.ok + s.failed + s.pending;
  s.timeouts = get(timeouts);
  s.late_replies = get(late);
  s.connects = get(connects);
  s.connect_failures = get(connect_failures);
  s.attempts = hot_.value(kAttemptsCounter);
  s.retries = get(retries);
  s.hedges = get(hedges);
  s.budget_refusals = get(refusals);
  s.attempts_unplaced = get(attempts_unplaced);
  s.attempts_cancelled = get(cancelled_attempts);
  s.attempt_timeouts = get(attempt_timeouts);
  s.provider_sets = get(provider_sets);
  s.providers_added = get(providers_added);
  s.providers_removed = get(providers_removed);
  s.empty_sets_ignored = get(empty_sets_ignored);
  s.rule_updates = get(rule_updates);
  s.rule_errors = get(rule_errors);
  s.load_reports = get(load_reports);
  s.heartbeats_sent = get(forgotten_heartbeats);
  s.idle_closes = get(forgotten_idle_closes);
}

}  // namespace wheelrpc::rpc::detail
