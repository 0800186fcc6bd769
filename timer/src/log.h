#pragma once
// The module's named logger. The library never installs sinks: when the
// application has not registered a logger named "wheelrpc.timer", messages go
// to a null sink.

#include <memory>

#include <spdlog/logger.h>

namespace wheelrpc::timer::detail {

inline constexpr const char* kLoggerName = "wheelrpc.timer";

/// The application's "wheelrpc.timer" logger, or a null one. Looked up on every
/// call (the timer logs only on rare events), so a logger registered later is used.
std::shared_ptr<spdlog::logger> logger();

}  // namespace wheelrpc::timer::detail
