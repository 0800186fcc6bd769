#pragma once
/// Deadline propagation: the deadline of the request being served on this
/// thread, which calls started here inherit (CallOptions::inherit_deadline).

#include <chrono>
#include <optional>

namespace wheelrpc::rpc {

/// The deadline in force on this thread: set while a Server handler runs (to
/// its request's deadline), while the completion of a call that inherited one
/// runs, and under a DeadlineScope. std::nullopt when there is none.
std::optional<std::chrono::steady_clock::time_point> current_deadline() noexcept;

/// Puts `deadline` in force on this thread for the scope's lifetime and then
/// restores the previous one. Use it where a handler continues on another
/// thread or later (a timer callback, a thread pool) and still serves the
/// same request: `DeadlineScope scope(request.deadline);`. std::nullopt
/// clears the deadline in force. Not copyable or movable; scopes nest.
class DeadlineScope {
 public:
  explicit DeadlineScope(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept;
  ~DeadlineScope();
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  std::optional<std::chrono::steady_clock::time_point> previous_;
};

}  // namespace wheelrpc::rpc
