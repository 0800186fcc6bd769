#pragma once
// The registry module's logger ("wheelrpc.registry").

#include <memory>

#include <spdlog/logger.h>

#include <wheelrpc/common/logging.h>

namespace wheelrpc::registry::detail {

inline std::shared_ptr<spdlog::logger> logger() { return wheelrpc::detail::module_logger("wheelrpc.registry"); }

}  // namespace wheelrpc::registry::detail
