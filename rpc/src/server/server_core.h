#pragma once
// The engine behind Server: accepted connections, the requests read from
// them or invoked in process, and their answers.
//
// Concurrency model (who owns what, which thread runs what):
// - A connection's frames (HELLO, heartbeats, cancels, requests) and its close
//   run on its channel's strand (its wire, made by the ServerWireFactory,
//   reports them as ServerEvents: one virtual call per request). A request is admitted
//   (Admission::admit) and its handler run inline there, unless
//   ServerOptions::handler_executor is set: then the handler is queued there.
//   An in-process call (Server::async_invoke) is admitted and run on the
//   server's executor.
// - A request's answer is its ReplySlot, completed exactly once by finish():
//   by the handler's Responder from any thread, by a refusal where it was
//   admitted, or by its deadline on the executor. The slot's `state` bits,
//   not a lock, decide who answers first; a late answer is counted and
//   dropped. The reply is queued on the channel from the answering thread
//   (Channel::send is thread-safe).
// - The timer's worker only decides and posts: a request's deadline
//   (SlotDeadlineTask), the grace and drain timeouts and a connection's
//   maximum age (ConnectionAgeTask: its age, drain checks and grace) post to
//   the executor, the HELLO timeout closes the channel (a post to its strand),
//   and the CloseTimerTask and HeartbeatTimerTask (ServerLiveness) run their
//   checks on the executor. Each enters `timer_work_` first, so stop() can
//   wait for the ones in progress.
// - Counters are relaxed atomics (the hot two per thread slot: `hot_`);
//   requests in flight are counted per connection (ServerConnContext), not
//   on a counter all connections share.
// - Lifetime: Server holds the core; every connection context holds it too
//   (ServerConnContext::events),
//   and every ReplySlot holds its connection context, so the core outlives
//   every request not yet answered and every posted job that holds a slot.
//
// Locks, and what each guards (outer to inner; never the other way):
//   ServerShutdown::shutdown_mu_ -> ServerCore::mu_ -> leaves
// - `ServerShutdown::shutdown_mu_`: the shutdown handler and the grace or
//   drain timeout. ServerShutdown::start reads `stopped_` (under `mu_`)
//   inside it.
// - `ServerCore::mu_`: `channels_`, `stopped_`, `acceptor_`,
//   `announced_endpoint_` and the liveness tasks (`liveness_`). Never taken on
//   the request path, apart from peer_of() when a handler throws. No user
//   code, channel close or timer-task cancel runs under it.
// - Leaves: `CancelSet::mu_` (a connection's cancelled ids), the
//   MethodTable's and TimeoutLog's locks, the health service's
//   (`HealthRegistry::mu_`, then a `HealthWatchStream::mu_` inside it; no
//   stream is written under either), and the timer's and channel's own.
//   No lock is held across a handler or a completion handler.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_slot.h>
#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/rpc/health.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/service.h>
#include <wheelrpc/rpc/trace.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/acceptor.h>
#include <wheelrpc/transport/channel.h>

#include "server/admission.h"
#include "server/connection_age.h"
#include "server/health_registry.h"
#include "server/load_reporter.h"
#include "base/payload_coding.h"
#include "base/bad_input.h"
#include "server/memory_return.h"
#include "base/method_metrics.h"
#include "server/reply_slot.h"
#include "server/server_host.h"
#include "server/server_liveness.h"
#include "server/server_shutdown.h"
#include "server/stream_methods.h"
#include "stream/stream_counters.h"
#include "wire/server_events.h"
#include "wire/server_wire_factory.h"
#include "wire/server_wire_settings.h"
#include "wire/stream_open.h"

namespace wheelrpc::rpc::detail {

class StreamCore;

/// The engine behind Server: the ServerEvents its connections' wires report
/// to, and the ServerHost its parts (admission, interception, shutdown)
/// reach it through. Thread-safe unless a function says where it runs.
class ServerCore final : public ServerHost, public ServerEvents, public std::enable_shared_from_this<ServerCore> {
 public:
  /// `make_wire` makes the wire of each accepted connection (wires.h: the
  /// native protocol, handing HTTP/2 clients to gRPC).
  ServerCore(boost::asio::any_io_executor ex, timer::Timer& timer, ServerOptions options, ServerWireFactory make_wire);

