#pragma once
// The transport module's logger ("wheelrpc.transport").

#include <memory>

#include <spdlog/logger.h>

#include <wheelrpc/common/logging.h>

namespace wheelrpc::transport::detail {

inline std::shared_ptr<spdlog::logger> logger() { return wheelrpc::detail::module_logger("wheelrpc.transport"); }

}  // namespace wheelrpc::transport::detail
