#include "control_api.h"

#include <string>
#include <string_view>
#include <utility>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include "toxic_json.h"

namespace wheelrpc::fault::detail {
namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

HttpResponse json_response(http::status status, const json::value& body, const HttpRequest& req) {
  HttpResponse res(status, req.version());
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = json::serialize(body);
  res.body().push_back('\n');
  res.prepare_payload();
  return res;
}

HttpResponse not_allowed(const HttpRequest& req, std::string_view allow) {
  HttpResponse res =
      error_response(http::status::method_not_allowed, "method not allowed", req.version(), req.keep_alive());
  res.set(http::field::allow, allow);
  return res;
}

HttpResponse one_toxic(FaultProxy& proxy, const HttpRequest& req, std::string_view name) {
  const bool plain =
      !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") ==
                           std::string_view::npos;
  const auto not_found = [&] {
    std::string m("no toxic named '");
    // Names that could not exist are not echoed back verbatim.
    m.append(plain ? name : std::string_view("?")).append("'");
    return error_response(http::status::not_found, m, req.version(), req.keep_alive());
  };
  if (req.method() == http::verb::get) {
    for (const auto& info : proxy.toxics()) {
      if (info.toxic.name == name) return json_response(http::status::ok, to_json(info), req);
    }
    return not_found();
  }
  if (req.method() == http::verb::delete_) {
    if (!plain || proxy.remove_toxic(name)) return not_found();
    HttpResponse res(http::status::no_content, req.version());
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    return res;
  }
  return not_allowed(req, "GET, DELETE");
}

HttpResponse add_toxic(FaultProxy& proxy, const HttpRequest& req) {
  Toxic toxic;
  if (std::string e = parse_toxic(req.body(), toxic); !e.empty()) {
    return error_response(http::status::bad_request, e, req.version(), req.keep_alive());
  }
  const std::string name = toxic.name;
  const auto ec = proxy.add_toxic(toxic);
  if (ec == errc::toxic_exists) {
    std::string m("a toxic named '");
    m.append(name).append("' already exists");
    return error_response(http::status::conflict, m, req.version(), req.keep_alive());
  }
  if (ec) return error_response(http::status::bad_request, ec.message(), req.version(), req.keep_alive());
  for (const auto& info : proxy.toxics()) {
    if (info.toxic.name == name) return json_response(http::status::ok, to_json(info), req);
  }
  // Removed by someone else in between: report what was added.
  return json_response(http::status::ok, to_json(ToxicInfo{std::move(toxic), 0}), req);
}

}  // namespace

HttpResponse error_response(http::status status, std::string_view message, unsigned version, bool keep_alive) {
  HttpResponse res(status, version);
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  json::object body;
  body["error"] = message;
  res.body() = json::serialize(body);
  res.body().push_back('\n');
  res.prepare_payload();
  return res;
}

HttpResponse handle_control_request(FaultProxy& proxy, const HttpRequest& req) {
  std::string_view path(req.target().data(), req.target().size());
  if (const auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const auto method = req.method();

  if (path == "/toxics") {
    if (method == http::verb::get) {
      json::array list;
      for (const auto& info : proxy.toxics()) list.push_back(to_json(info));
      return json_response(http::status::ok, list, req);
    }
    if (method == http::verb::post) return add_toxic(proxy, req);
    return not_allowed(req, "GET, POST");
  }
  constexpr std::string_view kToxicPrefix = "/toxics/";
  if (path.substr(0, kToxicPrefix.size()) == kToxicPrefix) {
    return one_toxic(proxy, req, path.substr(kToxicPrefix.size()));
  }
  if (path == "/down" || path == "/up") {
    if (method != http::verb::post) return not_allowed(req, "POST");
    if (path == "/down") {
      proxy.down();
    } else if (const auto ec = proxy.up()) {
      std::string m("cannot listen again: ");
      m.append(ec.message());
      return error_response(http::status::internal_server_error, m, req.version(), req.keep_alive());
    }
    json::object body;
    body["up"] = proxy.is_up();
    return json_response(http::status::ok, body, req);
  }
  if (path == "/stats") {
    if (method != http::verb::get) return not_allowed(req, "GET");
    return json_response(http::status::ok, to_json(proxy.stats(), proxy.local_endpoint(), proxy.upstream_endpoint()),
                         req);
  }
  return error_response(http::status::not_found, "no such endpoint", req.version(), req.keep_alive());
}

}  // namespace wheelrpc::fault::detail