  /// Registers `method` (Server::handle). Before listening: after, throws std::logic_error.
  void handle(std::string method, Server::Handler handler, MethodOptions options);
  /// Registers a stream method (Server::handle_stream); `kind` when a typed
  /// service says. Before listening, like handle().
  void handle_stream(std::string method, StreamHandler handler, MethodOptions options,
                     std::optional<MethodKind> kind = std::nullopt);
  /// A client's OPEN (its connection's strand): admitted and accepted, the
  /// handler started; or refused with a status.
  /// `wire`: the connection's protocol when it is not the native one (the
  /// answer and the stream's frames go through it).
  void on_stream_open(ServerTransport& conn, StreamOpenRequest& open, const ConnContextPtr& context) override;
  /// Whether `method` is a stream method (Server::handle_stream). Any thread
  /// once listening.
  bool is_stream_method(const std::string& method) const override { return stream_methods_.contains(method); }
  std::optional<std::string> kind_mismatch(const std::string& method, bool as_stream) const override;
  /// A graceful shutdown began: each connection whose protocol says so
  /// (gRPC's GOAWAY) tells its client. Any thread.
  void announce_drain() override;
  void count_unknown_stream_frame() override { unknown_stream_frames_.fetch_add(1, std::memory_order_relaxed); }
  /// Registers every method of `service` (Server::add_service): none if
  /// one of them is registered already (std::invalid_argument). Before listening.
  void add_service(const Service& service);
  /// The typed method under `path`, or nullptr. Any thread.
  const ServiceMethod* service_method(std::string_view path) const;
  /// The typed services added, in order (Server::services). Any thread.
  std::vector<const Service*> services() const;
  /// Runs `method`'s handler for a call from inside the process (the admin
  /// gateway): as a request read from a connection, with `budget` as its
  /// deadline (0: none); `done` runs once, on any thread. On the executor.
  void invoke(std::string method, std::string payload, transport::Attachments attachments,
              std::chrono::milliseconds budget, std::function<void(Status, std::string, transport::Attachments)> done);
  std::vector<MethodStats> method_stats() const { return methods_.snapshot(); }
  std::vector<TimeoutRecord> recent_timeouts() const { return timeout_log_.snapshot(); }
  std::vector<ConnectionInfo> connections() const;
  ServerStats stats() const;
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint, std::string& message);
  boost::asio::ip::tcp::endpoint local_endpoint() const override;
  void stop() { stop(false); }
  /// `flush`: connections close once their queued replies are written (at
  /// most kFlushLimit later), instead of at once. Any thread but the timer's worker.
  void stop(bool flush) override;
  static constexpr std::chrono::milliseconds kFlushLimit{1000};

  /// Listening, online, the announcement and the graceful shutdown.
  ServerShutdown& shutdown() noexcept override { return shutdown_; }
  /// Server::apply_rules, Server::rules. Any thread.
  void apply_rules(std::shared_ptr<const ServerRules> rules);
  std::shared_ptr<const ServerRules> rules() const;
  /// The grpc.health.v1 service's state (Server::health).
  Health& health() noexcept { return health_; }
  HealthRegistry& health_registry() noexcept override { return *health_.impl_; }
  /// True once stop() ran (takes `mu_`).
  bool stopped() const override;
  /// Stops accepting (the drain; the acceptor itself is let go by stop()).
  void close_acceptor() override;
  /// Requests not yet answered on the open connections and in process.
  std::uint64_t in_flight() const override;
  std::uint64_t open_streams() const override;
  /// Not stopped, and no open connection nor in-process call has a request
  /// in flight (a graceful shutdown may end).
  bool drained() const override;

  // ServerEvents: from connections (their strands; the counters from any thread).
  void on_request(ServerTransport& transport, IncomingRequest& request, const ConnContextPtr& conn) override;
  void on_connection_closed(std::uint64_t id) override;
  /// A connection closed for bad input: counted by reason, logged (rate-limited).
  void note_bad_input(BadInput kind, const transport::Channel& channel, std::string_view reason) override {
    bad_input_.note(kind, channel.id(), channel.remote(), reason);
  }
  void count_read_pause() override { read_pauses_.fetch_add(1, std::memory_order_relaxed); }
  void count_slow_reader() override { slow_reader_closes_.fetch_add(1, std::memory_order_relaxed); }
  void count_oversize_reply() override { oversize_replies_.fetch_add(1, std::memory_order_relaxed); }
  /// A stream message that did not decode (its stream ended).
  void count_undecodable() override { admission_.count_undecodable(); }
  const ServerWireSettings& wire_settings() const noexcept override { return wire_settings_; }
  std::chrono::milliseconds agree_heartbeat(std::optional<std::chrono::milliseconds> theirs) const override {
    return liveness_.agree(theirs);
  }

