#pragma once
// The lock of a call and of a client connection: held for a few hundred
// nanoseconds at most on the hot path (bookkeeping; an attempt's encoding in
// the worst case), almost never contended (a call's reply cannot race its own
// send). So it is a test-and-test-and-set spin lock that yields the CPU when
// it waits long, cheaper than a futex mutex when uncontended.
//
// It knows its owner, so code that must run with it held asserts it
// (muduo's assertInLoopThread, for locks): `assert(mu.held())`. The owner is
// tracked where assertions are compiled in; with NDEBUG, `held()` only says
// that someone holds it (and the lock costs one exchange and one store).

#include <atomic>
#include <thread>

namespace wheelrpc::rpc::detail {

class CheckedMutex {
 public:
  void lock() noexcept {
    for (unsigned spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();  // the holder may be descheduled
      }
    }
#ifndef NDEBUG
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
#endif
  }
  bool try_lock() noexcept {
    if (locked_.load(std::memory_order_relaxed) || locked_.exchange(true, std::memory_order_acquire)) return false;
#ifndef NDEBUG
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
#endif
    return true;
  }
  void unlock() noexcept {
#ifndef NDEBUG
    owner_.store(std::thread::id{}, std::memory_order_relaxed);
#endif
    locked_.store(false, std::memory_order_release);
  }
  /// True when the calling thread holds the lock.
  bool held() const noexcept {
#ifndef NDEBUG
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
#else
    return locked_.load(std::memory_order_relaxed);
#endif
  }

 private:
  std::atomic<bool> locked_{false};
#ifndef NDEBUG
  std::atomic<std::thread::id> owner_{};
#endif
};

}  // namespace wheelrpc::rpc::detail
