#pragma once
// The machinery every interceptor chain shares (client per call, client per
// attempt, server): running the interceptors in turn, on this thread while
// each goes on from inside intercept(), resumed on the call's executor when
// one goes on later; and the on_complete callbacks in reverse order, once
// the call ended and no interceptor works any more.
//
// Two paths per step:
// - Synchronous (the common case: a next used inside intercept(), on the
//   thread running it): no atomic operation and no reference count. A next
//   points to its chain without counting (the caller of run() holds it), and
//   a thread-local marker (`t_running`, interceptor_chain.cc) tells the
//   next that it is used inside its own intercept(), on the running thread:
//   it writes the outcome to plain fields that run() reads once intercept()
//   returned. The whole run() counts as one worker in `state_` (one atomic
//   operation at its start and one at its end, not per step).
// - Otherwise (the next was used on another thread, or kept past
//   intercept()): `step_` tells a next used before intercept() returned (the
//   running thread goes on) from one used after (resumed on the executor),
//   and run() hands the pending next a reference (`held_`) and its worker
//   unit in `state_`, both given up once the next is used.
//
// Threads: run() steps are serialized (each is started by exactly one next:
// the one before it). `state_` keeps the books that decide when on_complete
// may run, in one atomic word, so a step takes no lock: never while an
// intercept() of the chain is on a stack or its next is held, so the call
// object an interceptor holds is never touched by two threads.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <wheelrpc/rpc/interceptor_next.h>
#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::rpc::detail {

class InterceptorChain : public std::enable_shared_from_this<InterceptorChain> {
 public:
  virtual ~InterceptorChain() = default;
  InterceptorChain(const InterceptorChain&) = delete;
  InterceptorChain& operator=(const InterceptorChain&) = delete;

  /// Runs the interceptors from the next one on, on this thread; after the
  /// last, proceeded(). Once the call ended, nothing more starts. The
  /// caller holds a reference for the duration of the call.
  void run();
  /// From InterceptorNext (once per next): interceptor `index` went on or rejected.
  void on_next(std::size_t index, bool proceed, StatusCode code, std::string message) noexcept;
  /// on_next(index, true, ...), without its arguments' cost on the synchronous path.
  void on_proceed(std::size_t index) noexcept;
  /// What a next dropped without proceed() or reject() rejects with.
  std::string dropped_message(std::size_t index) const;

 protected:
  InterceptorChain() = default;
  /// The call ended: nothing more starts, and the on_complete callbacks run
  /// now, on this thread (true), or, while an interceptor still works, once
  /// it lets go (false; keep_outcome() is called first, under the lock, to
  /// keep what they need).
  bool end();

  virtual std::size_t size() const noexcept = 0;
  virtual std::string_view name(std::size_t index) const noexcept = 0;
  /// "client", "client attempt", "server": for messages.
  virtual const char* side() const noexcept = 0;
  virtual void intercept(std::size_t index, InterceptorNext next) = 0;
  /// on_complete of interceptor `index` (called in reverse order).
  virtual void complete(std::size_t index) = 0;
  /// After the on_complete callbacks (on their thread); `now`: end() ran them.
  virtual void completed(bool now) { (void)now; }
  /// Under the lock: the outcome must outlive end()'s caller.
  virtual void keep_outcome() {}
  /// Every interceptor went on: the call continues (on this thread).
  virtual void proceeded() = 0;
  /// An interceptor rejected the call (on this thread).
  virtual void rejected(StatusCode code, std::string message) = 0;
  /// Runs `fn` on the call's executor (a next called after intercept() returned).
  virtual void resume_later(std::function<void()> fn) = 0;

 private:
  enum Step : int { kRunning, kReturned, kProceeded, kRejected };
  enum class Sync : std::uint8_t { none, proceeded, rejected };
  /// A worker (a run(), or a next that outlived its intercept()) starts:
  /// false once the call ended.
  bool enter() noexcept;
  /// A worker is done: one fewer at work; the last one after end() completes.
  void idle() noexcept;
  void complete_all(bool now) noexcept;

  std::size_t next_ = 0;  // the interceptor to run: touched by the running step only
  // The synchronous path: written by the next inside its intercept(), on the
  // running thread; read by run() once intercept() returned.
  Sync sync_ = Sync::none;
  std::atomic<int> step_{kReturned};       // of the interceptor running now (the other path)
  StatusCode code_ = StatusCode::unknown;  // a rejection from inside intercept(), read after step_ or sync_
  std::string message_;
  // The reference a next that outlived its intercept() holds: set by run()
  // before it publishes kReturned, taken by that next when it is used.
  std::shared_ptr<InterceptorChain> held_;
  // The chain's life in one word, so a step takes no lock: kEnded (the call
  // ended: nothing more starts), kHold (end() is keeping the outcome: no
  // completion yet), kCompleted (the on_complete callbacks were claimed,
  // once), and in units of kBusy the workers: a run() on a stack, a next
  // that outlived its intercept() and was not used yet.
  static constexpr std::uint32_t kEnded = 1, kHold = 2, kCompleted = 4, kBusy = 8;
  std::atomic<std::uint32_t> state_{0};
  std::atomic<std::size_t> entered_{0};  // interceptors whose intercept() was called
};

}  // namespace wheelrpc::rpc::detail