  const ServerOptions& options() const noexcept override { return options_; }
  /// ServerOptions::compression, as connections use it.
  const PayloadCoding& coding() const noexcept { return wire_settings_.coding; }
  const ServerLiveness& liveness() const noexcept { return liveness_; }
  /// ServerOptions::load_reports: the sampler and the report replies carry
  /// (Server::set_application_utilization sets it even when off).
  LoadReporter& load_reporter() noexcept { return *load_reporter_; }
  /// ServerKeepaliveOptions::max_connection_age: the connections retired.
  const ConnectionAge& connection_age() const noexcept { return age_; }
  /// Step `step` of connection `id`'s retirement for its age is due (posted
  /// by its timeout on the wheel; server_age.cc). On the executor.
  void on_age_step(std::uint64_t id, AgeStep step);

  /// Completes a slot: decides what becomes of the answer (decide), then
  /// sends it (send). False if the answer was dropped (late, cancelled, the
  /// deadline's instead) or could not be queued. Any thread but the timer's worker.
  bool finish(ReplySlot& slot, Status status, std::string payload, transport::Attachments attachments = {},
              Answer by = Answer::server) override;
  /// Runs the handler of an admitted request (`method`: its entry), inline
  /// or on the handler executor (Admission::dispatch).
  void run_handler(const ServerMethod& method, Request req, ReplySlotPtr slot, std::uint64_t conn_id) override;
  /// Puts the deadline of `slot` on the wheel unless its handler answered it
  /// already (called once the handler returned or was queued).
  void arm_deadline(ReplySlotPtr slot);
  /// The deadline passed (posted from the timer's worker). On the executor.
  void on_deadline(const ReplySlotPtr& slot);
  std::chrono::steady_clock::time_point now() const noexcept { return server_now(options_); }
  const boost::asio::any_io_executor& executor() const noexcept override { return ex_; }
  /// Where handlers run: ServerOptions::handler_executor, else executor().
  const boost::asio::any_io_executor& handler_executor() const noexcept override {
    return options_.handler_executor ? options_.handler_executor : ex_;
  }
  timer::Timer& timer() const noexcept override { return timer_; }
  common::WorkGate& timer_work() noexcept override { return timer_work_; }
  std::shared_ptr<ServerHost> shared_host() override { return shared_from_this(); }
  std::weak_ptr<ServerHost> weak_host() override { return weak_from_this(); }

 private:
  /// An answer on its way: what finish() sends.
  struct Reply {
    Status status;
    std::string payload;
    transport::Attachments attachments;
  };
  /// What becomes of an answer: dropped as late (the slot was answered
  /// already), dropped as cancelled by the client, or sent; `as_given`: the
  /// answer sent is the one given (not the deadline's in its place).
  struct Verdict {
    enum class Fate : std::uint8_t { late, cancelled, send } fate;
    bool as_given = false;
  };
  /// The time, read once and only if needed.
  struct LazyNow {
    const ServerCore& core;
    std::chrono::steady_clock::time_point t{};
    std::chrono::steady_clock::time_point operator()() {
      if (t == std::chrono::steady_clock::time_point{}) t = core.now();
      return t;
    }
  };
  /// The decide step of finish(): marks the slot answered, and settles the
  /// answer against the deadline, an earlier answer and the client's cancel
  /// (may replace `reply` with the deadline's); gives back the limits.
  Verdict decide(ReplySlot& slot, Reply& reply, Answer by, bool inline_request, LazyNow& now);
  /// Counts a decided answer in the method's metrics and the server's counters.
  void account(const ReplySlot& slot, Status status, bool cancelled, bool timed_out, LazyNow& now);
  /// The send step of finish(): completes an in-process call, or hands the
  /// reply to the connection's transport (`inline_transport`: the one
  /// delivering the request on this thread, else null). False if not queued.
  bool send(ReplySlot& slot, Reply&& reply, ServerTransport* inline_transport);
  void record_timeout(const ReplySlot& slot, std::chrono::steady_clock::time_point t);

