#include "interceptors/interceptor_chain.h"

#include <exception>

#include <fmt/format.h>

#include "base/log.h"

namespace wheelrpc::rpc {

InterceptorNext& InterceptorNext::operator=(InterceptorNext&& other) noexcept {
  if (this != &other) {
    InterceptorNext dropped(std::move(*this));  // rejects, if it was pending
    chain_ = std::move(other.chain_);
    index_ = other.index_;
  }
  return *this;
}

InterceptorNext::~InterceptorNext() {
  if (auto chain = std::move(chain_)) {
    std::string message;
    try {
      message = chain->dropped_message(index_);
    } catch (...) {  // out of memory: the code alone
    }
    chain->on_next(index_, false, StatusCode::internal, std::move(message));
  }
}

void InterceptorNext::proceed() {
  if (auto chain = std::move(chain_)) chain->on_next(index_, true, StatusCode::ok, {});
}

void InterceptorNext::reject(StatusCode code, std::string message) {
  if (auto chain = std::move(chain_)) chain->on_next(index_, false, code, std::move(message));
}

namespace detail {

std::string InterceptorChain::dropped_message(std::size_t index) const {
  return fmt::format("{} interceptor {} ('{}') dropped its next without proceeding or rejecting", side(), index,
                     name(index));
}

bool InterceptorChain::begin_step(std::size_t index) {
  std::uint32_t s = state_.load(std::memory_order_acquire);
  do {
    if (s & kEnded) return false;
  } while (!state_.compare_exchange_weak(s, s + 2 * kBusy, std::memory_order_acq_rel));  // intercept() and its next
  entered_.store(index + 1, std::memory_order_release);
  return true;
}

void InterceptorChain::run() {
  while (next_ < size()) {
    const std::size_t i = next_;
    if (!begin_step(i)) return;
    step_.store(kRunning);
    try {
      intercept(i, InterceptorNext(shared_from_this(), i));
    } catch (const std::exception& e) {  // its next, dropped on the way out, rejected the call
      logger()->error("{} interceptor {} ('{}') threw: {}", side(), i, name(i), e.what());
    } catch (...) {
      logger()->error("{} interceptor {} ('{}') threw a non-std exception", side(), i, name(i));
    }
    int expected = kRunning;
    const bool later = step_.compare_exchange_strong(expected, kReturned);
    // Written by the next before its exchange, which came first: read only then.
    StatusCode code = StatusCode::unknown;
    std::string message;
    if (!later && expected == kRejected) {
      code = code_;
      message = std::move(message_);
    }
    idle();
    if (later) return;  // its next resumes the chain on the executor
    if (expected == kRejected) {
      rejected(code, std::move(message));
      return;
    }
    next_ = i + 1;
  }
  proceeded();
}

void InterceptorChain::on_next(std::size_t index, bool proceed, StatusCode code, std::string message) noexcept {
  if (code == StatusCode::ok && !proceed) code = StatusCode::unknown;
  try {
    if (!proceed) {
      code_ = code;
      message_ = message;
    }
    int expected = kRunning;
    if (!step_.compare_exchange_strong(expected, proceed ? kProceeded : kRejected)) {
      // intercept() returned already: go on where the call runs. Nothing
      // goes on once the call ended (the deadline passed, it was cancelled).
      if (!(state_.load(std::memory_order_acquire) & kEnded)) {
        resume_later([self = shared_from_this(), index, proceed, code, message = std::move(message)]() mutable {
          if (proceed) {
            self->next_ = index + 1;
            self->run();
          } else {
            self->rejected(code, std::move(message));
          }
        });
      }
    }
  } catch (const std::exception& e) {
    logger()->error("{} interceptor {}: could not resume the call: {}", side(), index, e.what());
  }
  idle();
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
  const std::size_t entered = entered_.load(std::memory_order_acquire);
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
