#pragma once
/// TimerTask: the work a Timer runs when a Timeout expires (Netty/Dubbo's
/// io.netty.util.TimerTask).

namespace wheelrpc::timer {

class Timeout;

/// Derive from TimerTask for tasks with state that reschedule themselves
/// (HeartbeatTimerTask and friends). Pass it to `Timer::new_timeout` as a
/// `std::shared_ptr<TimerTask>`; the timer keeps it alive until it has run or
/// was cancelled. Plain callables are accepted by `new_timeout` too.
class TimerTask {
 public:
  virtual ~TimerTask() = default;

  /// Runs once when `timeout` expires, on the timer's worker thread or on the
  /// executor given in the timer's options. `timeout.is_expired()` is true here.
  /// An exception escaping `run` is caught and logged (logger "wheelrpc.timer");
  /// the timer goes on. Keep it short: a slow task delays every later timeout
  /// when tasks run on the worker.
  virtual void run(Timeout& timeout) = 0;
};

}  // namespace wheelrpc::timer
