#include <wheelrpc/timer/errc.h>

namespace wheelrpc::timer {
namespace {

class TimerCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "wheelrpc.timer"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::timer_stopped: return "the timer is stopped and accepts no new timeouts";
      case errc::too_many_pending: return "too many pending timeouts (max_pending_timeouts reached)";
      case errc::out_of_memory: return "no memory for a new timeout";
    }
    return "unknown wheelrpc.timer error " + std::to_string(ev);
  }
};

}  // namespace

const std::error_category& timer_category() noexcept {
  static const TimerCategory category;
  return category;
}

}  // namespace wheelrpc::timer
