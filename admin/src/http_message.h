#pragma once
// HttpRequest and HttpResponse: the plain types the admin HTTP layer hands to
// and takes from route handlers (no Beast in sight).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wheelrpc::admin::detail {

/// One parsed request, as a route handler sees it.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
struct HttpRequest {
  std::string method;  ///< "GET", "POST", ... as sent (case kept)
  std::string path;    ///< the target up to '?', not percent-decoded
  std::string query;   ///< the target after the first '?', "" if none
  /// Every header line in order, names lower-cased, values as sent (trimmed by the parser).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;        ///< the whole body (chunked bodies de-chunked)
  unsigned version = 11;   ///< 10 for HTTP/1.0, 11 for HTTP/1.1
  bool keep_alive = true;  ///< what the client asked for (version and Connection header)

  /// The value of the first header named `lower_name` (give it lower-cased), "" if absent.
  std::string_view header(std::string_view lower_name) const;
  /// The value of the first `name=value` pair of the query (pairs split on '&';
  /// a bare `name` has the value ""), "" if absent. Not percent-decoded.
  std::string query_param(std::string_view name) const;
};

/// What a handler answers. Content-Length, `Cache-Control: no-store`, `Server:
/// wheelrpc-admin` and the Connection header are added by the server; extra
/// headers naming Content-Length, Transfer-Encoding or Connection, or holding
/// CR or LF, are dropped (logged).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
struct HttpResponse {
  unsigned status = 200;  ///< 100..999; anything else is answered as 500
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers
  bool close = false;                                        ///< close the connection after writing this response

  /// A short text answer: `body` is `text` followed by a newline.
  static HttpResponse text(unsigned status, std::string_view text, bool close = false);
};

}  // namespace wheelrpc::admin::detail
