#pragma once
// The rpc module's logger ("wheelrpc.rpc").

#include <memory>

#include <spdlog/logger.h>

#include <wheelrpc/common/logging.h>

namespace wheelrpc::rpc::detail {

inline std::shared_ptr<spdlog::logger> logger() { return wheelrpc::detail::module_logger("wheelrpc.rpc"); }

}  // namespace wheelrpc::rpc::detail
