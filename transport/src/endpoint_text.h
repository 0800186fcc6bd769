#pragma once
// "ip:port" for logs ("[v6]:port" for IPv6).

#include <string>

#include <boost/asio/ip/tcp.hpp>

namespace wheelrpc::transport::detail {

inline std::string to_text(const boost::asio::ip::tcp::endpoint& ep) {
  const auto addr = ep.address();
  return (addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string()) + ":" +
         std::to_string(ep.port());
}

}  // namespace wheelrpc::transport::detail
