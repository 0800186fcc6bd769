#pragma once
// A shared_ptr any thread may read and replace, behind a leaf spin lock held
// only to copy or swap the pointer (no I/O, no other lock, never across a
// call). libstdc++ 12's std::atomic<std::shared_ptr> is such a lock too, but
// one ThreadSanitizer cannot see through.

#include <atomic>
#include <cstdint>
#include <memory>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/spin_lock.h>

namespace wheelrpc::rpc::detail {

template <class T>
class SharedPtrCell {
 public:
  std::shared_ptr<T> load() const {
    common::LockGuard lock(mu_);
    return ptr_;
  }
  void store(std::shared_ptr<T> p) {
    {
      common::LockGuard lock(mu_);
      ptr_.swap(p);
      // Written only under mu_: a plain add; released for version()'s readers.
      version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    // The old pointer is released here, outside the lock.
  }
  /// Counts the stores: a load() after reading a version (acquire) returns
  /// the pointer stored with it or a later one.
  std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }

 private:
  mutable common::SpinLock mu_;
  std::shared_ptr<T> ptr_ WHEELRPC_GUARDED_BY(mu_);
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace wheelrpc::rpc::detail
