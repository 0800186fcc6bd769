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
#include <boost/smart_ptr/intrusive_ptr.hpp>

#include "channel_timer_task.h"
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/transport/acceptor.h>
#include <wheelrpc/transport/channel.h>

#include <wheelrpc/rpc/trace.h>

#include "bad_input.h"
#include "memory_return.h"
#include "concurrency_limiter.h"
#include "lazy_trace.h"
#include "method_metrics.h"
#include <wheelrpc/common/recycled.h>
#include <wheelrpc/common/ref_count.h>
#include <wheelrpc/common/work_gate.h>

namespace wheelrpc::rpc::detail {

// Request ids a client cancelled on one connection. Bounded: an id is
// forgotten when its reply is dropped, or as the oldest of too many (a cancel
// that crossed its reply on the wire names a request already answered).
class CancelSet {
 public:
  void add(std::uint64_t id) {
    std::lock_guard lock(mu_);
    if (!ids_) ids_ = std::make_unique<Ids>();  // most connections never cancel: no memory until one does
    if (!ids_->set.insert(id).second) return;
    ids_->order.push_back(id);
    if (ids_->order.size() > kMax) {
      ids_->set.erase(ids_->order.front());
      ids_->order.pop_front();
    }
    any_.store(true, std::memory_order_release);
  }
  /// True if `id` was cancelled; forgets it when `forget`.
  bool check(std::uint64_t id, bool forget) {
    if (!any_.load(std::memory_order_acquire)) return false;  // the common case: no lock
    std::lock_guard lock(mu_);
    if (!ids_ || ids_->set.count(id) == 0) return false;
    if (forget) {
      ids_->set.erase(id);
      ids_->order.erase(std::find(ids_->order.begin(), ids_->order.end(), id));
      if (ids_->set.empty()) any_.store(false, std::memory_order_release);
    }
    return true;
  }

 private:
  static constexpr std::size_t kMax = 1024;
  struct Ids {
    std::deque<std::uint64_t> order;
    std::unordered_set<std::uint64_t> set;
  };
  std::mutex mu_;
  std::unique_ptr<Ids> ids_;
  std::atomic<bool> any_{false};
};

// What the requests of one connection share: the server, the channel to
// answer on, and the ids the client cancelled. One reference per request in
// flight (ReplySlot) and one of the connection's own: the counts stay on the
// connection's cache line instead of the server's.
struct ServerConnContext {
  std::atomic<int> refs{0};
  std::shared_ptr<ServerCore> core;
  std::weak_ptr<transport::Channel> channel;  // the channel owns the connection: weak here
  CancelSet cancels;
  std::atomic<std::int64_t> in_flight{0};  // its requests not yet answered
  std::atomic<std::uint32_t> peer_max_body{transport::kDefaultMaxBody};  // the client's, from its HELLO

  friend void intrusive_ptr_add_ref(ServerConnContext* c) noexcept { c->refs.fetch_add(1, std::memory_order_relaxed); }
  friend void intrusive_ptr_release(ServerConnContext* c) noexcept {
    if (common::drop_reference(c->refs)) delete c;
  }
};
using ConnContextPtr = boost::intrusive_ptr<ServerConnContext>;

// The shared state behind a Responder, completed exactly once by the handler's
// reply, by the deadline (server_timeout, posted to the executor from the
// timer's worker) or by a dropped Responder. Shared through ReplySlotPtr: the
// Responder's reference, and the deadline task's while it may run.
//
// The deadline goes on the wheel only if the handler has not answered by the
// time it returns (ServerCore::arm_deadline): a handler that replies inline
// costs no timeout, and its reply is checked against the deadline instead
// (finish). `state` orders the two ends: whoever sets its bit second sees
// the other's (the answer cancels an armed timeout; arming after the answer
// cancels its own).
struct ReplySlot : common::Recycled<ReplySlot> {
  static constexpr std::uint8_t kAnswered = 1;  // finish() ran: exactly once
  static constexpr std::uint8_t kArmed = 2;     // `timeout` holds its deadline on the wheel
  ReplySlot() = default;
  ReplySlot(const ReplySlot&) = delete;
  ReplySlot& operator=(const ReplySlot&) = delete;
  // The handler is done with the request (its Responder is gone) and so is
  // the deadline: the method may admit another call. `running` belongs to a
  // handler entry of the server, which `conn` keeps alive.
  ~ReplySlot() {
    if (running) running->fetch_sub(1);
  }

