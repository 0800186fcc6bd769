#pragma once
/// install_loggers: where the example programs send the library's log lines.

#include <initializer_list>
#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace wheelrpc::examples {

/// Shows the library's warnings and errors on stderr: wheelrpc logs through
/// the application's loggers of these names and never installs sinks itself.
inline void install_loggers(std::initializer_list<const char*> names) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  for (const char* name : names) {
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_level(spdlog::level::warn);
    spdlog::register_logger(logger);
  }
}

}  // namespace wheelrpc::examples
