#pragma once
// Parsing of an etcd endpoint list: `etcd://h1:p1,h2:p2` (or `h1:p1,h2:p2`).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/system/error_code.hpp>

namespace wheelrpc::registry::detail {

/// One etcd member's client address, as given (a name or an IP literal).
struct EtcdEndpoint {
  std::string host;    ///< host name, IPv4 literal, or IPv6 literal without brackets
  std::uint16_t port;  ///< TCP port, 1..65535
  bool operator==(const EtcdEndpoint&) const = default;
};

/// Parses `etcd://h1:p1,h2:p2,...` (the scheme is optional; `http://` is also
/// accepted; IPv6 as `[::1]:2379`). Every entry needs an explicit port. On
/// failure returns an empty list, sets `ec` to errc::bad_endpoint and `why` to a
/// message naming the bad entry. Pure function, thread-safe.
std::vector<EtcdEndpoint> parse_etcd_endpoints(std::string_view list, boost::system::error_code& ec, std::string& why);

/// `host:port` (`[host]:port` for IPv6), for logs and the HTTP Host header.
std::string to_string(const EtcdEndpoint& ep);

}  // namespace wheelrpc::registry::detail
