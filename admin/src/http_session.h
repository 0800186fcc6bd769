#pragma once
// HttpSession: one admin HTTP connection on its own strand. Private to the
// admin module.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http_message.h"
#include "http_request_parser.h"

namespace wheelrpc::admin::detail {

class HttpServerCore;

/// Reads a request, routes it, writes the answer, repeats (keep-alive); one
/// request at a time. A `reject` session only answers 503 and closes. Every
/// private method runs on the connection's strand (asserted).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: `start`, `close_soon`, `id` and `executor`
/// are safe from any thread; the rest is the session's own, on its strand.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  /// `socket` must be on a strand (`make_strand` of the server's executor).
  HttpSession(std::uint64_t id, boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpServerCore> core, bool reject);
  ~HttpSession();

  /// Starts serving (posted onto the strand). Any thread.
  void start();
  /// Closes the connection (posted onto the strand). Any thread.
  void close_soon();
  /// The answer to request number `seq` of this connection; dropped when that
  /// request is no longer the one waiting (or closed). On the strand (posted by
  /// HttpServerCore::post_to_session).
  void on_reply(std::uint64_t seq, HttpResponse res);
  /// The timeout armed as number `seq` expired. On the strand (posted by
  /// HttpServerCore::post_to_session).
  void on_timeout(std::uint64_t seq);

  std::uint64_t id() const noexcept { return id_; }
  /// The connection's strand. Any thread (never changes).
  const boost::asio::ip::tcp::socket::executor_type& executor() const noexcept { return strand_; }

 private:
  enum class Phase { reading, handling, writing, lingering, closed };
  enum class TimerKind { none, idle, request, write, linger };

  bool on_strand() const;
  void process_buffer();
  void do_read();
  void write_continue();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void handle(HttpRequest req);
  void write_response(HttpResponse res);
  void on_write(const boost::system::error_code& ec);
  void linger();
  void arm(TimerKind kind, std::chrono::milliseconds delay);
  void disarm();
  void close();

  const std::uint64_t id_;
  const std::shared_ptr<HttpServerCore> core_;
  const bool reject_;
  const boost::asio::ip::tcp::socket::executor_type strand_;
  boost::asio::ip::tcp::socket socket_;
  std::string peer_;  // "address:port", for logs

  std::array<char, 4096> read_buf_{};
  std::string in_;  // received, not yet consumed by the parser
  RequestParser parser_;
  bool reading_ = false;                  // an async_read_some is outstanding
  bool writing_continue_ = false;         // "100 Continue" is being written
  bool request_started_ = false;          // bytes of the next request have arrived
  std::chrono::milliseconds idle_limit_;  // request_timeout for a new connection, then idle_timeout
  std::size_t lingered_ = 0;              // bytes discarded while lingering

  Phase phase_ = Phase::reading;
  HttpRequest req_;
  std::uint64_t request_seq_ = 0;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  bool head_ = false;
  bool close_after_write_ = false;
  bool refused_ = false;  // the server refused the request (400, 408, 413, 431, 503): linger before closing
  boost::beast::http::response<boost::beast::http::string_body> res_;

  TimerKind timer_kind_ = TimerKind::none;
  std::uint64_t timer_seq_ = 0;  // a task carrying another number is stale
};

}  // namespace wheelrpc::admin::detail
