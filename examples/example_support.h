#pragma once
// What the example programs share: flag parsing and log setup.

#include <charconv>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
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

/// A program's main: parses the flags into a Config (`parse` returns the exit
/// status of a usage error), then runs it. Options the library rejects
/// (std::invalid_argument) exit 2 like usage errors; other failures exit 1.
/// Both are reported on stderr as "<name>: <what>".
template <class Config, class Parse, class Run>
int run_main(const char* name, int argc, char** argv, Parse parse, Run run) {
  Config cfg;
  if (const auto status = parse(argc, argv, cfg)) return *status;
  try {
    return run(cfg);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace wheelrpc::examples
