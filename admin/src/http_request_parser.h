#pragma once
// RequestParser: incremental HTTP/1.x request parsing on Beast's
// request_parser, with the limits of HttpServerOptions. The sessions of
// HttpServer and the fuzz target (parse_http_request) share it.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "http_message.h"
#include "http_server_options.h"

namespace wheelrpc::admin::detail {

/// Where parsing a request stands after the bytes given so far.
enum class ParseStatus {
  need_more,  ///< no complete request yet and nothing wrong so far
  complete,   ///< `request` holds a whole request
  error,      ///< the request is refused: answer `http_status` with `reason`, then close
};

struct ParseResult {
  ParseStatus status = ParseStatus::need_more;
  /// Bytes of the input this call consumed. On `complete`, the bytes after them
  /// belong to the next (pipelined) request. The parser keeps an incomplete
  /// header unconsumed: offer those bytes again, followed by new ones.
  std::size_t consumed = 0;
  /// On `error`: 400 (malformed), 413 (body over the limit) or 431 (header over
  /// the limit).
  unsigned http_status = 0;
  /// On `error`: a short text for the answer and the log.
  std::string reason;
  /// On `need_more`: the header is complete, asks `Expect: 100-continue`
  /// (HTTP/1.1) and the body is still to come; the caller answers `100
  /// Continue` first. Reported once per request.
  bool expect_continue = false;
  /// On `complete`: the request.
  HttpRequest request;
};

/// Parses one request at a time from a byte stream.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
///
/// @par Example
/// @code
///   RequestParser p(options);
///   std::string in;   // bytes received and not consumed yet
///   ... in += received;
///   auto r = p.feed(in);
///   in.erase(0, r.consumed);
///   if (r.status == ParseStatus::complete) { handle(r.request); p.reset(); }
/// @endcode
class RequestParser {
 public:
  explicit RequestParser(const HttpServerOptions& options);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  /// Consumes what it can of `bytes`. After `complete` or `error`, call `reset()`
  /// before feeding again (feeding anyway returns the same error).
  ParseResult feed(std::string_view bytes);
  /// Ready for the next request.
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The whole of `bytes` as one request (what the fuzz target calls): `complete`
/// with `consumed` <= bytes.size() (the rest would be a pipelined request),
/// `need_more`, or `error`. Feeds the bytes in two pieces split at `split`
/// (clamped) to exercise resuming, as the sessions do when a request arrives
/// in several reads.
ParseResult parse_http_request(std::string_view bytes, const HttpServerOptions& options,
                               std::size_t split = std::string_view::npos);

}  // namespace wheelrpc::admin::detail
