#pragma once
// The admin module's logger ("wheelrpc.admin").

#include <memory>

#include <spdlog/logger.h>

#include <wheelrpc/common/logging.h>

namespace wheelrpc::admin::detail {

inline std::shared_ptr<spdlog::logger> logger() { return wheelrpc::detail::module_logger("wheelrpc.admin"); }

}  // namespace wheelrpc::admin::detail
