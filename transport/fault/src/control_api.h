#pragma once
// The control API's routes: one request in, one response out, no I/O.

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <wheelrpc/fault/fault_proxy.h>

namespace wheelrpc::fault::detail {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

/// Answers one request (see control_server.h for the routes). Never throws for
/// bad input: every problem is a 4xx with {"error":"..."}.
HttpResponse handle_control_request(FaultProxy& proxy, const HttpRequest& req);

/// A JSON {"error": message} response with `status`.
HttpResponse error_response(boost::beast::http::status status, std::string_view message, unsigned version,
                            bool keep_alive);

}  // namespace wheelrpc::fault::detail
