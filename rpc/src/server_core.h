#pragma once
// The engine behind Server: accepted connections, handler dispatch, the HELLO
// exchange and server-side deadlines.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/rpc/channel_timer_task.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/transport/acceptor.h>
#include <wheelrpc/transport/channel.h>

#include "work_gate.h"

namespace wheelrpc::rpc::detail {

// The shared state behind a Responder, completed exactly once by the handler's
// reply, by the deadline task (server_timeout) or by a dropped Responder.
// References: the Responder's, and the timer's while the deadline task may run.
struct ReplySlot {
  std::atomic<int> refs{1};
  std::atomic<bool> done{false};
  std::shared_ptr<ServerCore> core;
  std::shared_ptr<transport::Channel> channel;
  std::uint64_t request_id = 0;
  bool two_way = true;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  timer::Timeout timeout;
  std::string method;  // for logs
};

inline void add_ref(ReplySlot* s) noexcept { s->refs.fetch_add(1, std::memory_order_relaxed); }
inline void release(ReplySlot* s) noexcept {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) std::unique_ptr<ReplySlot>{s};
}

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
  void on_request(transport::Channel& channel, transport::Frame& frame);
  void on_connection_closed(std::uint64_t id);
  std::chrono::milliseconds close_timeout_for(std::chrono::milliseconds agreed) const;
  void count_protocol_error() { protocol_errors_.fetch_add(1, std::memory_order_relaxed); }
  const ServerOptions& options() const noexcept { return options_; }

  /// Completes a slot: sends the reply unless it was completed already.
  bool finish(ReplySlot* slot, transport::Status status, std::string payload,
              transport::Attachments attachments, bool from_timer);
  static Responder make_responder(ReplySlot* slot) noexcept { return Responder(slot); }

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
      late_replies_{0}, method_not_found_{0}, protocol_errors_{0};
};

}  // namespace wheelrpc::rpc::detail
