#include "support/host_port.h"

#include <algorithm>
#include <cctype>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/transport/connector.h>

namespace wheelrpc::examples {

namespace asio = boost::asio;

bool is_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  const bool host_ok = std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  });
  if (!host_ok || port.empty() || port.size() > 5) return false;
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  const long n = std::stol(port);
  return n >= 1 && n <= 65535;
}

bool is_server_address(const std::string& text) {
  asio::ip::tcp::endpoint ep;
  return (transport::parse_endpoint(text, ep) && ep.port() != 0) || is_host_port(text);
}

boost::system::error_code resolve_server(const std::string& text, std::vector<asio::ip::tcp::endpoint>& out) {
  out.clear();
  asio::ip::tcp::endpoint ep;
  if (transport::parse_endpoint(text, ep) && ep.port() != 0) {
    out.push_back(ep);
    return {};
  }
  if (!is_host_port(text)) return asio::error::invalid_argument;
  const auto colon = text.rfind(':');
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto results =
      resolver.resolve(text.substr(0, colon), text.substr(colon + 1), asio::ip::tcp::resolver::numeric_service, ec);
  if (ec) return ec;
  for (const auto& r : results) out.push_back(r.endpoint());
  if (out.empty()) return asio::error::host_not_found;
  return {};
}

}  // namespace wheelrpc::examples
