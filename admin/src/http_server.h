#pragma once
// HttpServer: the generic HTTP/1.1 layer of the admin server. Routes requests
// to handlers by path and method; owns the limits (connections, sizes,
// timeouts). Beast stays in http_server.cc; this header shows plain types.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/timer/timer.h>

#include "http_message.h"
#include "http_server_options.h"

namespace wheelrpc::admin::detail {

/// Answers one request. Call it exactly once, from any thread, now or later;
/// the response is written on the connection's strand. Calls after the first
/// are ignored (logged). Dropping it without a call answers 500. When the
/// connection is closed (or the server stopped) meanwhile, the response is
/// dropped.
using Reply = std::function<void(HttpResponse)>;

/// A route. Runs on the connection's strand; the request is valid during the
/// call only (copy what a later reply needs). No further request of that
/// connection is read before the reply. An exception escaping it answers 500
/// (unless it replied already) and is logged; the server goes on.
using Handler = std::function<void(HttpRequest&, Reply)>;

class HttpServerCore;

/// An HTTP/1.1 server for the admin pages: keep-alive (HTTP/1.0 too), one
/// request at a time per connection, each connection on its own strand of the
/// executor. Every response carries Content-Length, `Cache-Control: no-store`
/// and `Server: wheelrpc-admin`. Errors: malformed request 400, unknown path
/// 404, wrong method 405 (with Allow), body too large 413, header too large
/// 431, too many connections 503, request too slow 408; each of these closes
/// the connection. Timeouts run on the shared `timer::Timer`, whose tasks only
/// post to the connection's strand.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: every method is safe from any
/// thread, including from inside a handler. The executor's execution context
/// (the io_context) must outlive the HttpServer, and the timer must outlive
/// its `stop()` (the destructor's at the latest): after `stop()` returns, the
/// server never touches the timer again and posts nothing more.
///
/// @par Example
/// @code
///   timer::HashedWheelTimer timer;
///   boost::asio::io_context io;
///   HttpServer server(io.get_executor(), timer, {});
///   server.add("GET", "/health", [](HttpRequest&, Reply reply) {
///     reply(HttpResponse::text(200, "ok"));
///   });
///   if (auto ec = server.listen({boost::asio::ip::make_address("127.0.0.1"), 0})) { ... }
///   io.run();
/// @endcode
class HttpServer {
 public:
  /// `timer` is not owned (see the thread-safety note). Throws
  /// std::invalid_argument when a timeout is not positive.
  HttpServer(boost::asio::any_io_executor ex, timer::Timer& timer, HttpServerOptions options);
  /// Stops.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Routes `method` (as sent, case-sensitive) on exactly `path`. A later add
  /// for the same method and path replaces the handler. A path known for other
  /// methods answers 405 with `Allow`; an unknown path 404. HEAD is served by
  /// the GET handler (body left out) unless HEAD has a route of its own.
  void add(std::string method, std::string path, Handler h);
  /// Routes `method` on every path starting with `prefix` (e.g. "/rpc/" for the
  /// gateway) that has no exact route; the longest matching prefix wins.
  void add_prefix(std::string method, std::string prefix, Handler h);

  /// Binds `ep` (port 0: any free port), listens and starts accepting. Returns
  /// the error of open, bind or listen; `already_open` when listening already,
  /// `operation_aborted` after `stop()`.
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& ep);
  /// The bound endpoint (with the real port), or a default one before `listen`.
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  /// Closes the acceptor and every connection (on their strands, soon after),
  /// cancels their timeouts. Replies arriving later are dropped. Idempotent.
  void stop();

  /// Counters since construction; `open` is the connections served now (not
  /// counting those being rejected).
  struct Stats {
    std::uint64_t accepted = 0;              ///< connections accepted (served or rejected)
    std::uint64_t rejected_connections = 0;  ///< answered 503 for max_connections
    std::uint64_t requests = 0;              ///< complete requests handed to routing
    std::uint64_t bad_requests = 0;          ///< refused by the parser (400, 413, 431)
    std::uint64_t timeouts = 0;              ///< requests answered 408, and stalled writes
    std::size_t open = 0;
  };
  Stats stats() const;

 private:
  std::shared_ptr<HttpServerCore> core_;
};

}  // namespace wheelrpc::admin::detail
