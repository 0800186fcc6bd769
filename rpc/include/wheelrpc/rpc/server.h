#pragma once
/// Server: serves methods registered by name, with server-side deadlines.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/response.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/timer/timer.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

struct ServerRules;  // server_rules.h

class Health;
class Service;
struct ServiceMethod;

namespace detail {
class ServerCore;
struct ReplySlot;
void intrusive_ptr_add_ref(ReplySlot* slot) noexcept;
void intrusive_ptr_release(ReplySlot* slot) noexcept;
}  // namespace detail

/// A call as the handler sees it.
struct Request {
  std::string method;
  std::string payload;
  transport::Attachments attachments;
  /// When the caller stops waiting (receipt time + the caller's remaining
  /// budget); empty when the caller set none.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// "ip:port" of the caller.
  std::string peer;
};

/// Replies to one request, exactly once, from any thread, now or later.
/// Move-only. If the caller's deadline passes first, the server answers
/// errc::server_timeout and the reply is dropped (and counted late): at the
/// deadline when the handler returned without replying, else when it
/// replies (a reply from inside the handler past the deadline).
/// Destroying a Responder that never replied answers errc::server_error.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe (move it where it is
/// used); the request it answers may be completed concurrently by its
/// deadline, which is safe.
class Responder {
 public:
  Responder() = default;
  Responder(Responder&& other) noexcept;
  Responder& operator=(Responder&& other) noexcept;
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder();

  /// Sends the reply. Returns false if it was dropped (deadline passed,
  /// connection gone, already replied).
  bool reply(std::string payload, transport::Attachments attachments = {});
  /// Sends an error reply: `code` becomes the response status, `message` the
  /// text the caller sees. `metadata` goes with it as with a reply (initial
  /// fields, then the trailing ones after ServerContext's marker: what
  /// ServerContext::take_reply_attachments() gives; on the gRPC wire, e.g. a
  /// `grpc-status-details-bin`): the caller reads it in Response::attachments
  /// and Response::trailers of its failed call. Returns false if it was dropped.
  bool fail(errc code, std::string message, transport::Attachments metadata = {});
  /// Sends an error reply with a gRPC status (StatusCode, or any error:
  /// Status for rpc::errc, unknown for other categories); the caller's call
  /// completes with that code and `message`. Returns false if it was dropped.
  bool fail(StatusCode code, std::string message, transport::Attachments metadata = {});
  bool fail(const boost::system::error_code& ec, std::string message, transport::Attachments metadata = {});

  /// The caller's deadline, if it sent one.
  std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept;
  /// True once the deadline passed (a reply would be dropped).
  bool expired() const noexcept;
  /// Time left before the deadline on the server's clock: 0 once it passed,
  /// nanoseconds::max() without a deadline.
  std::chrono::nanoseconds remaining() const noexcept;
  /// True until a reply was sent (or the server answered for the handler).
  bool pending() const noexcept;
  /// True once the client cancelled the request (a hedge that lost, a call
  /// its caller cancelled): a reply would be dropped, so the handler may stop
  /// its work. Thread-safe.
  bool cancelled() const noexcept;
  /// The algorithm of this reply's payload, overriding the call's (on the
  /// native wire the server mirrors the algorithm the request asked its
  /// reply in; on the gRPC wire it answers uncompressed unless asked) and
  /// ServerCompressionOptions::reply: `identity` sends it uncompressed even
  /// when the client asked for compression; another algorithm compresses it
  /// even when the client asked for none. As every compressed payload, only
  /// if the client decodes that algorithm (its handshake said so), past the
  /// threshold, and when it shrinks (docs/compression.md). Before reply(),
  /// from the thread that answers.
  void set_compression(transport::Compression compression) noexcept;
  /// True when the request's payload came compressed (before it was decoded).
  bool request_compressed() const noexcept;
  /// Where the server runs handlers: ServerOptions::handler_executor when
  /// set, else the server's executor. For work the handler starts (a
  /// coroutine, a timer) that should run where handlers run.
  boost::asio::any_io_executor executor() const;

