#pragma once
// "ip:port" for logs ("[v6]:port" for IPv6).

#include <string>

#include <boost/asio/ip/tcp.hpp>

namespace wheelrpc::transport::detail {

inline std::string to_text(const boost::asio::ip::tcp::endpoint& ep) {
  // Built with append: g++ 12 at -O3 reports a false -Wrestrict for the
  // operator+ chain.
  const auto addr = ep.address();
  std::string out;
  if (addr.is_v6()) out.append("[").append(addr.to_string()).append("]");
  else out.append(addr.to_string());
  out.append(":").append(std::to_string(ep.port()));
  return out;
}

}  // namespace wheelrpc::transport::detail
