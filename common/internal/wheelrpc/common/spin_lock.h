#pragma once
// The one spin lock of the tree: a timer shard's lock, a call's and a client
// connection's, a SharedPtrCell's. Held for tens to a few hundred
// nanoseconds (bookkeeping; an attempt's encoding at worst) and almost never
// contended, so a test-and-test-and-set lock is cheaper than a futex mutex.
// It yields the CPU after a short spin, so a preempted holder on a small
// machine does not cost the other core its time slice.
//
// It knows its owner where assertions are compiled in, so code that must run
// with it held asserts so (muduo's assertInLoopThread, for locks):
// `mu.assert_held()` also tells Clang's thread-safety analysis. With NDEBUG,
// `held()` only says that someone holds it.

#include <atomic>
#include <cassert>
#include <thread>

#include <wheelrpc/common/thread_annotations.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WHEELRPC_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define WHEELRPC_CPU_RELAX() asm volatile("yield")
#else
#define WHEELRPC_CPU_RELAX() ((void)0)
#endif

namespace wheelrpc::common {

class WHEELRPC_CAPABILITY("mutex") SpinLock {
 public:
  void lock() noexcept WHEELRPC_ACQUIRE() {
    if (locked_.exchange(true, std::memory_order_acquire)) lock_slow();
    set_owner();
  }
  bool try_lock() noexcept WHEELRPC_TRY_ACQUIRE(true) {
    if (locked_.load(std::memory_order_relaxed) || locked_.exchange(true, std::memory_order_acquire)) return false;
    set_owner();
    return true;
  }
  void unlock() noexcept WHEELRPC_RELEASE() {
#ifndef NDEBUG
    owner_.store(std::thread::id{}, std::memory_order_relaxed);
#endif
    locked_.store(false, std::memory_order_release);
  }
  /// True when the calling thread holds the lock (with NDEBUG: when anyone does).
  bool held() const noexcept {
#ifndef NDEBUG
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
#else
    return locked_.load(std::memory_order_relaxed);
#endif
  }
  /// Asserts held() and tells the analysis so.
  void assert_held() const noexcept WHEELRPC_ASSERT_CAPABILITY(this) { assert(held()); }

 private:
  void lock_slow() noexcept {
    for (unsigned spins = 0;;) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          WHEELRPC_CPU_RELAX();
        } else {
          std::this_thread::yield();  // the holder may be descheduled
        }
      }
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
    }
  }
  void set_owner() noexcept {
#ifndef NDEBUG
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
#endif
  }

  std::atomic<bool> locked_{false};
#ifndef NDEBUG
  std::atomic<std::thread::id> owner_{};
#endif
};

}  // namespace wheelrpc::common
