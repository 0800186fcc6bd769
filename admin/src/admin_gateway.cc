// POST /rpc/METHOD: the HTTP/JSON gateway to the server's unary methods
// (docs/admin.md, "The HTTP/JSON gateway").
#include <charconv>

#include <boost/json/object.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/service.h>
#include <wheelrpc/rpc/status_code.h>

#include "admin_core.h"
#include "gateway_metadata.h"

namespace wheelrpc::admin {
namespace json = boost::json;
using boost::system::error_code;
using detail::HttpRequest;
using detail::HttpResponse;
using detail::Reply;

namespace {

constexpr long long kMaxTimeoutMs = 86'400'000;

/// The HTTP status of a status code a handler chose (grpc-gateway's mapping).
unsigned http_status(rpc::StatusCode code) {
  using rpc::StatusCode;
  switch (code) {
    case StatusCode::ok: return 200;
    case StatusCode::cancelled: return 499;
    case StatusCode::invalid_argument:
    case StatusCode::failed_precondition:
    case StatusCode::out_of_range: return 400;
    case StatusCode::deadline_exceeded: return 504;
    case StatusCode::not_found: return 404;
    case StatusCode::already_exists:
    case StatusCode::aborted: return 409;
    case StatusCode::permission_denied: return 403;
    case StatusCode::unauthenticated: return 401;
    case StatusCode::resource_exhausted: return 429;
    case StatusCode::unimplemented: return 501;
    case StatusCode::unavailable: return 503;
    default: return 500;
  }
}

/// The HTTP status of a gateway error: the framework's errors by their
/// errc (a client may retry a 503 elsewhere), a handler's status by
/// grpc-gateway's mapping.
unsigned gateway_status(const error_code& ec) {
  if (ec.category() == rpc::status_category()) return http_status(rpc::status_code_of(ec));
  switch (rpc::call_code(ec)) {
    case rpc::CallCode::timeout:
    case rpc::CallCode::server_timeout: return 504;
    case rpc::CallCode::unavailable:
    case rpc::CallCode::too_many_pending:
    case rpc::CallCode::cancelled: return 503;
    case rpc::CallCode::resource_exhausted: return 429;
    case rpc::CallCode::method_not_found: return 404;
    case rpc::CallCode::bad_request: return 400;
    default: return 500;
  }
}

/// {"code", "status", "message"}: the framework's detail (the metrics'
/// `reason`), the gRPC status name, and what happened.
HttpResponse error_body(unsigned http, std::string_view code, rpc::StatusCode status, std::string message) {
  return json_response(http, json::object{{"code", code}, {"status", rpc::to_string(status)}, {"message", message}});
}

HttpResponse error_body(const error_code& ec, std::string message) {
  const auto code = rpc::call_code(ec);
  return error_body(gateway_status(ec), rpc::call_code_name(code), rpc::call_status(code), std::move(message));
}

}  // namespace

void AdminCore::gateway(HttpRequest& req, Reply reply) {
  if (!server_) {
    reply(error_body(make_error_code(rpc::errc::method_not_found), "no server in this process"));
    return;
  }
  std::string method = req.path.substr(5);  // after "/rpc/"
  if (method.empty() || method.size() > 255) {
    reply(error_body(make_error_code(rpc::errc::bad_request),
                     "the path must be /rpc/METHOD (a method name of 1 to 255 bytes)"));
    return;
  }
  std::chrono::milliseconds asked{0};  // X-Wheelrpc-Timeout-Ms; 0: absent
  if (auto h = req.header("x-wheelrpc-timeout-ms"); !h.empty()) {
    long long ms = 0;
    auto [end, ec] = std::from_chars(h.data(), h.data() + h.size(), ms);
    if (ec != std::errc() || end != h.data() + h.size() || ms <= 0 || ms > kMaxTimeoutMs) {
      reply(error_body(make_error_code(rpc::errc::bad_request),
                       "X-Wheelrpc-Timeout-Ms must be an integer from 1 to 86400000, got '" + std::string(h) + "'"));
      return;
    }
    asked = std::chrono::milliseconds(ms);
  }
  // A typed method (Server::add_service) speaks JSON: protobuf's JSON mapping
  // of its request and reply messages.
  const rpc::ServiceMethod* typed = server_->service_method("/" + method);
  if (!typed && (server_->is_stream_method(method) || server_->is_stream_method("/" + method))) {
    reply(error_body(501, "stream_method", rpc::StatusCode::unimplemented,
                     fmt::format("'{}' is a stream method: the gateway serves unary methods only (open a stream "
                                 "with a wheelrpc or gRPC client)",
                                 method)));
    return;
  }
  // The deadline: the header's; else the method's own timeout (a typed
  // method's IDL timeout_ms, which the server applies to a call that
  // arrives with none); else AdminOptions::gateway_timeout. With both the
  // header's and the method's, the server keeps the smaller.
  const std::chrono::milliseconds method_timeout = typed ? typed->options.timeout : std::chrono::milliseconds(0);
  std::chrono::milliseconds budget = asked;
  if (budget.count() == 0 && method_timeout.count() <= 0) budget = options_.gateway_timeout;
  std::chrono::milliseconds effective = budget;
  if (method_timeout.count() > 0 && (effective.count() == 0 || method_timeout < effective)) effective = method_timeout;

  std::string body = std::move(req.body);
  if (typed) {
    std::string binary, error;
    if (!typed->request_from_json(body, binary, error)) {
      reply(error_body(make_error_code(rpc::errc::bad_request),
                       fmt::format("the body is not a {} in JSON: {}", typed->request_type, error)));
      return;
    }
    body = std::move(binary);
    method = typed->path;
  }
  const auto start = std::chrono::steady_clock::now();
  server_->async_invoke(
      method, std::move(body), budget, detail::gateway_metadata(req.headers),
      [reply = std::move(reply), method, effective, start, typed](error_code ec, rpc::Response r) mutable {
        if (!ec) {
          HttpResponse ok;
          ok.content_type = "application/octet-stream";
          ok.body = std::move(r.payload);
          if (typed) {
            std::string json, error;
            if (!typed->reply_to_json(ok.body, json, error)) {
              reply(error_body(500, "server_error", rpc::StatusCode::internal,
                               "the reply of '" + method + "': " + error));
              return;
            }
            ok.content_type = "application/json";
            ok.body = std::move(json);
          }
          reply(std::move(ok));
          return;
        }
        const auto elapsed =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        std::string message = r.error_message.empty() ? ec.message() : r.error_message;
        if (rpc::call_code(ec) == rpc::CallCode::server_timeout) {
          message = fmt::format("server_timeout (in the handler) after {} ms of a {} ms budget: {}", elapsed,
                                effective.count(), message);
        }
        reply(error_body(ec, std::move(message)));
      });
}

}  // namespace wheelrpc::admin
