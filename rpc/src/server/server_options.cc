// What a server makes of its ServerOptions: the deprecated fields folded
// in (resolved), their validation (validate, declared in options.h), and
// the settings its wires read.
#include "server/server_options.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "base/concurrency_limiter.h"
#include "base/option_checks.h"
#include "base/stream_window.h"

namespace wheelrpc::rpc {

namespace detail {

// The one place that reads ServerOptions' deprecated fields.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
ServerOptions resolved(const ServerOptions& o) {
  const ServerOptions d;  // the defaults
  ServerOptions r = o;
  auto fold = [](auto& current, const auto& current_default, const auto& old, const auto& old_default) {
    if (current == current_default && old != old_default) current = old;
  };
  fold(r.keepalive.heartbeat, d.keepalive.heartbeat, o.heartbeat, d.heartbeat);
  fold(r.keepalive.hello_timeout, d.keepalive.hello_timeout, o.hello_timeout, d.hello_timeout);
  fold(r.keepalive.idle_timeout, d.keepalive.idle_timeout, o.close_timeout, d.close_timeout);
  fold(r.keepalive.send_heartbeats, d.keepalive.send_heartbeats, o.send_heartbeats, d.send_heartbeats);
  fold(r.limits.max_connections, d.limits.max_connections, o.max_connections, d.max_connections);
  fold(r.limits.max_requests_per_connection, d.limits.max_requests_per_connection, o.max_requests_per_connection,
       d.max_requests_per_connection);
  fold(r.overload.deadline_admission, d.overload.deadline_admission, o.deadline_admission, d.deadline_admission);
  fold(r.overload.queue_target, d.overload.queue_target, o.queue_target, d.queue_target);
  fold(r.overload.queue_interval, d.overload.queue_interval, o.queue_interval, d.queue_interval);
  // ConcurrencyLimit has no ==; its default is Kind::none.
  if (r.overload.max_concurrency.kind() == ConcurrencyLimit::Kind::none &&
      o.max_concurrency.kind() != ConcurrencyLimit::Kind::none) {
    r.overload.max_concurrency = o.max_concurrency;
  }
  return r;
}
#pragma GCC diagnostic pop

ServerWireSettings wire_settings_for(const ServerOptions& o) {
  ServerWireSettings w;
  w.channel = o.channel;
  w.channel.accept_http2 = o.grpc.enabled;  // an HTTP/2 client is handed to the gRPC wire
  w.hello_timeout = o.keepalive.hello_timeout;
  w.max_requests_per_connection = o.limits.max_requests_per_connection;
  w.max_streams_per_connection = o.streams.max_per_connection;
  w.stream_window = o.streams.window;
  w.reply_compression = o.compression.reply;
  w.coding = PayloadCoding{o.compression.threshold, o.compression.accept, o.compression.max_ratio};
  w.grpc = o.grpc;
  w.clock = o.clock;
  w.idle_timeout = o.keepalive.idle_timeout;
  w.tcp_user_timeout = o.keepalive.tcp_user_timeout;
  return w;
}

}  // namespace detail

void validate(const ServerOptions& options) {
  const ServerOptions o = detail::resolved(options);
  for (const auto& i : o.interceptors) {
    if (!i) throw std::invalid_argument("ServerOptions::interceptors must not hold null");
  }
  if (o.streams.window < detail::kMinStreamWindow || o.streams.window > detail::kMaxStreamWindow) {
    throw std::invalid_argument(fmt::format("ServerOptions::streams.window must be {} .. {} bytes, got {}",
                                            detail::kMinStreamWindow, detail::kMaxStreamWindow, o.streams.window));
  }
  if (o.streams.max_message == 0) throw std::invalid_argument("ServerOptions::streams.max_message must be > 0");
  if (auto problem = detail::compression_problem(o.compression); !problem.empty()) {
    throw std::invalid_argument("ServerOptions::compression." + problem);
  }
  if (o.compression.reply && static_cast<int>(*o.compression.reply) >= transport::kCompressionCount) {
    throw std::invalid_argument("ServerOptions::compression.reply must be identity, zstd, lz4, gzip or deflate");
  }
  if (o.streams.message_timeout.count() < 0 || o.streams.stall_timeout.count() < 0) {
    throw std::invalid_argument("ServerOptions::streams.message_timeout and stall_timeout must be >= 0");
  }
  if (o.keepalive.heartbeat.count() <= 0) {
    throw std::invalid_argument("ServerOptions::keepalive.heartbeat must be > 0");
  }
  if (o.keepalive.hello_timeout.count() <= 0) {
    throw std::invalid_argument("ServerOptions::keepalive.hello_timeout must be > 0");
  }
  if (o.keepalive.idle_timeout.count() < 0) {
    throw std::invalid_argument("ServerOptions::keepalive.idle_timeout must be >= 0");
  }
  if (o.keepalive.max_connection_age.count() < 0 ||
      (o.keepalive.max_connection_age.count() > 0 && o.keepalive.max_connection_age.count() < 100) ||
      o.keepalive.max_connection_age > detail::kLongestOption) {
    throw std::invalid_argument("ServerOptions::keepalive.max_connection_age must be 0 (none) or 100 .. 0xffffffff ms");
  }
  if (o.keepalive.max_connection_age_grace.count() < 0 ||
      o.keepalive.max_connection_age_grace > detail::kLongestOption) {
    throw std::invalid_argument("ServerOptions::keepalive.max_connection_age_grace must be 0 .. 0xffffffff ms");
  }
  if (o.load_reports.interval.count() < 10 || o.load_reports.interval > detail::kLongestOption) {
    throw std::invalid_argument("ServerOptions::load_reports.interval must be 10 .. 0xffffffff ms");
  }
  if (o.unregister_grace.count() < 0 || o.unregister_grace > detail::kLongestOption) {
    throw std::invalid_argument("ServerOptions::unregister_grace must be 0 .. 0xffffffff ms");
  }
  if (o.overload.queue_interval.count() <= 0 || o.overload.queue_interval > detail::kLongestOption) {
    throw std::invalid_argument("ServerOptions::overload.queue_interval must be 1 .. 0xffffffff ms");
  }
  if (o.overload.queue_target.count() < 0 || o.overload.queue_target >= o.overload.queue_interval) {
    throw std::invalid_argument("ServerOptions::overload.queue_target must be >= 0 and below overload.queue_interval");
  }
  detail::validate_concurrency_limit(o.overload.max_concurrency);
  if (auto problem = transport::tls_options_problem(o.tls, transport::TlsRole::server); !problem.empty()) {
    throw std::invalid_argument("ServerOptions::tls: " + problem);
  }
}

}  // namespace wheelrpc::rpc