 private:
  friend class detail::ServerCore;
  explicit Responder(boost::intrusive_ptr<detail::ReplySlot> slot) noexcept : slot_(std::move(slot)) {}
  boost::intrusive_ptr<detail::ReplySlot> slot_;
};

/// Counters of one server (monotonic except `connections`).
struct ServerStats {
  std::uint64_t connections = 0;  ///< open now
  std::uint64_t accepted = 0;
  std::uint64_t requests = 0;
  std::uint64_t replies = 0;          ///< successful replies sent
  std::uint64_t errors = 0;           ///< error replies sent (all statuses)
  std::uint64_t server_timeouts = 0;  ///< answered server_timeout for a slow handler
  std::uint64_t late_replies = 0;     ///< handler replies dropped after the deadline
  std::uint64_t cancelled = 0;        ///< replies dropped because the client cancelled the request
  std::uint64_t method_not_found = 0;
  /// Requests and stream messages refused because their compressed payload
  /// could not be decoded: an algorithm not announced, past the body or
  /// ratio limit (a compression bomb), or corrupt (docs/compression.md).
  std::uint64_t undecodable = 0;
  std::uint64_t protocol_errors = 0;   ///< connections closed for bad input (the six reasons below together);
                                       ///< each is logged at warning level with the peer (one line a second at most)
  std::uint64_t bad_magic = 0;         ///< of which: a frame without the protocol's magic (garbage, another protocol)
  std::uint64_t bad_version = 0;       ///< of which: a protocol version this build does not speak
  std::uint64_t oversize_frames = 0;   ///< of which: a frame header announcing a body over ChannelOptions::max_body
  std::uint64_t malformed_frames = 0;  ///< of which: a body whose lengths overrun it
  std::uint64_t no_hello = 0;          ///< of which: a first frame that was not a HELLO
  std::uint64_t hello_timeouts = 0;    ///< of which: no HELLO within ServerOptions::keepalive.hello_timeout
  std::uint64_t http2_errors = 0;      ///< of which: HTTP/2 the gRPC wire could not take (docs/grpc.md)
  std::uint64_t heartbeats_sent = 0;   ///< heartbeats sent (ServerOptions::keepalive.send_heartbeats)
  std::uint64_t idle_closes = 0;       ///< connections closed by the CloseTimerTask
  std::uint64_t aged_connections = 0;  ///< connections drained at their maximum age
                                       ///< (ServerOptions::keepalive.max_connection_age)
  std::uint64_t age_grace_closes = 0;  ///< of which: closed at the end of the grace with a call or stream still open
  std::uint64_t in_flight = 0;         ///< requests not yet answered on the open connections (now)
  std::uint64_t refused_shutting_down = 0;  ///< requests refused by a graceful shutdown
  std::uint64_t refused_offline = 0;        ///< requests refused while offline (set_online(false))
  StreamStats streams;                      ///< streams opened, open, messages, ends by cause
  std::uint64_t streams_refused = 0;        ///< streams refused at their start (offline, shutting down, no such
                                            ///< method, a limit)
  std::uint64_t unknown_stream_frames = 0;  ///< stream frames for no open stream (answered with an END)
  std::uint64_t refused_overloaded = 0;     ///< requests refused at their method's max_concurrency
                                            ///< or the server's (ServerOptions::overload.max_concurrency)
  std::uint64_t refused_connections = 0;    ///< connections closed at once over ServerOptions::limits.max_connections
  std::uint64_t slow_reader_closes = 0;     ///< connections closed because replies queued past
                                            ///< ChannelOptions::max_write_queue_bytes (the client reads none)
  std::uint64_t oversize_replies = 0;       ///< replies over the client's body limit (from its HELLO),
                                            ///< answered server_error instead
  std::uint64_t read_pauses = 0;            ///< times a connection stopped being read at
                                            ///< ServerOptions::limits.max_requests_per_connection
  std::uint64_t memory_returns = 0;         ///< times freed memory was given back (ServerOptions::return_memory)
  std::uint64_t shed = 0;                   ///< requests answered server_timeout without running their handler: their
                           ///< deadline passed before it could start (ServerOptions::overload.deadline_admission;
                           ///< also counted in server_timeouts)
  std::uint64_t queued = 0;             ///< requests waiting for ServerOptions::handler_executor (now)
  std::uint64_t concurrency_limit = 0;  ///< ServerOptions::overload.max_concurrency now (0: none)
};

