#pragma once
// A listener for tests that play the server themselves (half-close, stay
// silent, close at a chosen moment): listens on 127.0.0.1 port 0 and accepts
// one connection at a time into a TimedClient, which then does the talking.
// Every accept is bounded like a TimedClient operation. Single-threaded: use
// it from one thread.

#include <chrono>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "support/timed_client.h"

namespace wheelrpc::test {

class TimedListener {
 public:
  using ms = std::chrono::milliseconds;

  TimedListener() {
    namespace asio = boost::asio;
    const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(ep.protocol());
    acceptor_.bind(ep);
    acceptor_.listen();
  }

  boost::asio::ip::tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }

  /// Accepts the next connection into `into` (a TimedClient not yet connected).
  /// The accepted socket is registered with `into`'s own io_context.
  boost::system::error_code accept(TimedClient& into, ms timeout = ms(5000)) {
    std::optional<boost::system::error_code> result;
    acceptor_.async_accept(into.socket(), [&result](const boost::system::error_code& ec) { result = ec; });
    io_.restart();
    io_.run_for(timeout);
    if (result) return *result;
    boost::system::error_code ignored;
    acceptor_.cancel(ignored);
    io_.restart();
    io_.run();
    return boost::asio::error::timed_out;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_};
};

}  // namespace wheelrpc::test
