#pragma once
/// Named loggers for every wheelrpc module ("wheelrpc.timer",
/// "wheelrpc.transport", "wheelrpc.fault", "wheelrpc.rpc"). The library never
/// installs sinks: a module logs through the application's logger of that name
/// when one is registered with spdlog, and to a null logger otherwise.
///
/// This is the one piece every module shares (target `wheelrpc::common`); it is
/// installed because the other modules' static libraries link it, but it is not
/// an API for applications: they register loggers with spdlog and nothing more.

#include <memory>

namespace spdlog {
class logger;
}

namespace wheelrpc::detail {

/// The application's logger named `name` if one is registered with spdlog now,
/// or else a null logger of that name (never registered: registering would take
/// the name from the application). The registry is asked on every call, so a
/// logger registered later is used from then on and a dropped one no longer is;
/// that costs one lookup under spdlog's registry mutex, and nothing more (no
/// allocation, no other lock once `name` has been seen). Meant for rare events;
/// hot paths use SPDLOG_LOGGER_TRACE/DEBUG or test `should_log` first.
///
/// `name` is compared by content, not by address. Thread-safe: call from any
/// thread.
std::shared_ptr<spdlog::logger> module_logger(const char* name);

}  // namespace wheelrpc::detail
