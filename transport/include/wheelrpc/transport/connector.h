#pragma once
/// Connector: one asynchronous TCP connect with a timeout on the shared timer.

#include <chrono>
#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/timer/timer.h>

namespace wheelrpc::transport {

/// Completion: (error_code, connected socket). errc::connect_timeout when the
/// timeout passed first; operation_aborted never (the connect is not
/// cancellable from outside). Runs on a strand of `ex`. Never blocks the
/// timer's worker: the timeout only posts a cancel to that strand.
using ConnectHandler = std::function<void(boost::system::error_code, boost::asio::ip::tcp::socket)>;

void async_connect(boost::asio::any_io_executor ex, timer::Timer& timer,
                   const boost::asio::ip::tcp::endpoint& endpoint,
                   std::chrono::milliseconds timeout, ConnectHandler handler);

/// Parses "host:port" (host: IPv4/IPv6 literal or "localhost"). Returns false on
/// a malformed string.
bool parse_endpoint(const std::string& text, boost::asio::ip::tcp::endpoint& out);

/// "ip:port" ("[ip]:port" for IPv6), as logs and error messages show endpoints.
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace wheelrpc::transport
