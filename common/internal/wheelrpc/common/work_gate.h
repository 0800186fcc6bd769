#pragma once
// Lets an owner shut down only once no timer callback of its own is still
// running, so that nothing posts into an executor its user is about to
// destroy. Callbacks `enter()` (false once closed: do nothing) and `leave()`;
// the owner calls `close_and_wait()` once, from a thread that is not inside
// one of those callbacks. Sequentially consistent on both sides (Dekker): a
// callback either sees the gate closed or is waited for.

#include <atomic>
#include <thread>

namespace wheelrpc::common {

class WorkGate {
 public:
  bool enter() noexcept {
    active_.fetch_add(1);
    if (closed_.load()) {
      active_.fetch_sub(1);
      return false;
    }
    return true;
  }
  void leave() noexcept { active_.fetch_sub(1); }

  void close_and_wait() noexcept {
    closed_.store(true);
    while (active_.load() != 0) std::this_thread::yield();
  }

  /// Scoped enter/leave: `if (WorkGate::Scope s(gate); !s) return;`
  class Scope {
   public:
    explicit Scope(WorkGate& g) noexcept : gate_(g.enter() ? &g : nullptr) {}
    ~Scope() {
      if (gate_) gate_->leave();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    explicit operator bool() const noexcept { return gate_ != nullptr; }

   private:
    WorkGate* gate_;
  };

 private:
  std::atomic<int> active_{0};
  std::atomic<bool> closed_{false};
};

}  // namespace wheelrpc::common
