#include "interceptors/interceptor_chain.h"

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "base/log.h"

namespace wheelrpc::rpc {

InterceptorNext& InterceptorNext::operator=(InterceptorNext&& other) noexcept {
  if (this != &other) {
    InterceptorNext dropped(std::move(*this));  // rejects, if it was pending
    chain_ = std::exchange(other.chain_, nullptr);
    index_ = other.index_;
  }
  return *this;
}

void InterceptorNext::drop() noexcept {
  detail::InterceptorChain* const chain = std::exchange(chain_, nullptr);
  std::string message;
  try {
    message = chain->dropped_message(index_);
  } catch (...) {  // out of memory: the code alone
  }
  chain->on_next(index_, false, StatusCode::internal, std::move(message));
}

void InterceptorNext::proceed() {
  if (detail::InterceptorChain* const chain = std::exchange(chain_, nullptr)) chain->on_proceed(index_);
}

void InterceptorNext::reject(StatusCode code, std::string message) {
  if (detail::InterceptorChain* const chain = std::exchange(chain_, nullptr)) {
    chain->on_next(index_, false, code, std::move(message));
  }
}

namespace detail {
namespace {

// Which intercept() runs on this thread, innermost first: a next of that
// step used on this thread is used inside its intercept(), so run(), further
// up this stack, reads its outcome once intercept() returned.
struct Running {
  const InterceptorChain* chain = nullptr;
  std::size_t index = 0;
};
thread_local Running t_running;

// Marks the step running on this thread, restoring the outer one on the way
// out (an intercept() may run another chain: a call it makes).
class RunningScope {
 public:
  RunningScope(const InterceptorChain* chain, std::size_t index) noexcept : outer_(t_running) {
    t_running = {chain, index};
  }
  ~RunningScope() { t_running = outer_; }
  RunningScope(const RunningScope&) = delete;
  RunningScope& operator=(const RunningScope&) = delete;

