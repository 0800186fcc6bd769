#pragma once
// A TCP client for tests whose every operation is bounded: each call runs the
// client's private io_context for at most `timeout` and cancels what is left,
// reporting asio::error::timed_out. Single-threaded: use it from one thread.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace wheelrpc::test {

class TimedClient {
 public:
  using ms = std::chrono::milliseconds;

  boost::system::error_code connect(const boost::asio::ip::tcp::endpoint& ep, ms timeout = ms(5000)) {
    return run([&](auto done) { socket_.async_connect(ep, done); }, timeout);
  }

  /// Writes all of `data`.
  boost::system::error_code write(std::string_view data, ms timeout = ms(5000)) {
    return run(
        [&](auto done) {
          boost::asio::async_write(socket_, boost::asio::buffer(data),
                                   [done](const boost::system::error_code& ec, std::size_t) { done(ec); });
        },
        timeout);
  }

  /// Appends exactly `n` bytes to `out`, or fewer when the stream ends, fails
  /// or the time runs out (then the error says which).
  boost::system::error_code read_exactly(std::size_t n, std::string& out, ms timeout = ms(5000)) {
    const std::size_t start = out.size();
    out.resize(start + n);
    std::size_t got = 0;
    const auto ec = run(
        [&](auto done) {
          boost::asio::async_read(socket_, boost::asio::buffer(out.data() + start, n),
                                  [done, &got](const boost::system::error_code& e, std::size_t k) {
                                    got = k;
                                    done(e);
                                  });
        },
        timeout);
    out.resize(start + got);
    return ec;
  }

  /// One read of whatever arrives first; appends it to `out`.
  boost::system::error_code read_some(std::string& out, ms timeout = ms(5000)) {
    char buf[64 * 1024];
    std::size_t got = 0;
    const auto ec = run(
        [&](auto done) {
          socket_.async_read_some(boost::asio::buffer(buf),
                                  [done, &got](const boost::system::error_code& e, std::size_t k) {
                                    got = k;
                                    done(e);
                                  });
        },
        timeout);
    out.append(buf, got);
    return ec;
  }

  /// Reads until the stream ends or fails (returns eof, connection_reset, ...)
  /// or `timeout` passes in all (timed_out); appends everything to `out`.
  boost::system::error_code read_until_closed(std::string& out, ms timeout = ms(5000)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<ms>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return boost::asio::error::timed_out;
      if (const auto ec = read_some(out, left)) return ec;
    }
  }

  void shutdown_send() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  }
  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

 private:
  template <class Start>
  boost::system::error_code run(Start start, ms timeout) {
    std::optional<boost::system::error_code> result;
    start([&result](const boost::system::error_code& ec) { result = ec; });
    io_.restart();
    io_.run_for(timeout);
    if (result) return *result;
    boost::system::error_code ignored;
    socket_.cancel(ignored);
    io_.restart();
    io_.run();
    return boost::asio::error::timed_out;
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_{io_};
};

/// True for the ways a connection can end that a test of a close accepts.
inline bool is_closed_error(const boost::system::error_code& ec) {
  return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
         ec == boost::asio::error::broken_pipe;
}

}  // namespace wheelrpc::test
