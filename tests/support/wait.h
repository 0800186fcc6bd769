#pragma once
// Bounded waits for tests: wait for an outcome up to a generous deadline,
// never a fixed sleep standing in for "long enough".

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace wheelrpc::test {

/// Polls `pred` until true or `limit` passes; returns the last value.
template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return pred();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

/// A countdown latch with a bounded wait.
class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void count_down() {
    std::lock_guard l(mu_);
    if (--n_ <= 0) cv_.notify_all();
  }
  bool wait_for(std::chrono::milliseconds d = std::chrono::seconds(10)) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, d, [&] { return n_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

}  // namespace wheelrpc::test
