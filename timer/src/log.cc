#include "log.h"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

namespace wheelrpc::timer::detail {

std::shared_ptr<spdlog::logger> logger() {
  if (auto l = spdlog::get(kLoggerName)) return l;
  static const auto null_logger =
      std::make_shared<spdlog::logger>(kLoggerName, std::make_shared<spdlog::sinks::null_sink_mt>());
  return null_logger;
}

}  // namespace wheelrpc::timer::detail
