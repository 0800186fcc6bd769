#pragma once
/// AdminServer: the HTTP side of a wheelrpc process (Boost.Beast), for
/// operators and their tools.
///
/// | Path | What |
/// |---|---|
/// | GET /metrics | Prometheus text format 0.0.4: the server's, clients' and timer's metrics |
/// | GET /status, /status.json | per method calls, errors by gRPC status and detail, streams, latency (last 10 s and
/// since start), the timer | | GET /connections, /connections.json | one row per connection (gRPC channelz's sockets):
/// protocol, open streams | | GET /timeouts, /timeouts.json | the last 256 calls that timed out: phase, budget,
/// elapsed, trace id | | GET /health | 200 `OK` while serving; 503 while draining or offline | | GET /ready | 200 once
/// the server listens (and is registered, with an announcer) | | POST /offline, /online | Dubbo's QoS: refuse new calls
/// (clients retry elsewhere) and unregister; undo | | POST /rpc/METHOD | the HTTP/JSON gateway: calls the unary METHOD
/// of the server with the body as payload |
///
/// The gateway (docs/admin.md, "The HTTP/JSON gateway"): a typed method
/// speaks JSON; a stream method is answered 501; `Authorization`, a valid
/// `Traceparent`, `X-*` headers (but the gateway's own `X-Wheelrpc-*`) and
/// `Grpc-Metadata-<key>` (as `<key>`) become the call's metadata, which the
/// server's interceptors see (a BearerAuthInterceptor guards it as any
/// caller), never a hop-by-hop or framing header; every error is a JSON
/// body `{"code", "status", "message"}`.
///
/// Any other path answers 404, a wrong method 405, a body over the limit
/// 413, a malformed request 400 (and the connection closes).
///
/// It binds 127.0.0.1 by default: /offline, /online and the gateway change
/// what the process does, and the pages show peers' addresses, so reaching
/// them from elsewhere must be a decision (AdminOptions::allow_remote).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: `add_server`, `add_client`,
/// `add_section` and `add_metrics` before `listen`; then `listen`, `local_endpoint` and `stop`
/// from any thread. What it shows (the Server, Clients and timer) must
/// outlive `stop()` (the destructor's at the latest). Requests are served on
/// strands of the executor given; the timer's worker only posts there.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace wheelrpc::timer {
class HashedWheelTimer;
}
namespace wheelrpc::rpc {
class Client;
class Server;
}  // namespace wheelrpc::rpc

namespace wheelrpc::admin {

class AdminCore;
class TextExposition;

struct AdminOptions {
  /// Address to bind. Default 127.0.0.1. Anything but a loopback address is
  /// refused by listen() (errc invalid_argument) unless `allow_remote`.
  std::string address = "127.0.0.1";
  /// Allow a non-loopback `address`. Default false.
  bool allow_remote = false;
  /// Admin connections at once; more are answered 503 and closed. Default 16.
  std::size_t max_connections = 16;
  /// Largest request body (the gateway's payload), bytes. Default 1 MiB.
  std::size_t max_body_bytes = 1 << 20;
  /// Largest request line + headers, bytes. Default 8 KiB.
  std::size_t max_header_bytes = 8192;
  /// A request must arrive whole within this (slow clients get 408). Default 10 s.
  std::chrono::milliseconds request_timeout{10000};
  /// The gateway's deadline when a request has no X-Wheelrpc-Timeout-Ms
  /// and its method has no timeout of its own. A typed method's IDL
  /// `timeout_ms` (its MethodOptions::timeout) wins over it: the gateway
  /// then sends no deadline and the server applies the method's. With the
  /// header, the call's deadline is the header's, or the method's timeout
  /// when that is smaller (the server keeps the smaller). An untyped
  /// method's MethodOptions::timeout is not visible here: the server keeps
  /// the smaller of it and this. Default 1000 ms (CallOptions' default);
  /// must be > 0.
  std::chrono::milliseconds gateway_timeout{1000};
  /// Shown on /status ("process"). Default "wheelrpc".
  std::string process_name = "wheelrpc";
};

class AdminServer {
 public:
  /// `timer` drives the HTTP timeouts and the once-a-second sampling behind
  /// the "last 10 s" figures, and is shown under "timer" unless add_timer
  /// names another.
  AdminServer(boost::asio::any_io_executor ex, timer::HashedWheelTimer& timer, AdminOptions options = {});
  /// Stops.
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  /// Shows `server` (one per AdminServer), serves /health, /ready, QoS and the gateway for it.
  void add_server(rpc::Server& server);
  /// Shows `client` under `name` (unique; the `client` label of nothing, the
  /// pages' heading): its methods, connections, timeouts and counters.
  void add_client(std::string name, rpc::Client& client);

  /// What a section shows: name and value pairs, in order.
  using Values = std::vector<std::pair<std::string, std::string>>;
  /// Adds a section to /status (and `sections` in /status.json) titled
  /// `title`, filled by `values` at each refresh (any thread; keep it quick
  /// and non-blocking): e.g. a registry's lease and registration counts.
  void add_section(std::string title, std::function<Values()> values);
  /// Adds the application's own families to /metrics: `write` is called at
  /// each scrape, after wheelrpc's families, to `begin` families and add
  /// samples (any thread; the names must not repeat wheelrpc's).
  void add_metrics(std::function<void(TextExposition&)> write);

  /// Binds (port 0: any free port) and starts serving. Errors: the bind's,
  /// or invalid_argument for a remote address without allow_remote, or an
  /// address that does not parse.
  boost::system::error_code listen(unsigned short port);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  /// Stops serving and sampling; idempotent.
  void stop();

 private:
  std::shared_ptr<AdminCore> core_;
};

}  // namespace wheelrpc::admin
