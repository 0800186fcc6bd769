#include <wheelrpc/common/logging.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

namespace wheelrpc::detail {
namespace {

// What module_logger needs per name, built once: the registry key as a
// std::string (spdlog::get takes one; building it per call would allocate for
// names past the small-string size, "wheelrpc.transport" among them) and the
// null logger returned while the application has none of that name.
struct NamedLogger {
  std::string name;
  std::shared_ptr<spdlog::logger> null;
};

NamedLogger make_named(const char* name) {
  return {name, std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::null_sink_mt>())};
}

// The few names in use, found without a lock. Entries [0, published_) are
// written once, before published_ is raised (release), and never change after;
// a reader that loads published_ (acquire) may read them freely. Names beyond
// the array's capacity go to a map under the mutex: correct, only slower.
class NameTable {
 public:
  const NamedLogger& find(const char* name) {
    const std::size_t n = published_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      if (slots_[i].name == name) return slots_[i];
    }
    return find_or_add(name);
  }

 private:
  const NamedLogger& find_or_add(const char* name) {
    std::lock_guard lock(mu_);
    const std::size_t n = published_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      if (slots_[i].name == name) return slots_[i];
    }
    if (n < slots_.size()) {
      slots_[n] = make_named(name);
      published_.store(n + 1, std::memory_order_release);
      return slots_[n];
    }
    auto it = overflow_.find(name);
    if (it == overflow_.end()) it = overflow_.emplace(name, make_named(name)).first;
    return it->second;  // map nodes are stable; entries are never erased
  }

  std::array<NamedLogger, 16> slots_;
  std::atomic<std::size_t> published_{0};
  std::mutex mu_;  // writers only
  std::map<std::string, NamedLogger, std::less<>> overflow_;
};

}  // namespace

std::shared_ptr<spdlog::logger> module_logger(const char* name) {
  // Never destroyed: a thread still running while the process exits (an
  // io_context's, a detached one) may log after static destructors ran.
  static NameTable& table = *new NameTable;
  const NamedLogger& entry = table.find(name);
  // Asked every time, so that a logger the application registers (or drops)
  // later takes effect at once; spdlog offers no cheaper way to learn of it.
  if (auto l = spdlog::get(entry.name)) return l;
  return entry.null;
}

}  // namespace wheelrpc::detail
