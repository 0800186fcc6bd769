#pragma once
// A test-and-test-and-set spin lock for the shards' short critical sections
// (tens of nanoseconds). Falls back to yielding so a preempted holder on a
// small machine does not burn the other core's time slice.

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WHEELRPC_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define WHEELRPC_CPU_RELAX() asm volatile("yield")
#else
#define WHEELRPC_CPU_RELAX() ((void)0)
#endif

namespace wheelrpc::timer::detail {

class SpinLock {
 public:
  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lock_slow();
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  void lock_slow() noexcept {
    for (unsigned spins = 0;; ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (spins++ < 64) {
          WHEELRPC_CPU_RELAX();
        } else {
          std::this_thread::yield();
        }
      }
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
    }
  }

  std::atomic<bool> locked_{false};
};

}  // namespace wheelrpc::timer::detail
