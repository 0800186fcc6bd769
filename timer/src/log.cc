#include <wheelrpc/timer/detail/logging.h>

#include <map>
#include <mutex>
#include <string>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

namespace wheelrpc::detail {

std::shared_ptr<spdlog::logger> module_logger(const char* name) {
  if (auto l = spdlog::get(name)) return l;
  // One null logger per name, never registered: registering would take the name
  // from the application.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<spdlog::logger>, std::less<>> null_loggers;
  std::lock_guard lock(mu);
  auto it = null_loggers.find(name);
  if (it == null_loggers.end()) {
    it = null_loggers
             .emplace(name, std::make_shared<spdlog::logger>(
                                name, std::make_shared<spdlog::sinks::null_sink_mt>()))
             .first;
  }
  return it->second;
}

}  // namespace wheelrpc::detail