 private:
  const Running outer_;
};

}  // namespace

std::string InterceptorChain::dropped_message(std::size_t index) const {
  return fmt::format("{} interceptor {} ('{}') dropped its next without proceeding or rejecting", side(), index,
                     name(index));
}

bool InterceptorChain::enter() noexcept {
  std::uint32_t s = state_.load(std::memory_order_acquire);
  do {
    if (s & kEnded) return false;
  } while (!state_.compare_exchange_weak(s, s + kBusy, std::memory_order_acq_rel));
  return true;
}

void InterceptorChain::run() {
  if (!enter()) return;  // the call ended: nothing more starts
  StatusCode code = StatusCode::unknown;
  std::string message;
  bool rejection = false;
  for (bool first = true; next_ < size(); first = false) {
    const std::size_t i = next_;
    // The call may have ended meanwhile (end() waits for this run to finish).
    if (!first && (state_.load(std::memory_order_acquire) & kEnded)) {
      idle();
      return;
    }
    entered_.store(i + 1, std::memory_order_relaxed);  // read after the last idle(), which orders it
    sync_ = Sync::none;
    // A next handed to another thread reaches it through the interceptor's
    // own synchronization, which orders this store before its exchange.
    step_.store(kRunning, std::memory_order_relaxed);
    {
      RunningScope running(this, i);
      try {
        intercept(i, InterceptorNext(this, i));
      } catch (const std::exception& e) {  // its next, dropped on the way out, rejected the call
        logger()->error("{} interceptor {} ('{}') threw: {}", side(), i, name(i), e.what());
      } catch (...) {
        logger()->error("{} interceptor {} ('{}') threw a non-std exception", side(), i, name(i));
      }
    }
    if (sync_ == Sync::proceeded) [[likely]] {
      next_ = i + 1;
      continue;
    }
    if (sync_ == Sync::rejected) {
      code = code_;
      message = std::move(message_);
      rejection = true;
      break;
    }
    // Its next outlived intercept(), or was used on another thread: from
    // here on it holds the chain, and this run's worker unit.
    held_ = shared_from_this();
    int expected = kRunning;
    if (step_.compare_exchange_strong(expected, kReturned, std::memory_order_acq_rel)) return;  // it resumes us
    held_.reset();  // it was used before intercept() returned: go on here
    if (expected == kRejected) {
      // Written by the next before its exchange, which came first: read only now.
      code = code_;
      message = std::move(message_);
      rejection = true;
      break;
    }
    next_ = i + 1;
  }
  // No interceptor works any more: end(), from what runs now (the handler
  // answering, the call completing), completes the chain on its own thread.
  idle();
  if (rejection) {
    rejected(code, std::move(message));
  } else {
    proceeded();
  }
}

void InterceptorChain::on_proceed(std::size_t index) noexcept {
  if (t_running.chain == this && t_running.index == index) [[likely]] {
    sync_ = Sync::proceeded;  // inside its own intercept(), on the running thread
    return;
  }
  on_next(index, true, StatusCode::ok, {});
}

void InterceptorChain::on_next(std::size_t index, bool proceed, StatusCode code, std::string message) noexcept {
  if (code == StatusCode::ok && !proceed) code = StatusCode::unknown;
  if (t_running.chain == this && t_running.index == index) [[likely]] {
    // Inside its own intercept(), on the running thread: run() reads it
    // once intercept() returned. Nothing else touches these meanwhile.
    if (proceed) {
      sync_ = Sync::proceeded;
    } else {
      sync_ = Sync::rejected;
      code_ = code;
      message_ = std::move(message);
    }
    return;
  }
  try {
    if (!proceed) {
      code_ = code;
      message_ = message;
    }
    int expected = kRunning;
    if (step_.compare_exchange_strong(expected, proceed ? kProceeded : kRejected, std::memory_order_acq_rel)) {
      return;  // intercept() is still running: run() goes on, within its own worker unit
    }
    // intercept() returned already: this next holds the chain and a worker
    // unit (run() handed them over before its exchange). Go on where the
    // call runs; nothing goes on once the call ended (the deadline passed,
    // it was cancelled).
    const std::shared_ptr<InterceptorChain> self = std::move(held_);
    try {
      if (!(state_.load(std::memory_order_acquire) & kEnded)) {
        resume_later([self, index, proceed, code, message = std::move(message)]() mutable {
          if (proceed) {
            self->next_ = index + 1;
            self->run();
          } else {
            self->rejected(code, std::move(message));
          }
        });
      }
    } catch (const std::exception& e) {
      logger()->error("{} interceptor {}: could not resume the call: {}", side(), index, e.what());
    }
    idle();  // `self` keeps the chain for the on_complete callbacks this may run
  } catch (const std::exception& e) {
    logger()->error("{} interceptor {}: could not resume the call: {}", side(), index, e.what());
  }
}

void InterceptorChain::idle() noexcept {
  const std::uint32_t s = state_.fetch_sub(kBusy, std::memory_order_acq_rel) - kBusy;
  if (s >= kBusy || !(s & kEnded) || (s & (kHold | kCompleted))) return;
  if (state_.fetch_or(kCompleted, std::memory_order_acq_rel) & kCompleted) return;  // claimed by end()
  complete_all(false);
}

bool InterceptorChain::end() {
  std::uint32_t s = state_.load(std::memory_order_acquire);
  do {
    if (s & kEnded) return false;
  } while (!state_.compare_exchange_weak(s, s | kEnded | kHold, std::memory_order_acq_rel));
  if (s < kBusy) {  // nothing at work, and nothing can start now
    state_.fetch_or(kCompleted, std::memory_order_acq_rel);
    complete_all(true);
    return true;
  }
  // An interceptor still works: its last step completes the chain, with
  // the outcome kept here first (kHold keeps it from completing meanwhile).
  keep_outcome();
  s = state_.fetch_and(~kHold, std::memory_order_acq_rel) & ~kHold;
  if (s < kBusy && !(state_.fetch_or(kCompleted, std::memory_order_acq_rel) & kCompleted)) {
    // It let go while the outcome was being kept: complete where the call
    // resumes, not inside end()'s caller (which may hold the call's lock).
    try {
      resume_later([self = shared_from_this()] { self->complete_all(false); });
    } catch (const std::exception& e) {
      logger()->error("{} interceptors: could not complete the chain: {}", side(), e.what());
    }
  }
  return false;
}

void InterceptorChain::complete_all(bool now) noexcept {
  const std::size_t entered = entered_.load(std::memory_order_relaxed);
  for (std::size_t i = entered; i-- > 0;) {
    try {
      complete(i);
    } catch (const std::exception& e) {
      logger()->error("{} interceptor {} ('{}') threw from on_complete: {}", side(), i, name(i), e.what());
    } catch (...) {
      logger()->error("{} interceptor {} ('{}') threw from on_complete", side(), i, name(i));
    }
  }
  try {
    completed(now);
  } catch (...) {
  }
}

}  // namespace detail
}  // namespace wheelrpc::rpc
