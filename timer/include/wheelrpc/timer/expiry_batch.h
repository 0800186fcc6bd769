#pragma once
/// ExpiryBatch: work that the tasks of one tick's expirations gather and hand
/// on together, once, when the timer has run them all ("run these expirations
/// together": one job per executor and tick instead of one per task).

namespace wheelrpc::timer {

/// Something tasks fill while a batch of expired timeouts runs, flushed once
/// after the last of them. Derive from it, keep it per thread (a
/// `thread_local`), and call `defer()` from a task: the first call in a batch
/// registers it, and `flush()` runs on the same thread right after the batch
/// (before the timer's worker sleeps or `run_expired()` returns).
///
/// A task that runs outside such a batch (tasks handed one at a time to a
/// HashedWheelTimerOptions::executor, or code that is no timer task at all)
/// gets false from `defer()` and must flush by itself.
///
/// @par Thread Safety
/// An ExpiryBatch belongs to one thread: `defer()` and `flush()` run there.
class ExpiryBatch {
 public:
  ExpiryBatch() = default;
  virtual ~ExpiryBatch() = default;
  ExpiryBatch(const ExpiryBatch&) = delete;
  ExpiryBatch& operator=(const ExpiryBatch&) = delete;

  /// True if the calling thread is running a batch of expired tasks, which
  /// will call flush() on this object once after its last task (registered
  /// by the first call; later calls in the same batch only return true).
  /// False otherwise: nothing is registered.
  bool defer() noexcept;

  /// True while the calling thread runs a batch of expired tasks.
  static bool in_batch() noexcept;

 private:
  friend class ExpiryBatchScope;
  /// Hands on what the batch gathered; runs outside every timer lock.
  virtual void flush() noexcept = 0;

  ExpiryBatch* next_ = nullptr;  // the registered list of the running batch
  bool registered_ = false;
};

/// Marks the calling thread as running a batch of expired tasks for its
/// lifetime; flushes what registered when it ends (outermost scope only).
/// Used by the timer around a tick's expirations; tests use it to drive
/// ExpiryBatch users without a timer.
class ExpiryBatchScope {
 public:
  ExpiryBatchScope() noexcept;
  ~ExpiryBatchScope();
  ExpiryBatchScope(const ExpiryBatchScope&) = delete;
  ExpiryBatchScope& operator=(const ExpiryBatchScope&) = delete;

  /// Flushes what registered so far (the batch goes on).
  static void flush_now() noexcept;

 private:
  bool outer_;
};

}  // namespace wheelrpc::timer
