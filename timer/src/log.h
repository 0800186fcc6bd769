#pragma once
// The timer module's logger ("wheelrpc.timer").

#include <memory>

#include <spdlog/logger.h>

#include <wheelrpc/common/logging.h>

namespace wheelrpc::timer::detail {

inline constexpr const char* kLoggerName = "wheelrpc.timer";

inline std::shared_ptr<spdlog::logger> logger() { return wheelrpc::detail::module_logger(kLoggerName); }

}  // namespace wheelrpc::timer::detail
