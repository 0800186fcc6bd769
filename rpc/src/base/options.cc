#include <wheelrpc/rpc/options.h>

#include <stdexcept>

#include <fmt/format.h>

#include "base/option_checks.h"
#include "base/stream_window.h"

namespace wheelrpc::rpc {

const char* to_string(LoadBalance lb) noexcept {
  switch (lb) {
    case LoadBalance::round_robin: return "round_robin";
    case LoadBalance::least_active: return "least_active";
    case LoadBalance::power_of_two: return "p2c";
    case LoadBalance::load_aware: return "load_aware";
  }
  return "round_robin";
}

std::optional<LoadBalance> parse_load_balance(std::string_view text) noexcept {
  if (text == "round_robin") return LoadBalance::round_robin;
  if (text == "least_active") return LoadBalance::least_active;
  if (text == "p2c" || text == "power_of_two") return LoadBalance::power_of_two;
  if (text == "load_aware") return LoadBalance::load_aware;
  return std::nullopt;
}

namespace {
constexpr std::chrono::milliseconds kLongest = detail::kLongestOption;
}  // namespace

namespace {
// A default the client's options gave fills as Layer::client_default; one
// they left alone fills as the built-in default it is.
template <class T>
void fill_default(Setting<T>& call, const Setting<T>& defaults) noexcept {
  if (call.given()) return;
  call.set(*defaults, defaults.given() ? Layer::client_default : Layer::built_in);
}
}  // namespace

void fill_defaults(CallOptions& call, const CallOptions& defaults) noexcept {
  fill_default(call.timeout, defaults.timeout);
  fill_default(call.wait_for_ready, defaults.wait_for_ready);
  fill_default(call.retries, defaults.retries);
  fill_default(call.idempotent, defaults.idempotent);
  fill_default(call.attempt_timeout, defaults.attempt_timeout);
  fill_default(call.hedge_delay, defaults.hedge_delay);
  fill_default(call.stream_timeout, defaults.stream_timeout);
  fill_default(call.message_timeout, defaults.message_timeout);
  fill_default(call.stall_timeout, defaults.stall_timeout);
  fill_default(call.first_message_timeout, defaults.first_message_timeout);
  fill_default(call.compression, defaults.compression);
  fill_default(call.compression_level, defaults.compression_level);
}

std::optional<std::string> validate(const CallOptions& o) {
  if (o.retries < 0 || o.retries > CallOptions::kMaxRetries) {
    return fmt::format("CallOptions::retries must be 0 .. {}, got {}", CallOptions::kMaxRetries, *o.retries);
  }
  if (o.attempt_timeout->count() < 0 || o.hedge_delay->count() < 0 || o.attempt_timeout > kLongest ||
      o.hedge_delay > kLongest) {
    return fmt::format("CallOptions::attempt_timeout and hedge_delay must be 0 .. {} ms", kLongest.count());
  }
  for (const auto* t : {&o.stream_timeout, &o.message_timeout, &o.stall_timeout, &o.first_message_timeout}) {
    if ((*t)->count() < 0 || **t > kLongest) {
      return fmt::format(
          "CallOptions' stream timeouts (stream_timeout, message_timeout, stall_timeout, "
          "first_message_timeout) must be 0 .. {} ms, got {} ms",
          kLongest.count(), (*t)->count());
    }
  }
  if (o.timeout > kLongest && o.timeout != CallOptions::kNoDeadline) {
    return fmt::format("CallOptions::timeout must be at most {} ms (or kNoDeadline), got {} ms", kLongest.count(),
                       o.timeout->count());
  }
  if (o.hedge_delay->count() > 0 && !o.idempotent) {
    return std::string("CallOptions::hedge_delay needs an idempotent call (a hedge runs it twice)");
  }
  if (static_cast<int>(*o.compression) >= transport::kCompressionCount) {
    return fmt::format("CallOptions::compression must be identity, zstd, lz4, gzip or deflate, got {}",
                       static_cast<int>(*o.compression));
  }
  return std::nullopt;
}

std::string detail::compression_problem(const CompressionOptions& o) {
  if (o.threshold > (1u << 30)) return fmt::format("threshold must be at most 1073741824 bytes, got {}", o.threshold);
  if (o.accept.bits() != transport::CompressionSet::from_bits(o.accept.bits()).bits()) {
    return "accept holds an unknown algorithm";
  }
  return {};
}

std::string detail::outlier_problem(const OutlierDetectionOptions& o) {
  const auto longest = detail::kLongestOption;
  if (o.interval.count() <= 0 || o.interval > longest) return "interval must be 1 .. 0xffffffff ms";
  if (o.base_ejection_time.count() <= 0 || o.base_ejection_time > longest) {
    return "base_ejection_time must be 1 .. 0xffffffff ms";
  }
  if (o.max_ejection_time < o.base_ejection_time || o.max_ejection_time > longest) {
    return "max_ejection_time must be base_ejection_time .. 0xffffffff ms";
  }
  if (o.max_ejection_percent > 100)
    return fmt::format("max_ejection_percent must be 0..100, got {}", o.max_ejection_percent);
  if (o.failure_percentage > 100) return fmt::format("failure_percentage must be 0..100, got {}", o.failure_percentage);
  if (o.relative_failure_floor > 100) {
    return fmt::format("relative_failure_floor must be 0..100, got {}", o.relative_failure_floor);
  }
  if (!(o.relative_factor >= 1.5 && o.relative_factor <= 1000.0)) {
    return fmt::format("relative_factor must be 1.5 .. 1000, got {}", o.relative_factor);
  }
  if (o.latency_gap.count() < 0 || o.latency_gap > longest) return "latency_gap must be 0 .. 0xffffffff ms";
  if (o.minimum_requests == 0) return "minimum_requests must be > 0";
  if (o.probe_successes == 0) return "probe_successes must be > 0";
  return {};
}

void validate(const ClientOptions& o) {
  if (auto problem = validate(o.call_defaults)) {
    throw std::invalid_argument("ClientOptions::call_defaults: " + *problem);
  }
  if (o.heartbeat.count() <= 0) throw std::invalid_argument("ClientOptions::heartbeat must be > 0");
  if (o.idle_timeout.count() < 0 || (o.idle_timeout.count() > 0 && o.idle_timeout < 2 * o.heartbeat)) {
    throw std::invalid_argument(
        fmt::format("ClientOptions::idle_timeout must be 0 (3 x heartbeat) or at least 2 x heartbeat, got {} ms with a "
                    "heartbeat of {} ms",
                    o.idle_timeout.count(), o.heartbeat.count()));
  }
  if (o.connect_timeout.count() <= 0) throw std::invalid_argument("ClientOptions::connect_timeout must be > 0");
  if (o.stream_window < detail::kMinStreamWindow || o.stream_window > detail::kMaxStreamWindow) {
    throw std::invalid_argument(fmt::format("ClientOptions::stream_window must be {} .. {} bytes, got {}",
                                            detail::kMinStreamWindow, detail::kMaxStreamWindow, o.stream_window));
  }
  if (o.max_stream_message == 0) throw std::invalid_argument("ClientOptions::max_stream_message must be > 0");
  if (auto problem = detail::compression_problem(o.compression); !problem.empty()) {
    throw std::invalid_argument("ClientOptions::compression." + problem);
  }
  for (const auto* list : {&o.interceptors, &o.attempt_interceptors}) {
    for (const auto& i : *list) {
      if (!i) throw std::invalid_argument("ClientOptions::interceptors and attempt_interceptors must not hold null");
    }
  }
  if (auto problem = detail::outlier_problem(o.outlier_detection); !problem.empty()) {
    throw std::invalid_argument("ClientOptions::outlier_detection." + problem);
  }
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

}  // namespace wheelrpc::rpc
