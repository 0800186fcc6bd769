#include "etcd_scan.h"

#include <cstring>
#include <stdexcept>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace wheelrpc::wheelctl {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;

namespace {

constexpr const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::int64_t as_int(const json::value* v) {
  if (!v) return 0;
  if (v->is_string()) {
    try {
      return std::stoll(std::string(v->as_string()));
    } catch (const std::exception&) {
      return 0;
    }
  }
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return 0;
}

/// The first key after every key starting with `prefix`.
std::string range_end(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

}  // namespace

std::string base64_encode(const std::string& bytes) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], kAlphabet[n & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], '='};
  }
  return out;
}

std::optional<std::string> base64_decode(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  unsigned n = 0;
  int bits = 0;
  std::size_t pad = 0;
  for (const char c : text) {
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad) return std::nullopt;
    const char* p = std::strchr(kAlphabet, c);
    if (!p || c == '\0') return std::nullopt;
    n = (n << 6) | static_cast<unsigned>(p - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((n >> bits) & 0xff));
    }
  }
  return pad > 2 ? std::nullopt : std::optional<std::string>(out);
}

EtcdScan::EtcdScan(const std::string& endpoints, std::chrono::milliseconds timeout) : timeout_(timeout) {
  std::string list = endpoints;
  for (const char* scheme : {"etcd://", "http://"}) {
    if (list.rfind(scheme, 0) == 0) list.erase(0, std::strlen(scheme));
  }
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const std::string one = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto colon = one.rfind(':');
    if (one.empty() || colon == std::string::npos || colon == 0 || colon + 1 == one.size()) {
      throw std::invalid_argument("expected etcd://HOST:PORT[,HOST:PORT...], got '" + endpoints + "'");
    }
    std::string host = one.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    endpoints_.emplace_back(host, one.substr(colon + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

std::optional<std::string> EtcdScan::post(const std::string& target, const std::string& body, std::string& answer) {
  std::string problems;
  for (const auto& [host, port] : endpoints_) {
    asio::io_context io;
    std::optional<std::string> problem;
    asio::co_spawn(
        io,
        [&, host = host, port = port]() -> asio::awaitable<void> {
          auto tuple = asio::as_tuple(asio::use_awaitable);
          asio::ip::tcp::resolver resolver(io);
          beast::tcp_stream stream(io);
          stream.expires_after(timeout_);
          auto [rec, results] = co_await resolver.async_resolve(host, port, tuple);
          if (rec) {
            problem = "cannot resolve: " + rec.message();
            co_return;
          }
          auto [cec, ep] = co_await stream.async_connect(results, tuple);
          if (cec) {
            problem = cec == beast::error::timeout ? "no connection within the timeout" : cec.message();
            co_return;
          }
          http::request<http::string_body> req{http::verb::post, target, 11};
          req.set(http::field::host, host + ":" + port);
          req.set(http::field::content_type, "application/json");
          req.body() = body;
          req.prepare_payload();
          auto [wec, wn] = co_await http::async_write(stream, req, tuple);
          beast::flat_buffer buffer;
          http::response<http::string_body> res;
          if (!wec) {
            auto [rec2, rn] = co_await http::async_read(stream, buffer, res, tuple);
            if (rec2) problem = rec2 == beast::error::timeout ? "no answer within the timeout" : rec2.message();
          } else {
            problem = wec.message();
          }
          if (!problem && res.result() != http::status::ok) {
            problem = "HTTP " + std::to_string(res.result_int()) + ": " + res.body().substr(0, 200);
          }
          if (!problem) answer = std::move(res.body());
          beast::error_code ignored;
          stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        },
        asio::detached);
    io.run();
    if (!problem) return std::nullopt;
    problems += (problems.empty() ? "" : "; ") + std::string("etcd at ") + host + ":" + port + ": " + *problem;
  }
  return problems;
}

std::optional<std::string> EtcdScan::range(const std::string& prefix, std::vector<EtcdKey>& out) {
  json::object request;
  request["key"] = base64_encode(prefix);
  request["range_end"] = base64_encode(range_end(prefix));
  std::string answer;
  if (auto problem = post("/v3/kv/range", json::serialize(request), answer)) return problem;
  out.clear();
  boost::system::error_code ec;
  const json::value v = json::parse(answer, ec);
  if (ec || !v.is_object()) return "etcd's answer is not JSON: " + answer.substr(0, 200);
  const auto* kvs = v.as_object().if_contains("kvs");
  if (!kvs || !kvs->is_array()) return std::nullopt;  // no key: etcd leaves the field out
  for (const auto& kv : kvs->as_array()) {
    if (!kv.is_object()) continue;
    const auto& o = kv.as_object();
    EtcdKey k;
    const auto* key = o.if_contains("key");
    const auto* value = o.if_contains("value");
    if (!key || !key->is_string()) continue;
    k.key = base64_decode(std::string(key->as_string())).value_or("");
    if (value && value->is_string()) k.value = base64_decode(std::string(value->as_string())).value_or("");
    k.lease = as_int(o.if_contains("lease"));
    k.mod_revision = as_int(o.if_contains("mod_revision"));
    out.push_back(std::move(k));
  }
  return std::nullopt;
}

std::optional<std::string> EtcdScan::lease(std::int64_t id, EtcdLease& out) {
  json::object request;
  request["ID"] = std::to_string(id);
  std::string answer;
  if (auto problem = post("/v3/lease/timetolive", json::serialize(request), answer)) return problem;
  boost::system::error_code ec;
  const json::value v = json::parse(answer, ec);
  if (ec || !v.is_object()) return "etcd's answer is not JSON: " + answer.substr(0, 200);
  out.ttl_s = v.as_object().if_contains("TTL") ? as_int(v.as_object().if_contains("TTL")) : -1;
  out.granted_s = as_int(v.as_object().if_contains("grantedTTL"));
  return std::nullopt;
}

std::optional<std::string> EtcdScan::put(const std::string& key, const std::string& value, std::int64_t& revision) {
  json::object request;
  request["key"] = base64_encode(key);
  request["value"] = base64_encode(value);
  std::string answer;
  if (auto problem = post("/v3/kv/put", json::serialize(request), answer)) return problem;
  boost::system::error_code ec;
  const json::value v = json::parse(answer, ec);
  if (ec || !v.is_object()) return "etcd's answer is not JSON: " + answer.substr(0, 200);
  const auto* header = v.as_object().if_contains("header");
  revision = header && header->is_object() ? as_int(header->as_object().if_contains("revision")) : 0;
  return std::nullopt;
}

std::optional<std::string> EtcdScan::remove(const std::string& key, std::int64_t& deleted) {
  json::object request;
  request["key"] = base64_encode(key);
  std::string answer;
  if (auto problem = post("/v3/kv/deleterange", json::serialize(request), answer)) return problem;
  boost::system::error_code ec;
  const json::value v = json::parse(answer, ec);
  if (ec || !v.is_object()) return "etcd's answer is not JSON: " + answer.substr(0, 200);
  deleted = as_int(v.as_object().if_contains("deleted"));
  return std::nullopt;
}

}  // namespace wheelrpc::wheelctl
