#include <wheelrpc/rpc/access_log_interceptor.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include <spdlog/logger.h>

#include <wheelrpc/common/logging.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/rpc/trace.h>

namespace wheelrpc::rpc {

AccessLogInterceptor::AccessLogInterceptor(std::uint64_t sample_every) : sample_every_(sample_every) {
  if (sample_every_ == 0) throw std::invalid_argument("AccessLogInterceptor: sample_every must be >= 1");
}

void AccessLogInterceptor::intercept(ServerCall& call, InterceptorNext next) {
  (void)call;
  next.proceed();
}

void AccessLogInterceptor::on_complete(ServerCall& call, const boost::system::error_code& ec) {
  if (seen_.fetch_add(1, std::memory_order_relaxed) % sample_every_ != 0) return;
  const auto log = wheelrpc::detail::module_logger(kAccessLoggerName);
  if (!log->should_log(spdlog::level::info)) return;
  std::string trace = "-";
  for (const auto& [key, value] : call.metadata()) {
    if (key == kTraceparentKey) {
      if (const auto t = TraceContext::parse(value)) trace = t->trace_id_hex();
      break;
    }
  }
  log->info("method={} peer={} status={} duration_us={} trace={}", call.method(), call.peer(),
            to_string(status_code_of(ec)),
            std::chrono::duration_cast<std::chrono::microseconds>(call.elapsed()).count(), trace);
}

}  // namespace wheelrpc::rpc
