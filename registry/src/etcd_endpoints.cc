#include "etcd_endpoints.h"

#include <charconv>

#include <wheelrpc/registry/errc.h>

namespace wheelrpc::registry::detail {
namespace {

std::vector<EtcdEndpoint> fail(boost::system::error_code& ec, std::string& why, std::string msg) {
  ec = make_error_code(errc::bad_endpoint);
  why = std::move(msg);
  return {};
}

}  // namespace

std::vector<EtcdEndpoint> parse_etcd_endpoints(std::string_view list, boost::system::error_code& ec, std::string& why) {
  ec.clear();
  why.clear();
  const std::string original(list);
  for (std::string_view scheme : {"etcd://", "http://"}) {
    if (list.starts_with(scheme)) {
      list.remove_prefix(scheme.size());
      break;
    }
  }
  if (list.find("://") != std::string_view::npos)
    return fail(ec, why, "etcd endpoint list '" + original + "': unsupported scheme (use etcd://host:port,...)");
  if (list.empty()) return fail(ec, why, "etcd endpoint list '" + original + "' names no endpoint");
  std::vector<EtcdEndpoint> out;
  while (true) {
    const auto comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    const std::string shown(entry);
    if (entry.empty()) return fail(ec, why, "etcd endpoint list '" + original + "': empty entry");
    std::string_view host;
    std::string_view port;
    if (entry.front() == '[') {
      const auto close = entry.find(']');
      if (close == std::string_view::npos || close + 1 >= entry.size() || entry[close + 1] != ':')
        return fail(ec, why, "etcd endpoint '" + shown + "': expected [ipv6]:port");
      host = entry.substr(1, close - 1);
      port = entry.substr(close + 2);
    } else {
      const auto colon = entry.rfind(':');
      if (colon == std::string_view::npos) return fail(ec, why, "etcd endpoint '" + shown + "': missing ':port'");
      host = entry.substr(0, colon);
      port = entry.substr(colon + 1);
      if (host.find(':') != std::string_view::npos)
        return fail(ec, why, "etcd endpoint '" + shown + "': write an IPv6 address as [addr]:port");
    }
    if (host.empty()) return fail(ec, why, "etcd endpoint '" + shown + "': empty host");
    if (host.find('/') != std::string_view::npos)
      return fail(ec, why, "etcd endpoint '" + shown + "': a path is not allowed");
    unsigned value = 0;
    const auto [ptr, rc] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || rc != std::errc{} || ptr != port.data() + port.size() || value == 0 || value > 65535)
      return fail(ec, why, "etcd endpoint '" + shown + "': port must be a number in 1..65535");
    out.push_back({std::string(host), static_cast<std::uint16_t>(value)});
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::string to_string(const EtcdEndpoint& ep) {
  if (ep.host.find(':') != std::string::npos) return "[" + ep.host + "]:" + std::to_string(ep.port);
  return ep.host + ":" + std::to_string(ep.port);
}

}  // namespace wheelrpc::registry::detail
