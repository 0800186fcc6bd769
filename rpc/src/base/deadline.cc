#include <wheelrpc/rpc/deadline.h>

namespace wheelrpc::rpc {
namespace {
thread_local std::optional<std::chrono::steady_clock::time_point> t_deadline;
}  // namespace

std::optional<std::chrono::steady_clock::time_point> current_deadline() noexcept { return t_deadline; }

DeadlineScope::DeadlineScope(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept
    : previous_(t_deadline) {
  t_deadline = deadline;
}

DeadlineScope::~DeadlineScope() { t_deadline = previous_; }

}  // namespace wheelrpc::rpc
