#pragma once
// The fault module's logger ("wheelrpc.fault").

#include <memory>

#include <spdlog/logger.h>

#include <wheelrpc/common/logging.h>

namespace wheelrpc::fault::detail {

inline std::shared_ptr<spdlog::logger> logger() { return wheelrpc::detail::module_logger("wheelrpc.fault"); }

}  // namespace wheelrpc::fault::detail
