#pragma once
// std::mutex as a capability, and the scoped locks the analysis understands
// (libstdc++'s std::lock_guard and std::unique_lock carry no annotations).
// Use these for every lock the thread-safety analysis should check; they
// work with SpinLock too.

#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include <wheelrpc/common/thread_annotations.h>

namespace wheelrpc::common {

class WHEELRPC_CAPABILITY("mutex") Mutex {
 public:
  void lock() WHEELRPC_ACQUIRE() { mu_.lock(); }
  bool try_lock() WHEELRPC_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  void unlock() WHEELRPC_RELEASE() { mu_.unlock(); }
  /// For std::condition_variable: the lock under the capability.
  std::mutex& native() noexcept { return mu_; }

 private:
  std::mutex mu_;
};

/// std::shared_mutex as a capability: LockGuard takes it exclusively,
/// SharedLock shared.
class WHEELRPC_CAPABILITY("mutex") SharedMutex {
 public:
  void lock() WHEELRPC_ACQUIRE() { mu_.lock(); }
  void unlock() WHEELRPC_RELEASE() { mu_.unlock(); }
  void lock_shared() WHEELRPC_TSA(acquire_shared_capability()) { mu_.lock_shared(); }
  void unlock_shared() WHEELRPC_TSA(release_shared_capability()) { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

/// std::shared_lock with annotations (held for the whole scope).
class WHEELRPC_SCOPED_CAPABILITY SharedLock {
 public:
  explicit SharedLock(SharedMutex& mu) WHEELRPC_TSA(acquire_shared_capability(mu)) : mu_(mu) { mu_.lock_shared(); }
  ~SharedLock() WHEELRPC_RELEASE() { mu_.unlock_shared(); }
  SharedLock(const SharedLock&) = delete;
  SharedLock& operator=(const SharedLock&) = delete;

 private:
  SharedMutex& mu_;
};

/// std::lock_guard with annotations.
template <class M>
class WHEELRPC_SCOPED_CAPABILITY LockGuard {
 public:
  explicit LockGuard(M& mu) WHEELRPC_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~LockGuard() WHEELRPC_RELEASE() { mu_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  M& mu_;
};

/// std::unique_lock with annotations: locks on construction, may unlock and
/// lock again, unlocks on destruction if it holds the lock.
template <class M>
class WHEELRPC_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(M& mu) WHEELRPC_ACQUIRE(mu) : mu_(&mu) {
    mu_->lock();
    owns_ = true;
  }
  ~UniqueLock() WHEELRPC_RELEASE() {
    if (owns_) mu_->unlock();
  }
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void lock() WHEELRPC_ACQUIRE() {
    mu_->lock();
    owns_ = true;
  }
  void unlock() WHEELRPC_RELEASE() {
    owns_ = false;
    mu_->unlock();
  }
  bool owns_lock() const noexcept { return owns_; }
  M* mutex() const noexcept { return mu_; }

 private:
  M* mu_;
  bool owns_ = false;
};

}  // namespace wheelrpc::common
