#pragma once
/// "HOST:PORT" on the example programs' command lines: checked when the
/// flags are parsed, resolved before the first call.

#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace wheelrpc::examples {

/// "HOST:PORT" with a host name (no IP literal): a non-empty host of letters,
/// digits, '-' and '.', and a port 1..65535. IP literals are
/// transport::parse_endpoint's.
bool is_host_port(const std::string& text);

/// Whether `text` is a server address a client can be given: an IPv4 or
/// bracketed IPv6 literal, or a host name (is_host_port), with a port 1..65535.
bool is_server_address(const std::string& text);

/// The addresses of `text` (is_server_address): an IP literal or localhost
/// as it is, without a lookup; a host name resolved now, blocking the calling
/// thread (getaddrinfo), into every address it has. On failure `out` is left
/// empty and the error says why (e.g. asio::error::host_not_found).
boost::system::error_code resolve_server(const std::string& text, std::vector<boost::asio::ip::tcp::endpoint>& out);

}  // namespace wheelrpc::examples
