#pragma once
// Conversion between a ServiceInstance's endpoint text ("ip:port",
// "[v6]:port") and a TCP endpoint. Pure functions, thread-safe.

#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

namespace wheelrpc::registry::detail {

/// Parses "a.b.c.d:port" or "[v6]:port" (IP literals only, port 1..65535);
/// nullopt and `why` (naming `text`) otherwise.
std::optional<boost::asio::ip::tcp::endpoint> parse_ip_endpoint(std::string_view text, std::string& why);

/// "ip:port", or "[v6]:port" for IPv6.
std::string format_endpoint(const boost::asio::ip::tcp::endpoint& ep);

/// What a server announces for its listen address `ep`: the unspecified
/// addresses 0.0.0.0 and :: become 127.0.0.1.
boost::asio::ip::tcp::endpoint announceable(boost::asio::ip::tcp::endpoint ep);

}  // namespace wheelrpc::registry::detail
