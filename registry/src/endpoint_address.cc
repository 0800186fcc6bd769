#include "endpoint_address.h"

#include <charconv>

namespace wheelrpc::registry::detail {
namespace ip = boost::asio::ip;

std::optional<ip::tcp::endpoint> parse_ip_endpoint(std::string_view text, std::string& why) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      why = "endpoint '" + std::string(text) + "' is not \"[v6]:port\"";
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      why = "endpoint '" + std::string(text) + "' has no port";
      return std::nullopt;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [p, err] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || err != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
    why = "endpoint '" + std::string(text) + "' has no valid port (1..65535)";
    return std::nullopt;
  }
  boost::system::error_code ec;
  const auto addr = ip::make_address(std::string(host), ec);
  if (ec || (addr.is_v6() && text.front() != '[')) {
    why = "endpoint '" + std::string(text) + "' is not an IP address and port";
    return std::nullopt;
  }
  return ip::tcp::endpoint(addr, static_cast<unsigned short>(value));
}

std::string format_endpoint(const ip::tcp::endpoint& ep) {
  const auto addr = ep.address().to_string();
  const auto port = std::to_string(ep.port());
  return ep.address().is_v6() ? "[" + addr + "]:" + port : addr + ":" + port;
}

ip::tcp::endpoint announceable(ip::tcp::endpoint ep) {
  if (ep.address().is_unspecified()) ep.address(ip::make_address_v4("127.0.0.1"));
  return ep;
}

}  // namespace wheelrpc::registry::detail