  /// A slot for a request of `conn` (counted in flight before admission reads
  /// the draining flag: see ServerShutdown::begin_drain).
  ReplySlotPtr new_slot(const ConnContextPtr& conn, std::string_view method);
  void on_accept(boost::asio::ip::tcp::socket socket);
  /// False (and the refusal counted and logged) at ServerOptions::limits.max_connections.
  bool room_for_connection(const boost::asio::ip::tcp::socket& socket);
  /// Puts step `step` of connection `id`'s retirement on the wheel, due in
  /// `delay` (an empty Timeout if the timer stopped). Any thread.
  timer::Timeout arm_age_step(std::uint64_t id, AgeStep step, std::chrono::milliseconds delay);
  /// The connections for the liveness tasks; false once stopped.
  bool watched(std::vector<WatchedChannel>& out);
  /// "ip:port" of a connection still open (for log lines off the hot path).
  std::string peer_of(std::uint64_t conn_id) const;
  /// The trace id in force on this thread in hex, or "-".
  static std::string current_trace_id();

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const ServerOptions options_;
  const ServerWireSettings wire_settings_;  // what its wires read of options_
  const ServerWireFactory make_wire_;
  MethodTable methods_;
  TimeoutLog timeout_log_;
  ServerShutdown shutdown_{*this};
  StreamMethods stream_methods_{options_.streams.max_open};  // fixed once listening
  mutable common::Mutex rules_mu_;  // apply_rules against handle, handle_stream; before mu_, never after it
  std::shared_ptr<const ServerRules> rules_ WHEELRPC_GUARDED_BY(rules_mu_);
  Admission admission_;
  ServerLiveness liveness_{options_};  // its task pointers under mu_
  // max_connection_age: each connection's, and the counts.
  ConnectionAge age_{options_.keepalive};
  ConnContextPtr local_context_;  // the context of in-process calls (invoke)
  // ServerOptions::load_reports, started by register_builtins() when on;
  // once stopped, `timer_work_` ends its samples.
  std::unique_ptr<LoadReporter> load_reporter_ = std::make_unique<LoadReporter>(
      options_.load_reports.interval,
      LoadReporter::Sources{[this] { return in_flight(); },
                            [this] { return hot_.value(kRepliesCounter) + errors_.load(std::memory_order_relaxed); },
                            [this] { return errors_.load(std::memory_order_relaxed); },
                            [this] { return admission_.take_queue_wait(); }});
  Health health_;  // grpc.health.v1: its state (HealthRegistry) reads shutdown_

  struct Conn {
    std::weak_ptr<transport::Channel> channel;
    std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms;  // agreed in HELLO; 0 before
    ConnContextPtr context;  // its requests in flight (a graceful shutdown waits for them)
    // Its maximum age (server_age.cc): the age's timeout, then the
    // grace's; the drain's next check; the age drawn; whether it drains.
    timer::Timeout age_timeout, check_timeout;
    std::chrono::milliseconds age{0};
    bool aged = false;
  };
  mutable common::Mutex mu_;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::unordered_map<std::uint64_t, Conn> channels_ WHEELRPC_GUARDED_BY(mu_);
  boost::asio::ip::tcp::endpoint announced_endpoint_ WHEELRPC_GUARDED_BY(mu_);  // set by listen: local_endpoint()
  std::shared_ptr<transport::Acceptor> acceptor_ WHEELRPC_GUARDED_BY(mu_);      // released by stop()
  // Typed methods by wire path (Server::add_service), for the gateway.
  std::unordered_map<std::string, const ServiceMethod*> service_methods_ WHEELRPC_GUARDED_BY(mu_);
  std::vector<const Service*> services_ WHEELRPC_GUARDED_BY(mu_);  // in add_service's order

  // Streams (stream_core.h): counters.
  StreamCounters streams_;
  /// A stream passed its interceptors (or had none): its opening answered,
  /// its handler started (on the stream's executor, or posted there).
  static void accept_stream(ServerHost& host, const std::shared_ptr<StreamCore>& stream, const StreamMethod& method);
  /// Throws std::logic_error once listen() was called ("`what` after listen()").
  void check_registration_open(const char* what) const;
  /// At the first listen(), before registration closes: the built-in
  /// services (grpc.health.v1 unless ServerOptions::health_service is off;
  /// a path the application registered keeps its handler), and the health
  /// service told the services registered; the load reports' sampler
  /// (ServerOptions::load_reports) started.
  void register_builtins();
  std::atomic<bool> listened_{false};  // listen() was called: registration is closed
  std::atomic<std::uint64_t> streams_refused_{0}, unknown_stream_frames_{0};
  /// A stream ended: a graceful shutdown may be done.
  static void on_stream_end(const void* core);
  common::WorkGate timer_work_;                  // deadline, HELLO-timeout, grace and drain callbacks in progress
  std::shared_ptr<MemoryReturn> memory_return_;  // gives back what closed connections freed (null: off)

  std::atomic<std::uint64_t> refused_connections_{0}, slow_reader_closes_{0};
  std::atomic<std::int64_t> last_refusal_log_{0};  // steady ns: refusals are logged at most once a second
  // What every request adds to, per thread slot (no locked add).
  static constexpr std::size_t kRequestsCounter = 0, kRepliesCounter = 1;
  common::SlotCounters<2> hot_;
  std::atomic<std::uint64_t> accepted_{0}, errors_{0}, server_timeouts_{0}, late_replies_{0}, cancelled_{0},
      oversize_replies_{0}, read_pauses_{0};
  BadInputLog bad_input_;  // connections closed for breaking the protocol, by reason
  // ServerOptions::tls, loaded by the constructor; last, so the members above
  // keep their places with or without it.
  std::optional<transport::TlsContext> tls_;
};

}  // namespace wheelrpc::rpc::detail
