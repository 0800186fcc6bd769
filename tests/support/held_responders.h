#pragma once
// Responders a test holds until it releases them: calls that stay running
// (and keep their place under a concurrency limit) as long as the test wants.

#include <cstddef>
#include <deque>
#include <mutex>

#include <wheelrpc/rpc/server.h>

namespace wheelrpc::test {

/// Thread-safe: handlers add from any thread, the test reads and releases.
class HeldResponders {
 public:
  void add(rpc::Responder r) {
    std::lock_guard lock(mu_);
    held_.push_back(std::move(r));
  }
  std::size_t size() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  /// Replies "done" to the oldest held request (there must be one).
  void release_one() {
    rpc::Responder r;
    {
      std::lock_guard lock(mu_);
      r = std::move(held_.front());
      held_.pop_front();
    }
    r.reply("done");
  }
  /// Replies "done" to every held request.
  void release_all() {
    std::deque<rpc::Responder> all;
    {
      std::lock_guard lock(mu_);
      all.swap(held_);
    }
    for (auto& r : all) r.reply("done");
  }

 private:
  std::mutex mu_;
  std::deque<rpc::Responder> held_;
};

}  // namespace wheelrpc::test
