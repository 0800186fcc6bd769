#pragma once
/// ControlServer: a small HTTP/1.1 JSON API (Boost.Beast) that drives a
/// FaultProxy from outside the process, in the manner of Toxiproxy's:
///
///   GET    /toxics        the toxics, in order           200 [{...}, ...]
///   GET    /toxics/NAME   one toxic                      200 {...} | 404
///   POST   /toxics        add one (JSON body, below)     200 {...} | 400 | 409
///   DELETE /toxics/NAME   remove one                     204 | 404
///   POST   /down          refuse and drop connections    200 {"up":false}
///   POST   /up            accept again, same port        200 {"up":true} | 500
///   GET    /stats         counters and endpoints         200 {...}
///
/// A toxic body: {"name":"lat1","type":"latency","stream":"downstream",
/// "attributes":{"latency":200,"jitter":20}}; "name" defaults to TYPE_STREAM,
/// "stream" to downstream, "toxicity" may only be 1. Unknown fields, types or
/// attributes, wrong JSON types and malformed JSON are 400; every error body is
/// {"error":"..."}. Unknown paths are 404, a known path with another method 405.

#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/fault/fault_proxy.h>

namespace wheelrpc::fault {

namespace detail {
class ControlState;
}

/// Serves the control API for one proxy on 127.0.0.1 only.
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: every method from any thread. The proxy must outlive this
/// object, or at least its `stop()`: after `stop()` returns no request touches
/// the proxy again. The destructor calls `stop()`.
class ControlServer {
 public:
  /// `port` 0 picks a free port at `start()`.
  ControlServer(boost::asio::any_io_executor ex, FaultProxy& proxy, unsigned short port = 0);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  /// Binds 127.0.0.1:port (SO_REUSEADDR) and starts serving.
  boost::system::error_code start();
  /// Stops accepting and closes every control connection. Idempotent.
  void stop();
  /// The bound endpoint (the real port once started).
  boost::asio::ip::tcp::endpoint local_endpoint() const;

 private:
  std::shared_ptr<detail::ControlState> state_;
};

}  // namespace wheelrpc::fault