/// Where a server is in its life, for health checks.
struct ServerState {
  bool listening = false;         ///< listen() succeeded and stop() was not called
  bool online = true;             ///< not taken offline (set_online(false), or a provider rule's `disabled`)
  bool disabled_by_rule = false;  ///< a provider rule disables it (Server::apply_rules)
  bool draining = false;          ///< a graceful shutdown began (withdraw, grace or drain)
  bool announced = false;         ///< announced to ServerOptions::announcer, not withdrawn, and in force
                                  ///< (ServiceAnnouncer::in_force: e.g. confirmed by the registry)
  /// Ready for traffic: listening, and announced when there is an announcer.
  bool ready() const noexcept { return listening && !draining && online && (announced || !has_announcer); }
  /// Serving: listening, online and not draining (what /health reports).
  bool serving() const noexcept { return listening && online && !draining; }
  bool has_announcer = false;
};

/// Shutdown order as for Client: stop the server, then the executor's threads,
/// then destroy the timer.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: `handle` must be called before `listen`; everything else may
/// be called from any thread. Handlers run on the connection's strand of the
/// server's executor and must not block: reply later from anywhere through the
/// Responder; or, with ServerOptions::handler_executor, on that executor
/// (where a CPU-bound handler may take its time: the server sees the queue).
class Server {
 public:
  using Handler = std::function<void(Request, Responder)>;

  Server(boost::asio::any_io_executor ex, timer::Timer& timer, ServerOptions options = {});
  /// Stops the server (see `stop()`).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Registers `handler` for `method` (replacing an earlier one), with its
  /// limits and timeout (MethodOptions). Before listen(): afterwards it
  /// throws std::logic_error. Throws std::invalid_argument for a negative
  /// MethodOptions::timeout.
  void handle(std::string method, Handler handler, MethodOptions options = {});

  /// Registers `handler` for the streams a client opens to `method`
  /// (docs/streams.md), replacing an earlier one, with its limits
  /// (MethodOptions::max_concurrency: its streams open at once) and timeout
  /// (the stream's deadline when the client sets none). A stream passes the
  /// same admission as a call, at its start: it is refused, unprocessed,
  /// when the server is offline or shutting down, when its deadline has
  /// passed, at ServerOptions::streams.max_per_connection or max_open, at
  /// the method's max_concurrency or while the server is at its
  /// overload.max_concurrency (Status::overloaded: the client may retry it
  /// elsewhere); then ServerOptions::interceptors run at its opening and may
  /// refuse it. A refused stream never reaches the handler. Before listen(),
  /// like handle().
  void handle_stream(std::string method, StreamHandler handler, MethodOptions options = {});

  /// Registers every method of a typed service (a class derived from a
  /// generated `Greeter::Service` or `Greeter::CallbackService`), each under
  /// its wire path "/<package>.<Service>/<Method>", with the limits set by
  /// Service::set_method_options, and the IDL's `timeout_ms` as each one's
  /// MethodOptions::timeout. Before `listen`, like handle(); `service` must
  /// outlive the server. Throws std::invalid_argument, registering nothing,
  /// if a method of `service` is registered already (the same service
  /// twice, or two services of one name). docs/typed_services.md.
  void add_service(Service& service);
  /// The typed method registered under `path` ("/helloworld.Greeter/
  /// SayHello"), or nullptr: what the admin gateway transcodes JSON with.
  /// Any thread.
  const ServiceMethod* service_method(std::string_view path) const;
  /// Whether `method` names a stream method (handle_stream, or a typed
  /// service's streaming method under its wire path): the admin gateway
  /// answers those 501 rather than 404. Any thread once listening.
  bool is_stream_method(std::string_view method) const;

