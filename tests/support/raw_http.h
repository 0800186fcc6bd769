#pragma once
// One HTTP/1.1 exchange over a raw socket, bounded in time: sends a request
// with "Connection: close", reads until the server closes, splits the reply.
// Enough for testing small JSON APIs; no chunked encoding.

#include <chrono>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include "support/timed_client.h"

namespace wheelrpc::test {

struct HttpReply {
  int status = 0;       ///< 0 when no status line came back
  std::string headers;  ///< the status line and headers, as received
  std::string body;
};

/// The text of a request (Content-Length set when there is a body).
inline std::string http_request_text(std::string_view method, std::string_view target, std::string_view body = {}) {
  std::string r;
  r.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
  if (!body.empty() || method == "POST") {
    r.append("Content-Type: application/json\r\nContent-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  r.append("\r\n").append(body);
  return r;
}

/// Sends `raw` as is and reads the whole reply.
inline HttpReply http_exchange(const boost::asio::ip::tcp::endpoint& ep, std::string_view raw,
                               std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  HttpReply reply;
  TimedClient c;
  if (c.connect(ep, timeout) || c.write(raw, timeout)) return reply;
  std::string all;
  c.read_until_closed(all, timeout);
  const auto end = all.find("\r\n\r\n");
  reply.headers = all.substr(0, end);
  if (end != std::string::npos) reply.body = all.substr(end + 4);
  if (all.rfind("HTTP/1.1 ", 0) == 0 && all.size() >= 12) reply.status = std::stoi(all.substr(9, 3));
  return reply;
}

inline HttpReply http_call(const boost::asio::ip::tcp::endpoint& ep, std::string_view method, std::string_view target,
                           std::string_view body = {}) {
  return http_exchange(ep, http_request_text(method, target, body));
}

}  // namespace wheelrpc::test
