#pragma once
// HttpServerOptions: the limits of the admin HTTP layer.

#include <chrono>
#include <cstddef>

namespace wheelrpc::admin::detail {

/// Limits of an HttpServer, fixed at construction. The parser limits
/// (`max_header_bytes`, `max_body_bytes`) are also what `parse_http_request`
/// applies.
struct HttpServerOptions {
  /// Connections served at once. Default 64. A connection beyond it is accepted,
  /// answered `503 too many admin connections` with `Connection: close` and
  /// closed (never left hanging); each one is logged and counted in
  /// `Stats::rejected_connections`. 0 rejects every connection.
  std::size_t max_connections = 64;
  /// Bytes of request line plus headers (with their CRLFs). Default 8192,
  /// at most 4 GiB. Over it: 431 and close.
  std::size_t max_header_bytes = 8192;
  /// Bytes of body (after de-chunking). Default 1 MiB. Over it: 413 and close; a
  /// Content-Length over it is refused before any of the body is read.
  std::size_t max_body_bytes = 1 << 20;
  /// A whole request (headers and body) must arrive within this from its first
  /// byte, else `408` and close (slowloris). Also bounds: how long a new
  /// connection may stay silent before its first request (closed without an
  /// answer), and how long writing a response may stall (closed). Default 10 s;
  /// measured on the shared timer, so up to one tick late.
  std::chrono::milliseconds request_timeout{10000};
  /// A keep-alive connection with no request for this long after its last
  /// response is closed without an answer. Default 60 s.
  std::chrono::milliseconds idle_timeout{60000};
};

}  // namespace wheelrpc::admin::detail