  /// Binds and listens (port 0 picks a free port), then accepts connections.
  /// With ServerOptions::announcer, then announces the bound address and
  /// waits for the announcer's answer (which it bounds by its own deadline):
  /// if it fails, the server stops listening (its socket is closed on the
  /// executor, so just after listen returns) and listen fails with its
  /// error. Called on a thread that runs the server's executor, listen cannot
  /// wait: an announcer that does not answer at once fails it
  /// (errc::bad_request). A failure is returned, not logged (above debug
  /// level): the caller reports it; `message` (second overload) gets the
  /// full text, e.g. the announcer's reason.
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint);
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint, std::string& message);
  /// The bound endpoint.
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  /// Stops accepting and closes every connection; replies still pending are
  /// dropped. An announced server is withdrawn, without waiting. Returns once none of the server's deadline or
  /// timer-task callbacks is still running on the timer's worker. Idempotent. Must not be called from inside a timer
  /// task.
  void stop();

  /// Completion signature of async_shutdown.
  using ShutdownSignature = void(boost::system::error_code);
  /// Graceful stop. An announced server (ServerOptions::announcer) is first
  /// withdrawn, and serves on for ServerOptions::unregister_grace, so its
  /// clients see it leave. Then: stops accepting (new connects are refused), and
  /// every request that arrives from then on is refused unprocessed with
  /// Status::shutting_down (its caller sees errc::unavailable, which clients
  /// retry on another provider). The calls in flight run on, for at most
  /// `drain_timeout` (> 0); then `stop()` closes the connections. Completes
  /// with success when every call in flight was answered, or errc::timeout
  /// when the drain timeout passed first (their replies are then dropped).
  /// The drain timeout is on the shared timer, whose worker only posts.
  /// Completes exactly once, on the handler's associated executor (default:
  /// the server's), after stop() returned; a second shutdown, or one after
  /// stop(), completes at once (stop() is idempotent). Any completion token
  /// (callbacks, use_future, use_awaitable, ...).
  template <class Token>
  auto async_shutdown(std::chrono::milliseconds drain_timeout, Token&& token) {
    return boost::asio::async_initiate<Token, ShutdownSignature>(
        [this](auto handler, std::chrono::milliseconds drain) {
          start_shutdown(drain, boost::asio::any_completion_handler<ShutdownSignature>(std::move(handler)));
        },
        token, drain_timeout);
  }

  ServerStats stats() const;
  /// Per registered method (and "(unknown)" for requests naming none):
  /// calls by outcome, latency histograms (request read to reply queued),
  /// in flight, deadline_exceeded. Empty with ServerOptions::metrics off.
  /// Any thread.
  std::vector<MethodStats> method_stats() const;
  /// The last 256 requests answered server_timeout, newest first. Any thread.
  std::vector<TimeoutRecord> recent_timeouts() const;
  /// One row per accepted connection. Any thread.
  std::vector<ConnectionInfo> connections() const;

  /// Dubbo's QoS offline/online. Offline: new requests are refused
  /// unprocessed with Status::shutting_down (callers see errc::unavailable,
  /// which clients retry on another provider), and an announced server is
  /// withdrawn from its registry; calls in flight run on. Online (the
  /// default) reverses it and announces the server again. Idempotent; any
  /// thread; the announcer's answer is not waited for.
  void set_online(bool online);
  ServerState state() const;

  /// Puts a provider rule's overrides in force (docs/governance.md,
  /// "Provider rules"; the registry's follow_provider_rules calls it on
  /// every change in etcd): each method's timeout and max_concurrency over
  /// its MethodOptions (a call admitted under a limit gives its place back
  /// whatever the limit is by then; the library's /grpc.* methods keep
  /// theirs), and `disabled` takes the server offline as set_online(false)
  /// does until a set without it comes (set_online's own state then
  /// stands). Null: no rule. Any thread; takes effect for the requests
  /// admitted after it returns.
  void apply_rules(std::shared_ptr<const ServerRules> rules);
  /// The rules in force (null: none). Any thread.
  std::shared_ptr<const ServerRules> rules() const;

  /// The application's own utilization, 0..1 (ORCA's
  /// application_utilization): carried by load reports
  /// (ServerOptions::load_reports) in place of the CPU when set, and read by
  /// load-aware clients. Negative clears it. Any thread; lock-free.
  void set_application_utilization(double utilization) noexcept;

  /// The server's grpc.health.v1.Health service (docs/operations.md): what
  /// `Check` and `Watch` answer, on both wires, registered by every server
  /// unless ServerOptions::health_service is off. The application sets a
  /// service's status through it (`server.health().set("pkg.Svc",
  /// ServingStatus::not_serving)`); the server's own state (offline,
  /// draining, stopped) overrides it with NOT_SERVING. Include
  /// <wheelrpc/rpc/health.h> to use it. Lives as long as the server; any
  /// thread.
  Health& health() noexcept;

  /// The typed services registered with add_service, in registration order
  /// (what server reflection lists). Any thread once listening.
  std::vector<const Service*> services() const;

  /// Completion signature of async_invoke: the error the status stands for
  /// (empty on success), and the reply (payload and attachments; the error
  /// text in error_message).
  using InvokeSignature = void(boost::system::error_code, Response);
  /// Calls `method` of this server from inside the process, as if a client
  /// had sent it (same handler, metrics, deadline, offline and shutdown
  /// rules): the admin gateway's path. `timeout`: the call's budget (0 =
  /// none). Completes once, on the handler's associated executor (default
  /// the server's), never inline.
  template <class Token>
  auto async_invoke(std::string method, std::string payload, std::chrono::milliseconds timeout, Token&& token) {
    return boost::asio::async_initiate<Token, InvokeSignature>(
        [this](auto handler, std::string m, std::string p, std::chrono::milliseconds t) {
          start_invoke(std::move(m), std::move(p), t,
                       boost::asio::any_completion_handler<InvokeSignature>(std::move(handler)));
        },
        token, std::move(method), std::move(payload), timeout);
  }
  /// The same, with `metadata` as the call's metadata (Request::attachments:
  /// what the interceptors and the handler read, e.g. `authorization`). A
  /// `traceparent` among it continues that trace; without one the call
  /// starts a new trace.
  template <class Token>
  auto async_invoke(std::string method, std::string payload, std::chrono::milliseconds timeout,
                    transport::Attachments metadata, Token&& token) {
    return boost::asio::async_initiate<Token, InvokeSignature>(
        [this](auto handler, std::string m, std::string p, std::chrono::milliseconds t, transport::Attachments a) {
          start_invoke(std::move(m), std::move(p), t,
                       boost::asio::any_completion_handler<InvokeSignature>(std::move(handler)), std::move(a));
        },
        token, std::move(method), std::move(payload), timeout, std::move(metadata));
  }

 private:
  void start_invoke(std::string method, std::string payload, std::chrono::milliseconds timeout,
                    boost::asio::any_completion_handler<InvokeSignature> handler, transport::Attachments metadata = {});
  void start_shutdown(std::chrono::milliseconds drain_timeout,
                      boost::asio::any_completion_handler<ShutdownSignature> handler);

  std::shared_ptr<detail::ServerCore> core_;
};

}  // namespace wheelrpc::rpc
