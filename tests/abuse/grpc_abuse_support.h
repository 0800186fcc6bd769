#pragma once
// What the gRPC abuse tests share: a well-behaved gRPC client calling all
// along on its own HTTP/2 connection (beside abuse_support.h's native
// GoodClient), and the hand-made HTTP/2 an abuser sends
// (support/h2_frames.h).

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "support/h2_client.h"
#include "support/h2_frames.h"

namespace wheelrpc::test::abuse {

/// Unary calls to /test.Echo/Echo over one HTTP/2 connection, back to
/// back, until stopped; each must come back with its message and status 0
/// within 10 s. Counts what every call ended with.
class GoodGrpcClient {
 public:
  explicit GoodGrpcClient(std::uint16_t port) : port_(port) {}
  ~GoodGrpcClient() { stop(); }
  GoodGrpcClient(const GoodGrpcClient&) = delete;
  GoodGrpcClient& operator=(const GoodGrpcClient&) = delete;

  /// Makes `warmup` calls first (all must succeed), then calls on in its thread.
  bool start(int warmup = 50) {
    bool ok = true;
    std::thread([&] {
      client_ = std::make_unique<H2Client>(port_);
      for (int i = 0; i < warmup && ok; ++i) ok = one_call(i);
    }).join();
    if (!ok) return false;
    loop_ = std::thread([this] {
      for (int i = 0; !stopping_.load(); ++i) one_call(i);
    });
    return true;
  }
  void stop() {
    stopping_.store(true);
    if (loop_.joinable()) loop_.join();
  }
  std::uint64_t ok() const { return ok_.load(); }
  std::uint64_t failed() const { return failed_.load(); }
  std::string first_error() {
    std::lock_guard lock(mu_);
    return first_error_;
  }

 private:
  bool one_call(int i) {
    const std::string message = "good " + std::to_string(i);
    const auto id = client_->grpc_call("/test.Echo/Echo", message);
    const bool done = id > 0 && client_->wait_closed(id, std::chrono::seconds(10));
    const auto& s = client_->stream(id);
    if (done && s.grpc_status() == 0 && s.messages() == std::vector<std::string>{message}) {
      ok_.fetch_add(1);
      return true;
    }
    failed_.fetch_add(1);
    std::lock_guard lock(mu_);
    if (first_error_.empty()) {
      first_error_ = "call " + std::to_string(i) + ": " +
                     (done ? "status " + std::to_string(s.grpc_status()) + " " + s.grpc_message()
                           : std::string("no answer within 10 s"));
    }
    return false;
  }

  std::uint16_t port_;
  std::unique_ptr<H2Client> client_;  // used by one thread at a time (start's, then the loop's)
  std::thread loop_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> ok_{0}, failed_{0};
  std::mutex mu_;
  std::string first_error_;
};

}  // namespace wheelrpc::test::abuse
