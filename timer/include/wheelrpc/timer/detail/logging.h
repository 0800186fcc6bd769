#pragma once
// Named loggers for every wheelrpc module ("wheelrpc.timer", "wheelrpc.transport",
// "wheelrpc.rpc"). The library never installs sinks: a module logs through the
// application's logger of that name when one is registered with spdlog, and to a
// null sink otherwise.

#include <memory>

namespace spdlog {
class logger;
}

namespace wheelrpc::detail {

/// The application's logger named `name`, or a null logger. Looks the registry
/// up on every call so a logger registered later is used; meant for rare events
/// (hot paths test `should_log` on it first).
std::shared_ptr<spdlog::logger> module_logger(const char* name);

}  // namespace wheelrpc::detail
