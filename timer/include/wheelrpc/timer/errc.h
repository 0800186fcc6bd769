#pragma once
/// Error codes of the timer module, category "wheelrpc.timer".

#include <stdexcept>
#include <string>
#include <system_error>

namespace wheelrpc::timer {

/// Why `Timer::new_timeout` refused a timeout.
enum class errc {
  timer_stopped = 1,  ///< `stop()` was called; the timer accepts no new timeouts.
  too_many_pending,   ///< `max_pending_timeouts` reached; retry after some complete.
  out_of_memory,      ///< the timeout's record could not be allocated.
};

/// The category whose name is "wheelrpc.timer". Thread-safe.
const std::error_category& timer_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), timer_category()}; }

/// Thrown by the throwing `new_timeout` overloads; `code()` says why.
class TimerError : public std::system_error {
 public:
  explicit TimerError(std::error_code ec) : std::system_error(ec) {}
};

}  // namespace wheelrpc::timer

template <>
struct std::is_error_code_enum<wheelrpc::timer::errc> : std::true_type {};
