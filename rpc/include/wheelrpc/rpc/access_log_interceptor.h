#pragma once
/// AccessLogInterceptor: a server interceptor that writes a sampled access log.

#include <atomic>
#include <cstdint>
#include <string_view>

#include <wheelrpc/rpc/server_interceptor.h>

namespace wheelrpc::rpc {

/// One line per sampled request, at info level, through the spdlog logger
/// named "wheelrpc.access" (kAccessLoggerName) when the application
/// registered one (the library adds no sink; with none, nothing is written):
///
///     method=echo peer=127.0.0.1:50522 status=OK duration_us=412 trace=4bf92f3577b34da6a3ce929d0e0e4736
///
/// `status` is the gRPC name of the outcome (to_string(status_code_of(ec)):
/// "OK", "UNAUTHENTICATED", "DEADLINE_EXCEEDED", ...), `duration_us` the
/// microseconds from the request's read to its answer, `trace` the trace id
/// of its `traceparent` metadata ("-" without one). Put it first in
/// ServerOptions::interceptors to log the requests the others reject too.
///
/// Sampling: the 1st request, then every `sample_every`-th (a counter, so
/// exactly one in N); 1 (default) logs every request.
///
/// @par Thread Safety
/// Safe: one instance serves every request of a server (the counter is atomic).
class AccessLogInterceptor final : public ServerInterceptor {
 public:
  /// `sample_every`: N of "1 in N", >= 1 (throws std::invalid_argument for 0).
  explicit AccessLogInterceptor(std::uint64_t sample_every = 1);

  void intercept(ServerCall& call, InterceptorNext next) override;
  void on_complete(ServerCall& call, const boost::system::error_code& ec) override;
  std::string_view name() const noexcept override { return "access_log"; }

  /// Requests seen so far, logged or not.
  std::uint64_t seen() const noexcept { return seen_.load(std::memory_order_relaxed); }

 private:
  const std::uint64_t sample_every_;
  std::atomic<std::uint64_t> seen_{0};
};

/// The logger's name: "wheelrpc.access".
inline constexpr const char* kAccessLoggerName = "wheelrpc.access";

}  // namespace wheelrpc::rpc
