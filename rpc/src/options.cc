#include <wheelrpc/rpc/options.h>

#include <stdexcept>

#include <fmt/format.h>

#include "concurrency_limiter.h"

namespace wheelrpc::rpc {

const char* to_string(LoadBalance lb) noexcept {
  switch (lb) {
    case LoadBalance::round_robin: return "round_robin";
    case LoadBalance::least_active: return "least_active";
    case LoadBalance::power_of_two: return "p2c";
  }
  return "round_robin";
}

std::optional<LoadBalance> parse_load_balance(std::string_view text) noexcept {
  if (text == "round_robin") return LoadBalance::round_robin;
  if (text == "least_active") return LoadBalance::least_active;
  if (text == "p2c" || text == "power_of_two") return LoadBalance::power_of_two;
  return std::nullopt;
}

namespace {
// The wire carries budgets as 32-bit milliseconds (about 49.7 days); longer
// ones would also overflow the clock's arithmetic.
constexpr std::chrono::milliseconds kLongest{0xffffffffLL};
}  // namespace

std::optional<std::string> validate(const CallOptions& o) {
  if (o.retries < 0 || o.retries > CallOptions::kMaxRetries) {
    return fmt::format("CallOptions::retries must be 0 .. {}, got {}", CallOptions::kMaxRetries, o.retries);
  }
  if (o.attempt_timeout.count() < 0 || o.hedge_delay.count() < 0 || o.attempt_timeout > kLongest ||
      o.hedge_delay > kLongest) {
    return fmt::format("CallOptions::attempt_timeout and hedge_delay must be 0 .. {} ms", kLongest.count());
  }
  if (o.timeout > kLongest && o.timeout != CallOptions::kNoDeadline) {
    return fmt::format("CallOptions::timeout must be at most {} ms (or kNoDeadline), got {} ms", kLongest.count(),
                       o.timeout.count());
  }
  if (o.hedge_delay.count() > 0 && !o.idempotent) {
    return std::string("CallOptions::hedge_delay needs an idempotent call (a hedge runs it twice)");
  }
  return std::nullopt;
}

void validate(const ClientOptions& o) {
  if (o.heartbeat.count() <= 0) throw std::invalid_argument("ClientOptions::heartbeat must be > 0");
  if (o.idle_timeout.count() < 0 || (o.idle_timeout.count() > 0 && o.idle_timeout < 2 * o.heartbeat)) {
    throw std::invalid_argument(fmt::format(
        "ClientOptions::idle_timeout must be 0 (3 x heartbeat) or at least 2 x heartbeat, got {} ms with a "
        "heartbeat of {} ms",
        o.idle_timeout.count(), o.heartbeat.count()));
  }
  if (o.connect_timeout.count() <= 0) throw std::invalid_argument("ClientOptions::connect_timeout must be > 0");
  Backoff check(o.reconnect);  // throws on absurd backoff options
  try {
    Backoff retry_check(o.retry.backoff);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("ClientOptions::retry.backoff: ") + e.what());
  }
  if (!(o.retry.budget_ratio >= 0.0 && o.retry.budget_ratio <= 10.0)) {
    throw std::invalid_argument("ClientOptions::retry.budget_ratio must be between 0 and 10");
  }
  if (o.retry.budget_window.count() < 1 || o.retry.budget_window.count() > 600) {
    throw std::invalid_argument("ClientOptions::retry.budget_window must be between 1 and 600 s");
  }
  if (o.failback.interval.count() <= 0) throw std::invalid_argument("ClientOptions::failback.interval must be > 0");
  if (o.max_active_per_provider > o.max_pending_calls) {
    throw std::invalid_argument("ClientOptions::max_active_per_provider must be at most max_pending_calls");
  }
  if (o.removal_grace.count() <= 0 || o.removal_grace > kLongest) {
    throw std::invalid_argument("ClientOptions::removal_grace must be > 0 and at most 0xffffffff ms");
  }
  if (auto problem = transport::tls_options_problem(o.tls, transport::TlsRole::client); !problem.empty()) {
    throw std::invalid_argument("ClientOptions::tls: " + problem);
  }
}

void validate(const ServerOptions& o) {
  if (o.heartbeat.count() <= 0) throw std::invalid_argument("ServerOptions::heartbeat must be > 0");
  if (o.hello_timeout.count() <= 0) throw std::invalid_argument("ServerOptions::hello_timeout must be > 0");
  if (o.close_timeout.count() < 0) throw std::invalid_argument("ServerOptions::close_timeout must be >= 0");
  if (o.unregister_grace.count() < 0 || o.unregister_grace > kLongest) {
    throw std::invalid_argument("ServerOptions::unregister_grace must be 0 .. 0xffffffff ms");
  }
  if (o.queue_interval.count() <= 0 || o.queue_interval > kLongest) {
    throw std::invalid_argument("ServerOptions::queue_interval must be 1 .. 0xffffffff ms");
  }
  if (o.queue_target.count() < 0 || o.queue_target >= o.queue_interval) {
    throw std::invalid_argument("ServerOptions::queue_target must be >= 0 and below queue_interval");
  }
  detail::validate_concurrency_limit(o.max_concurrency);
  if (auto problem = transport::tls_options_problem(o.tls, transport::TlsRole::server); !problem.empty()) {
    throw std::invalid_argument("ServerOptions::tls: " + problem);
  }
}

}  // namespace wheelrpc::rpc
