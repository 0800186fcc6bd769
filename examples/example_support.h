#pragma once
// What the example programs share: flag parsing and log setup.

#include <charconv>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace wheelrpc::examples {

/// A whole decimal number in [lo, hi], or nothing.
inline std::optional<long long> parse_int(std::string_view s, long long lo, long long hi) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

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