  std::atomic<int> refs{0};
  std::atomic<std::uint8_t> state{0};  // kAnswered | kArmed
  bool answered() const noexcept { return state.load(std::memory_order_acquire) & kAnswered; }
  ConnContextPtr conn;
  ServerCore* core = nullptr;  // conn->core, kept alive by it
  std::uint64_t request_id = 0;
  bool two_way = true;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  timer::Timeout timeout;
  std::string method;  // for logs
  MethodCells* cells = nullptr;  // null: ServerOptions::metrics off
  std::atomic<std::size_t>* running = nullptr;  // its method's running count, under a concurrency limit
                                                // (given back by the destructor)
  std::chrono::steady_clock::time_point received{};
  LazyTrace trace;  // the request's traceparent, parsed when asked
  // A call from inside the process (Server::async_invoke): completed here
  // instead of a reply on a channel.
  std::function<void(Status, std::string, transport::Attachments)> local;
  // Overload control (server_overload.cc): counted by the server's
  // concurrency limit (given back by finish()), and how long it waited for
  // the handler executor (ns; -1 until its handler starts).
  bool limited = false;
  std::atomic<std::int64_t> queued_ns{-1};
  // Its method's handler-time average, when its handler ran from the handler
  // executor: the handler's answer adds its time to it (finish()).
  std::atomic<std::int64_t>* service_ns = nullptr;
};

using ReplySlotPtr = boost::intrusive_ptr<ReplySlot>;

/// Another reference to a slot no other thread can see yet (just made, its
/// deadline not scheduled): counted with a plain store, not a locked add.
inline ReplySlotPtr share_unpublished(ReplySlot& slot) noexcept {
  common::add_unpublished_reference(slot.refs);
  return ReplySlotPtr(&slot, /*add_ref=*/false);
}

// Threads: a connection's frames are handled on its channel's strand; a
// handler may reply from any thread. The timer's worker only decides: the
// deadline task and the HELLO timeout post to the executor (or to the
// channel's strand), and the CloseTimerTask and HeartbeatTimerTask run their
// checks on the executor. `mu_` guards the connection list and is never
// taken on the request path.
class ServerCore : public std::enable_shared_from_this<ServerCore> {
 public:
  ServerCore(boost::asio::any_io_executor ex, timer::Timer& timer, ServerOptions options);

  void handle(std::string method, Server::Handler handler, MethodOptions options);
  /// Runs `method`'s handler for a call from inside the process (the admin
  /// gateway): as a request read from a connection, with `budget` as its
  /// deadline (0: none); `done` runs once, on any thread.
  void invoke(std::string method, std::string payload, transport::Attachments attachments,
              std::chrono::milliseconds budget,
              std::function<void(Status, std::string, transport::Attachments)> done);
  std::vector<MethodStats> method_stats() const { return methods_.snapshot(); }
  std::vector<TimeoutRecord> recent_timeouts() const { return timeout_log_.snapshot(); }
  std::vector<ConnectionInfo> connections() const;
  void set_online(bool online);
  bool online() const noexcept { return !offline_.load(); }
  ServerState state() const;
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint, std::string& message);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void stop();
  /// `flush`: connections close once their queued replies are written (at
  /// most kFlushLimit later), instead of at once.
  void stop(bool flush);
  static constexpr std::chrono::milliseconds kFlushLimit{1000};
  void start_shutdown(std::chrono::milliseconds drain_timeout,
                      boost::asio::any_completion_handler<Server::ShutdownSignature> handler);
  /// The drain phase of a graceful shutdown (after the withdraw and its
  /// grace): stops accepting, refuses new requests, waits for the calls in
  /// flight up to `drain_timeout`. Any thread but the timer's worker.
  void begin_drain(std::chrono::milliseconds drain_timeout);
  /// Ends a graceful shutdown (once): stop(), then the handler with `ec`.
  /// Runs on the executor.
  void finish_shutdown(boost::system::error_code ec);
  /// While shutting down: ends it if no open connection has a request in
  /// flight (requests of closed connections can no longer be answered).
  /// Runs on the executor.
  void check_drained();
  /// Requests not yet answered on the open connections.
  std::uint64_t in_flight() const;
  /// The shutdown's handler, taken, with its drain timeout cancelled.
  boost::asio::any_completion_handler<Server::ShutdownSignature> take_shutdown_handler();
  ServerStats stats() const;

