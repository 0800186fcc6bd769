#pragma once
// The engine behind Server: accepted connections, handler dispatch, the HELLO
// exchange and server-side deadlines.

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/rpc/channel_timer_task.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/transport/acceptor.h>
#include <wheelrpc/transport/channel.h>

#include "work_gate.h"

namespace wheelrpc::rpc::detail {

// Request ids a client cancelled on one connection. Bounded: an id is
// forgotten when its reply is dropped, or as the oldest of too many (a cancel
// that crossed its reply on the wire names a request already answered).
class CancelSet {
 public:
  void add(std::uint64_t id) {
    std::lock_guard lock(mu_);
    if (!ids_.insert(id).second) return;
    order_.push_back(id);
    if (order_.size() > kMax) {
      ids_.erase(order_.front());
      order_.pop_front();
    }
    any_.store(true, std::memory_order_release);
  }
  /// True if `id` was cancelled; forgets it when `forget`.
  bool check(std::uint64_t id, bool forget) {
    if (!any_.load(std::memory_order_acquire)) return false;  // the common case: no lock
    std::lock_guard lock(mu_);
    if (ids_.count(id) == 0) return false;
    if (forget) {
      ids_.erase(id);
      order_.erase(std::find(order_.begin(), order_.end(), id));
      if (ids_.empty()) any_.store(false, std::memory_order_release);
    }
    return true;
  }

 private:
  static constexpr std::size_t kMax = 1024;
  std::mutex mu_;
  std::deque<std::uint64_t> order_;
  std::unordered_set<std::uint64_t> ids_;
  std::atomic<bool> any_{false};
};

// The shared state behind a Responder, completed exactly once by the handler's
// reply, by the deadline (server_timeout, posted to the executor from the
// timer's worker) or by a dropped Responder. Shared through ReplySlotPtr: the
// Responder's reference, and the deadline task's while it may run.
struct ReplySlot {
  std::atomic<int> refs{0};
  std::atomic<bool> done{false};
  std::shared_ptr<ServerCore> core;
  std::shared_ptr<transport::Channel> channel;
  std::shared_ptr<CancelSet> cancels;  // of the connection
  std::uint64_t request_id = 0;
  bool two_way = true;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  timer::Timeout timeout;
  std::string method;  // for logs
};

using ReplySlotPtr = boost::intrusive_ptr<ReplySlot>;

// Threads: a connection's frames are handled on its channel's strand; a
// handler may reply from any thread. The timer's worker only decides: the
// deadline task and the HELLO timeout post to the executor (or to the
// channel's strand), and the CloseTimerTask and HeartbeatTimerTask run their
// checks on the executor. `mu_` guards the connection list and is never
// taken on the request path.
class ServerCore : public std::enable_shared_from_this<ServerCore> {
 public:
  ServerCore(boost::asio::any_io_executor ex, timer::Timer& timer, ServerOptions options)
      : ex_(std::move(ex)), timer_(timer), options_(std::move(options)) {}

  void handle(std::string method, Server::Handler handler);
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void stop();
  ServerStats stats() const;

  // From connections (their strands).
  void on_request(transport::Channel& channel, transport::Frame& frame, const std::shared_ptr<CancelSet>& cancels);
  void on_connection_closed(std::uint64_t id);
  std::chrono::milliseconds close_timeout_for(std::chrono::milliseconds agreed) const;
  void count_protocol_error() { protocol_errors_.fetch_add(1, std::memory_order_relaxed); }
  const ServerOptions& options() const noexcept { return options_; }

  /// Completes a slot: sends the reply unless it was completed already.
  /// Any thread but the timer's worker.
  bool finish(ReplySlot& slot, transport::Status status, std::string payload,
              transport::Attachments attachments, bool from_timer);
  /// The deadline passed (posted from the timer's worker).
  void on_deadline(const ReplySlotPtr& slot);
  std::chrono::steady_clock::time_point now() const noexcept {
    return options_.clock ? options_.clock->now() : std::chrono::steady_clock::now();
  }
  const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
  WorkGate& timer_work() noexcept { return timer_work_; }

 private:
  void on_accept(boost::asio::ip::tcp::socket socket);

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const ServerOptions options_;
  std::unordered_map<std::string, Server::Handler> handlers_;  // fixed once listening
  std::shared_ptr<transport::Acceptor> acceptor_;

  std::optional<std::vector<WatchedChannel>> watched();

  mutable std::mutex mu_;
  bool stopped_ = false;
  struct Conn {
    std::weak_ptr<transport::Channel> channel;
    std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms;  // agreed in HELLO; 0 before
  };
  std::unordered_map<std::uint64_t, Conn> channels_;
  std::shared_ptr<CloseTimerTask> close_task_;
  std::shared_ptr<HeartbeatTimerTask> heartbeat_task_;

  WorkGate timer_work_;  // deadline and HELLO-timeout callbacks in progress
  std::atomic<std::uint64_t> accepted_{0}, requests_{0}, replies_{0}, errors_{0}, server_timeouts_{0},
      late_replies_{0}, method_not_found_{0}, protocol_errors_{0}, cancelled_{0};
};

}  // namespace wheelrpc::rpc::detail
