#pragma once
// Registers a logger under a module's name ("wheelrpc.timer", ...) that keeps
// the last messages in memory, for tests that assert what the library logged.
// Unregisters it on destruction.

#include <memory>
#include <string>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

namespace wheelrpc::test {

class LogCapture {
 public:
  explicit LogCapture(std::string name, std::size_t keep = 256)
      : name_(std::move(name)), sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(keep)) {
    auto logger = std::make_shared<spdlog::logger>(name_, sink_);
    logger->set_level(spdlog::level::trace);
    spdlog::register_logger(logger);
  }
  ~LogCapture() { spdlog::drop(name_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> lines() const { return sink_->last_formatted(); }
  /// How many captured lines contain `needle`.
  std::size_t count(const std::string& needle) const {
    std::size_t n = 0;
    for (const auto& l : lines()) n += l.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::string name_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace wheelrpc::test