  // From connections (their strands).
  void on_request(transport::Channel& channel, transport::Frame& frame, const ConnContextPtr& conn);
  void on_connection_closed(std::uint64_t id);
  std::chrono::milliseconds close_timeout_for(std::chrono::milliseconds agreed) const;
  /// A connection closed for bad input: counted by reason, logged (rate-limited).
  void note_bad_input(BadInput kind, const transport::Channel& channel, std::string_view reason) {
    bad_input_.note(kind, channel.id(), channel.remote(), reason);
  }
  void count_read_pause() { read_pauses_.fetch_add(1, std::memory_order_relaxed); }
  const ServerOptions& options() const noexcept { return options_; }

  /// Who answers a slot: the server itself (a refusal), the handler (through
  /// its Responder: checked against a deadline not on the wheel) or the
  /// deadline (posted from the timer's worker).
  enum class Answer : std::uint8_t { server, handler, deadline };
  /// Completes a slot: sends the reply unless it was completed already.
  /// Any thread but the timer's worker.
  bool finish(ReplySlot& slot, Status status, std::string payload,
              transport::Attachments attachments = {}, Answer by = Answer::server);
  /// Puts the deadline of `slot` on the wheel unless its handler answered it
  /// already (called once the handler returned or was queued).
  void arm_deadline(ReplySlotPtr slot);
  /// The deadline passed (posted from the timer's worker).
  void on_deadline(const ReplySlotPtr& slot);
  std::chrono::steady_clock::time_point now() const noexcept {
    return options_.clock ? options_.clock->now() : timer::fast_steady_now();
  }
  const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
  common::WorkGate& timer_work() noexcept { return timer_work_; }

 private:
  void on_accept(boost::asio::ip::tcp::socket socket);
  /// Asks the announcer to withdraw the server (`done` may be empty).
  void withdraw(std::function<void()> done);

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const ServerOptions options_;
  /// Runs the handler of a request whose slot is set up (`it`: its entry).
  struct Method {
    Server::Handler handler;
    MethodCells* cells = nullptr;
    std::size_t max_concurrency = 0;  // 0: no limit
    // Calls running now, counted only under a limit (shared by the threads
    // that run the method: the price of the limit).
    std::unique_ptr<std::atomic<std::size_t>> running;
    // With a handler executor: the time (ns) its handler has recently taken
    // to answer, from its start, a moving average (server_overload.cc); 0:
    // none yet.
    std::unique_ptr<std::atomic<std::int64_t>> service_ns;
  };
  /// Admits a request of `method` under its concurrency limit (counting it in
  /// `slot`), or answers it overloaded; false if refused.
  bool admit(const Method& method, ReplySlot& slot);
  void run_handler(const Method& method, Request req, ReplySlotPtr slot, std::uint64_t conn_id);
  /// "ip:port" of a connection still open (for log lines off the hot path).
  std::string peer_of(std::uint64_t conn_id) const;
  /// The trace id in force on this thread in hex, or "-".
  static std::string current_trace_id();

  // Overload control (server_overload.cc). The checks of the default path
  // (no limit, handlers inline) are inline here: they cost it a branch each.
  /// When the request's bytes were read (the channel's last read, stamped
  /// with the timer's fast steady clock; with ServerOptions::clock: now).
  std::chrono::steady_clock::time_point receipt_time(const transport::Channel& channel) const noexcept {
    return options_.clock ? options_.clock->now() : channel.last_read();
  }
  /// Sheds a request whose deadline passed before it was handled
  /// (deadline_admission); true if it did.
  bool shed_on_arrival(ReplySlot& slot) { return options_.deadline_admission && slot.deadline && shed_if_spent(slot); }
  bool shed_if_spent(ReplySlot& slot);
  /// Admits a request under the server's concurrency limit, or answers it
  /// overloaded; false if refused.
  bool admit_server(ReplySlot& slot) { return !limiter_.enabled() || admit_under_limit(slot); }
  bool admit_under_limit(ReplySlot& slot);
  /// Runs the handler inline, or queues it on ServerOptions::handler_executor
  /// (shedding it there if its deadline passes first).
  void dispatch(const Method& method, Request&& req, ReplySlotPtr&& slot, std::uint64_t conn_id) {
    if (options_.handler_executor) {
      queue_handler(method, std::move(req), std::move(slot), conn_id);
      return;
    }
    slot->queued_ns.store(0, std::memory_order_relaxed);
    run_handler(method, std::move(req), std::move(slot), conn_id);
  }
  void queue_handler(const Method& method, Request&& req, ReplySlotPtr&& slot, std::uint64_t conn_id);
  /// Adds the time a handler took to answer, from its start, to its method's average.
  static void record_service_time(std::atomic<std::int64_t>& avg, std::chrono::nanoseconds took);
  /// Why a request whose turn came at `t` on the handler executor is shed
  /// (deadline_admission: its deadline passed, too little of it is left, or
  /// it waited past queue_target in a standing queue), or nothing.
  std::optional<std::string> shed_reason(const Method& method, const ReplySlot& slot,
                                         std::chrono::steady_clock::time_point t) const;
  /// The handler executor's queue was seen empty at `t`.
  void queue_emptied(std::chrono::steady_clock::time_point t);
  std::atomic<std::int64_t> queue_emptied_ns_{0};  // steady ns (the server's clock)
  void count_shed(const ReplySlot& slot);
  /// Gives back the slot's place under the concurrency limit, with its latency.
  void release_limit(const ReplySlot& slot);
  ConcurrencyLimiter limiter_;
  std::atomic<std::uint64_t> shed_{0};
  std::atomic<std::int64_t> queued_{0};  // posted to the handler executor, not yet started
  void record_timeout(const ReplySlot& slot, std::chrono::steady_clock::time_point t);

