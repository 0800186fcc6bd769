#pragma once
// A std::mutex that knows its owner, so code that must run with it held can
// assert it (muduo's assertInLoopThread, for locks): `assert(mu.held())`.
// The owner is tracked in every build (one relaxed store per lock and
// unlock); `held()` is meant for assertions.

#include <atomic>
#include <mutex>
#include <thread>

namespace wheelrpc::rpc::detail {

class CheckedMutex {
 public:
  void lock() {
    mu_.lock();
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    owner_.store(std::thread::id{}, std::memory_order_relaxed);
    mu_.unlock();
  }
  /// True when the calling thread holds the mutex.
  bool held() const noexcept { return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }

 private:
  std::mutex mu_;
  std::atomic<std::thread::id> owner_{};
};

}  // namespace wheelrpc::rpc::detail
