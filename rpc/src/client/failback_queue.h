#pragma once
// Failback (Dubbo's FailbackClusterInvoker): fire-and-forget deliveries that
// failed with an error a later try may fix wait here, each as a
// RetryTimerTask on the shared timer, and are sent again after the interval.
//
// Thread safety: every method may be called from any thread. The timer's
// worker only posts the resend to the client's executor (through a WorkGate,
// so nothing is posted once close() returned); the resend runs there.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/timer/timer.h>

#include "client/retry_timer_task.h"
#include <wheelrpc/common/work_gate.h>

namespace wheelrpc::rpc::detail {

class FailbackQueue : public std::enable_shared_from_this<FailbackQueue> {
 public:
  using Delivery = RetryTimerTask::Delivery;
  /// Sends a delivery (a new call whose completion calls `on_result`). Runs on
  /// the executor.
  using Send = std::function<void(Delivery)>;

  FailbackQueue(boost::asio::any_io_executor ex, timer::Timer& timer, FailbackOptions options, Send send);

  /// The outcome of one try of `delivery`: counts a success; schedules a retry
  /// for an error a later try may fix, while tries and room are left; gives
  /// up (logged) otherwise.
  void on_result(Delivery delivery, boost::system::error_code ec, const std::string& message);

  /// Cancels every waiting retry; returns once no callback of the queue runs
  /// on the timer's worker. Later results are ignored. Idempotent.
  void close();

  std::uint64_t pending() const;
  std::uint64_t delivered() const noexcept { return delivered_.load(std::memory_order_relaxed); }
  std::uint64_t retries() const noexcept { return retries_.load(std::memory_order_relaxed); }
  std::uint64_t given_up() const noexcept { return given_up_.load(std::memory_order_relaxed); }
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  /// Errors a later try may fix.
  static bool fixable(boost::system::error_code ec) noexcept;

 private:
  void resend(const std::shared_ptr<RetryTimerTask>& task);  // on the executor

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const FailbackOptions options_;
  const Send send_;

  mutable common::Mutex mu_;
  bool closed_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::unordered_map<RetryTimerTask*, std::pair<std::shared_ptr<RetryTimerTask>, timer::Timeout>> waiting_
      WHEELRPC_GUARDED_BY(mu_);
  common::WorkGate gate_;
  std::atomic<std::uint64_t> delivered_{0}, retries_{0}, given_up_{0}, dropped_{0};
};

}  // namespace wheelrpc::rpc::detail
