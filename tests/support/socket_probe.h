#pragma once
// Reads a TCP socket's options from the kernel when nothing in the API shows
// the socket: finds this process's descriptor whose local and remote
// endpoints are the given ones (/proc/self/fd, getsockname, getpeername),
// then asks getsockopt. Linux only; for tests.

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/transport/connector.h>

namespace wheelrpc::test {

/// "ip:port" of a socket address, as ConnectionInfo::local / remote spell it
/// (transport::endpoint_text); "" for anything but IPv4 / IPv6.
inline std::string probe_endpoint_text(const sockaddr_storage& address, socklen_t length) {
  if (address.ss_family != AF_INET && address.ss_family != AF_INET6) return {};
  boost::asio::ip::tcp::endpoint endpoint;
  if (length > endpoint.capacity()) return {};
  std::memcpy(endpoint.data(), &address, length);
  endpoint.resize(length);
  return transport::endpoint_text(endpoint);
}

/// The descriptor of this process's TCP socket from `local` to `remote`
/// ("ip:port" each), or std::nullopt when there is none now. A descriptor
/// closed and reused meanwhile just does not match.
inline std::optional<int> find_socket_fd(const std::string& local, const std::string& remote) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    int fd = -1;
    try {
      fd = std::stoi(it->path().filename().string());
    } catch (...) {
      continue;
    }
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) continue;
    if (probe_endpoint_text(address, length) != local) continue;
    length = sizeof address;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) continue;
    if (probe_endpoint_text(address, length) == remote) return fd;
  }
  return std::nullopt;
}

/// TCP_USER_TIMEOUT of the socket from `local` to `remote` (0: the kernel's
/// default), or std::nullopt when there is no such socket.
inline std::optional<std::chrono::milliseconds> socket_user_timeout(const std::string& local,
                                                                    const std::string& remote) {
  const auto fd = find_socket_fd(local, remote);
  if (!fd) return std::nullopt;
  unsigned int ms = 0;
  socklen_t length = sizeof ms;
  if (::getsockopt(*fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, &length) != 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

}  // namespace wheelrpc::test
