#pragma once
/// Connector: one asynchronous TCP connect with a timeout on the shared timer,
/// for any completion token; and the "ip:port" text of endpoints.

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/timer/timer.h>

namespace wheelrpc::transport {

/// The completion signature of async_connect: the error first, then the
/// socket (connected on success; closed on error).
using ConnectSignature = void(boost::system::error_code, boost::asio::ip::tcp::socket);

namespace detail {

/// The work behind async_connect, compiled once in connector.cc (Asio's
/// type-erased operation pattern); call async_connect instead.
void async_connect_impl(boost::asio::any_completion_handler<ConnectSignature> handler, boost::asio::any_io_executor ex,
                        timer::Timer& timer, const boost::asio::ip::tcp::endpoint& endpoint,
                        std::chrono::milliseconds timeout);

}  // namespace detail

/// Connects a new TCP socket to `endpoint`, giving up after `timeout`.
///
/// @param ex        Executor of the new socket, and of the completion handler
///                  when the token has no associated executor.
/// @param timer     The shared timer that measures `timeout`. It must be alive
///                  when the operation starts (for lazy tokens such as
///                  use_awaitable or deferred: when it is awaited or launched).
///                  Its worker never blocks on the connect: the timeout only
///                  posts a close of the socket to the operation's strand. If
///                  the timer refuses the timeout (stopped, or at its limit on
///                  pending timeouts) the connect runs without one, bounded
///                  only by the system's own connect timeout.
/// @param endpoint  Where to connect (copied).
/// @param timeout   Limit on the TCP connect, rounded up to the timer's tick;
///                  zero or negative: give up at the timer's next tick.
/// @param token     Any completion token with signature ConnectSignature:
///                  a callable, use_future, use_awaitable, deferred, as_tuple(...).
///
/// Completion signature `void(boost::system::error_code ec, tcp::socket socket)`:
/// - success, and the connected socket (its executor is `ex`);
/// - errc::connect_timeout (category "wheelrpc.transport") when `timeout`
///   passed first;
/// - boost::asio::error::operation_aborted when cancelled (below);
/// - otherwise the connect's own error (connection_refused, ...).
/// On error `socket` is a closed socket on `ex`. Exactly one completion.
///
/// Executor: the handler runs on its associated executor, or on `ex` when it
/// has none, as if by `boost::asio::dispatch`; never inside async_connect and
/// never on the timer's worker thread. Outstanding work is counted on that
/// executor until the handler has been handed to it.
///
/// Cancellation: per operation, through the token's associated cancellation
/// slot. Any cancellation type (terminal, partial, total) closes the socket and
/// completes with operation_aborted; nothing is left half done, since the
/// caller never saw the socket. If the connect has already completed when the
/// cancellation reaches it, the handler gets that result instead. Whichever of
/// the timeout and a cancellation comes first decides the error.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe to call from any thread.
///
/// Example:
/// @code
/// transport::async_connect(ex, timer, endpoint, std::chrono::seconds(3),
///     [](boost::system::error_code ec, boost::asio::ip::tcp::socket s) { ... });
/// auto s = co_await transport::async_connect(ex, timer, endpoint, 3s, boost::asio::use_awaitable);
/// @endcode
template <boost::asio::completion_token_for<ConnectSignature> Token>
auto async_connect(boost::asio::any_io_executor ex, timer::Timer& timer, const boost::asio::ip::tcp::endpoint& endpoint,
                   std::chrono::milliseconds timeout, Token&& token) {
  return boost::asio::async_initiate<Token, ConnectSignature>(&detail::async_connect_impl, token, std::move(ex),
                                                              std::ref(timer), endpoint, timeout);
}

/// Parses "host:port" (host: IPv4/IPv6 literal or "localhost"). Returns false on
/// a malformed string.
bool parse_endpoint(const std::string& text, boost::asio::ip::tcp::endpoint& out);

/// "ip:port" ("[ip]:port" for IPv6), as logs and error messages show endpoints.
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace wheelrpc::transport
