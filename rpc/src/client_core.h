#pragma once
// The engine behind Client: connections to the servers, the pending-call table,
// the waiting list, deadlines and completion.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/rpc/backoff.h>
#include <wheelrpc/rpc/channel_timer_task.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/transport/channel.h>

#include "call.h"
#include "pending_table.h"

namespace wheelrpc::rpc::detail {

class ClientCore;

/// The connection to one server. Its handler methods run on its channel's strand.
class ClientConnection final : public transport::ChannelHandler {
 public:
  enum class State { idle, connecting, handshaking, ready };

  ClientConnection(std::shared_ptr<ClientCore> core, boost::asio::ip::tcp::endpoint endpoint,
                   std::string peer, const BackoffOptions& backoff_options, std::uint64_t seed)
      : backoff(backoff_options, seed), core_(std::move(core)), endpoint_(endpoint), peer_(std::move(peer)) {}

  void on_frame(transport::Channel& channel, transport::Frame& frame) override;
  void on_close(transport::Channel& channel, const boost::system::error_code& ec,
                const std::string& reason) override;

  const boost::asio::ip::tcp::endpoint& endpoint() const noexcept { return endpoint_; }
  const std::string& peer() const noexcept { return peer_; }

  // Guarded by the core's mutex.
  State state = State::idle;
  std::shared_ptr<transport::Channel> channel;
  std::chrono::milliseconds heartbeat{0};  // agreed in the HELLO exchange
  bool wanted = false;                     // used once: keep it connected from now on
  Backoff backoff;                         // delays between connect attempts
  std::chrono::steady_clock::time_point next_attempt{};  // no attempt before this
  std::string last_error;                  // of the last failed attempt, "" once connected

 private:
  std::shared_ptr<ClientCore> core_;  // the cycle is broken by ClientCore::close()
  boost::asio::ip::tcp::endpoint endpoint_;
  std::string peer_;
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  using Clock = Call::Clock;

  ClientCore(boost::asio::any_io_executor ex, timer::Timer& timer, ClientOptions options);
  /// Creates the connection objects (needs shared_from_this, so not in the constructor).
  void init(const std::vector<boost::asio::ip::tcp::endpoint>& servers);

  void start_call(std::string method, std::string payload, CallOptions options,
                  boost::asio::any_completion_handler<Client::Signature> handler);
  void close();
  ClientStats stats() const;
  const boost::asio::any_io_executor& executor() const noexcept { return ex_; }

  // From connections (their strands).
  void on_connected(ClientConnection* conn, boost::system::error_code ec,
                    boost::asio::ip::tcp::socket socket);
  void on_hello(ClientConnection* conn, const transport::Frame& frame);
  void on_reply(ClientConnection* conn, transport::Frame& frame);
  void on_closed(ClientConnection* conn, const boost::system::error_code& ec, const std::string& reason);

  /// Where a completion comes from: it decides whether the deadline must be
  /// cancelled and whether the handler may run inline.
  enum class Origin { reply, timer, cancel_slot, other };
  /// Completes `call` if nobody did yet. Thread-safe; never holds the lock
  /// while invoking anything.
  bool complete(Call* call, boost::system::error_code ec, Response response, Origin origin);
  void on_deadline(Call* call);

 private:
  /// Sends calls (lock held on entry, released inside).
  void send_now(std::unique_lock<std::mutex>& lock, ClientConnection* conn, Call* call);
  void connect(ClientConnection* conn);  // lock held
  /// Starts an attempt if the connection is down, wanted and its backoff
  /// allows one now (lock held).
  void attempt(ClientConnection* conn, Clock::time_point now);
  void maybe_reconnect(ClientConnection* conn, Clock::time_point now);
  std::optional<std::vector<WatchedChannel>> watched();
  std::chrono::milliseconds idle_timeout_for(const ClientConnection& conn) const;
  ClientConnection* pick_ready();        // lock held
  bool any_connecting() const;           // lock held
  void table_insert(Call* call) { call->id = table_.insert(call); }  // lock held
  Call* table_take(std::uint64_t id) {                                // lock held
    Call* c = table_.take(id);
    if (c) c->id = 0;
    return c;
  }
  std::string describe(const Call* call, const char* what) const;

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const ClientOptions options_;
  std::string all_peers_;  // "a:1,b:2", set by init()

  mutable std::mutex mu_;
  bool closed_ = false;
  std::atomic<bool> closed_flag_{false};  // closed_, readable without the lock
  std::vector<std::shared_ptr<ClientConnection>> conns_;
  std::size_t next_conn_ = 0;
  std::vector<Call*> waiting_;  // each holds the books' reference; done ones are dropped lazily
  // Calls sent and awaiting a reply; each entry holds the books' reference.
  PendingTable<Call> table_;
  std::uint64_t next_event_id_ = 1;
  boost::asio::executor_work_guard<boost::asio::any_io_executor> work_;
  std::shared_ptr<HeartbeatTimerTask> heartbeat_task_;
  std::shared_ptr<ReconnectTimerTask> reconnect_task_;

  std::atomic<std::uint64_t> calls_{0}, ok_{0}, failed_{0}, timeouts_{0}, late_{0}, connects_{0},
      connect_failures_{0}, pending_{0};
};

}  // namespace wheelrpc::rpc::detail
