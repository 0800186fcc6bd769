#pragma once
// RetryTimerTask (Dubbo's FailbackClusterInvoker.RetryTimerTask): one
// fire-and-forget call waiting on the shared timer to be sent again. Private
// to the client: FailbackQueue makes and schedules them.

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/timer/timer_task.h>

namespace wheelrpc::rpc::detail {

/// Created when a `Client::send_failback` delivery fails, scheduled once on
/// the shared timer, `FailbackOptions::interval` after the failure. When it
/// runs (on the timer's worker) it hands itself to `resend`, which only posts
/// the next try to the client's executor; a new task is made if that try
/// fails too. Thread-safety: `run` is called once, by the timer.
class RetryTimerTask final : public timer::TimerTask, public std::enable_shared_from_this<RetryTimerTask> {
 public:
  /// What to send again.
  struct Delivery {
    std::string method;
    std::string payload;
    CallOptions options;
    unsigned tries = 1;  ///< tries made so far (the first send included)
  };
  using Resend = std::function<void(std::shared_ptr<RetryTimerTask> task)>;

  RetryTimerTask(Delivery delivery, Resend resend) : delivery_(std::move(delivery)), resend_(std::move(resend)) {}

  void run(timer::Timeout&) override { resend_(shared_from_this()); }

  const Delivery& delivery() const noexcept { return delivery_; }
  /// Moves the delivery out (for the resend).
  Delivery take() noexcept { return std::move(delivery_); }

 private:
  Delivery delivery_;
  Resend resend_;
};

}  // namespace wheelrpc::rpc::detail
