#pragma once
// A counter with one writer at a time (one thread, a strand, or whoever
// holds a lock) and readers anywhere: a plain load and store instead of a
// locked read-modify-write. Debug builds assert that no two threads write
// it at once (a second writer would lose increments).

#include <atomic>
#include <cassert>
#include <cstdint>
#include <thread>

namespace wheelrpc::common {

template <class T = std::uint64_t>
class SingleWriterCounter {
 public:
  SingleWriterCounter() = default;
  explicit SingleWriterCounter(T v) noexcept : v_(v) {}

  void add(T n = 1) noexcept {
    [[maybe_unused]] const WriterCheck check(*this);
    v_.store(static_cast<T>(v_.load(std::memory_order_relaxed) + n), std::memory_order_relaxed);
  }
  void sub(T n = 1) noexcept {
    [[maybe_unused]] const WriterCheck check(*this);
    v_.store(static_cast<T>(v_.load(std::memory_order_relaxed) - n), std::memory_order_relaxed);
  }
  /// The value before this increment.
  T increment() noexcept {
    [[maybe_unused]] const WriterCheck check(*this);
    const T before = v_.load(std::memory_order_relaxed);
    v_.store(static_cast<T>(before + 1), std::memory_order_relaxed);
    return before;
  }
  T load() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
#ifndef NDEBUG
  struct WriterCheck {
    explicit WriterCheck(SingleWriterCounter& c) noexcept : c_(c) {
      std::thread::id none{};
      const bool alone =
          c_.writer_.compare_exchange_strong(none, std::this_thread::get_id(), std::memory_order_relaxed);
      assert(alone && "SingleWriterCounter written by two threads at once");
      (void)alone;
    }
    ~WriterCheck() { c_.writer_.store(std::thread::id{}, std::memory_order_relaxed); }
    SingleWriterCounter& c_;
  };
  std::atomic<std::thread::id> writer_{};
#else
  struct WriterCheck {
    explicit WriterCheck(SingleWriterCounter&) noexcept {}
  };
#endif
  std::atomic<T> v_{0};
};

}  // namespace wheelrpc::common