  MethodTable methods_;
  TimeoutLog timeout_log_;
  MethodCells* unknown_cells_ = nullptr;  // "(unknown)": requests for methods with no handler
  std::unordered_map<std::string, Method> handlers_;  // fixed once listening
  ConnContextPtr local_context_;  // the context of in-process calls (invoke)
  std::atomic<bool> offline_{false};
  std::atomic<bool> listening_{false};
  boost::asio::ip::tcp::endpoint announced_endpoint_;  // set by listen (under mu_): local_endpoint()
  std::shared_ptr<transport::Acceptor> acceptor_;  // under mu_; released by stop()

  bool watched(std::vector<WatchedChannel>& out);

  mutable std::mutex mu_;
  bool stopped_ = false;
  struct Conn {
    std::weak_ptr<transport::Channel> channel;
    std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms;  // agreed in HELLO; 0 before
    ConnContextPtr context;  // its requests in flight (a graceful shutdown waits for them)
  };
  std::unordered_map<std::uint64_t, Conn> channels_;
  std::shared_ptr<CloseTimerTask> close_task_;
  std::shared_ptr<HeartbeatTimerTask> heartbeat_task_;

  common::WorkGate timer_work_;  // deadline and HELLO-timeout callbacks in progress
  std::shared_ptr<MemoryReturn> memory_return_;  // gives back what closed connections freed (null: off)

  // Graceful shutdown. Each connection's context counts its requests not yet
  // answered (from receipt until the slot completes): no counter shared by
  // all connections on the request path.
  std::atomic<bool> shutdown_started_{false};  // async_shutdown began (withdraw, grace, drain)
  std::atomic<bool> draining_{false};          // new requests are refused
  std::atomic<bool> shutdown_finished_{false};
  std::atomic<bool> announced_{false};         // the announcer announced us and was not asked to withdraw
  std::mutex shutdown_mu_;  // guards the two below
  boost::asio::any_completion_handler<Server::ShutdownSignature> shutdown_handler_;
  timer::Timeout drain_timeout_;
  std::atomic<std::uint64_t> refused_shutting_down_{0}, refused_offline_{0}, refused_overloaded_{0},
      refused_connections_{0}, slow_reader_closes_{0};
  std::atomic<std::int64_t> last_refusal_log_{0};  // steady ns: refusals are logged at most once a second
  // What every request adds to, per thread slot (no locked add).
  static constexpr std::size_t kRequestsCounter = 0, kRepliesCounter = 1;
  common::SlotCounters<2> hot_;
  std::atomic<std::uint64_t> accepted_{0}, errors_{0}, server_timeouts_{0},
      late_replies_{0}, method_not_found_{0}, cancelled_{0}, oversize_replies_{0}, read_pauses_{0};
  BadInputLog bad_input_;  // connections closed for breaking the protocol, by reason
  // ServerOptions::tls, loaded by the constructor; last, so the members above
  // keep their places with or without it.
  std::optional<transport::TlsContext> tls_;
};

}  // namespace wheelrpc::rpc::detail
