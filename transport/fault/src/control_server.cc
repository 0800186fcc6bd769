#include <wheelrpc/fault/control_server.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <unordered_map>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <wheelrpc/common/mutex.h>

#include "control_api.h"
#include "log.h"

namespace wheelrpc::fault {
namespace detail {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

namespace {
constexpr std::size_t kBodyLimit = 64 * 1024;
constexpr std::chrono::seconds kIdleTimeout{30};
}  // namespace

class ControlSession;

class ControlState : public std::enable_shared_from_this<ControlState> {
 public:
  ControlState(asio::any_io_executor ex, FaultProxy& proxy, unsigned short port)
      : ex_(std::move(ex)), proxy_(&proxy), endpoint_(asio::ip::make_address("127.0.0.1"), port), acceptor_(ex_) {}

  error_code start();
  void stop();
  asio::ip::tcp::endpoint local_endpoint() const {
    common::LockGuard lock(mu_);
    return endpoint_;
  }

  /// Runs `f(proxy)` unless stopped; false when stopped. Holds a shared lock
  /// so that stop() waits for requests being answered.
  template <class F>
  bool with_proxy(F&& f) {
    common::SharedLock lock(proxy_mu_);
    if (!proxy_) return false;
    f(*proxy_);
    return true;
  }
  void forget(std::uint64_t id) {
    common::LockGuard lock(mu_);
    sessions_.erase(id);
  }

 private:
  void accept_locked() WHEELRPC_REQUIRES(mu_);

  const asio::any_io_executor ex_;
  common::SharedMutex proxy_mu_;
  FaultProxy* proxy_ WHEELRPC_GUARDED_BY(proxy_mu_);  // null once stopped

  mutable common::Mutex mu_;  // the acceptor is only touched under it
  asio::ip::tcp::endpoint endpoint_ WHEELRPC_GUARDED_BY(mu_);
  asio::ip::tcp::acceptor acceptor_ WHEELRPC_GUARDED_BY(mu_);
  asio::steady_timer accept_pause_ WHEELRPC_GUARDED_BY(mu_){ex_};
  bool started_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::uint64_t next_id_ WHEELRPC_GUARDED_BY(mu_) = 1;
  std::unordered_map<std::uint64_t, std::weak_ptr<ControlSession>> sessions_ WHEELRPC_GUARDED_BY(mu_);
};

/// One control connection, on its own strand: read a request, answer, repeat
/// (keep-alive). Malformed requests get a 400 and the connection closes.
class ControlSession : public std::enable_shared_from_this<ControlSession> {
 public:
  ControlSession(std::uint64_t id, asio::ip::tcp::socket socket, std::shared_ptr<ControlState> state)
      : id_(id), stream_(std::move(socket)), state_(std::move(state)) {}

  void start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
  }
  /// From any thread.
  void close() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->shutdown(); });
  }

 private:
  void do_read() {
    if (closed_) return;
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(const error_code& ec) {
    if (closed_) return;
    if (ec) {
      // A request that is not HTTP, or too big, gets an answer; a closed,
      // timed-out or reset connection just ends.
      if (ec.category() != http::make_error_code(http::error::end_of_stream).category() ||
          ec == http::error::end_of_stream) {
        shutdown();
        return;
      }
      const auto status = ec == http::error::body_limit ? http::status::payload_too_large : http::status::bad_request;
      std::string m("malformed HTTP request: ");
      respond(error_response(status, m.append(ec.message()), 11, false));
      return;
    }
    const HttpRequest req = parser_->release();
    HttpResponse res;
    try {
      if (!state_->with_proxy([&](FaultProxy& proxy) { res = handle_control_request(proxy, req); })) {
        res = error_response(http::status::service_unavailable, "the control server is stopping", req.version(), false);
      }
    } catch (const std::exception& e) {
      res = error_response(http::status::internal_server_error, e.what(), req.version(), false);
    }
    respond(std::move(res));
  }

  void respond(HttpResponse res) {
    res_ = std::move(res);
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, res_, [self = shared_from_this()](const error_code& ec, std::size_t) {
      if (ec || !self->res_.keep_alive()) {
        self->shutdown();
        return;
      }
      self->do_read();
    });
  }

  void shutdown() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
    state_->forget(id_);
  }

  const std::uint64_t id_;
  beast::tcp_stream stream_;
  std::shared_ptr<ControlState> state_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpResponse res_;
  bool closed_ = false;
};

error_code ControlState::start() {
  common::LockGuard lock(mu_);
  if (stopped_) return errc::stopped;
  if (started_) return {};
  error_code ec;
  acceptor_.open(endpoint_.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint_, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) endpoint_ = acceptor_.local_endpoint(ec);
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    // Returned, so the caller reports it (not said twice).
    logger()->debug("fault control server cannot listen on 127.0.0.1:{}: {}", endpoint_.port(), ec.message());
    return ec;
  }
  started_ = true;
  accept_locked();
  return {};
}

void ControlState::accept_locked() {
  acceptor_.async_accept(asio::any_io_executor(asio::make_strand(ex_)),
                         [self = shared_from_this()](const error_code& ec, asio::ip::tcp::socket socket) {
                           common::LockGuard lock(self->mu_);
                           if (self->stopped_ || ec == asio::error::operation_aborted) return;
                           if (ec) {
                             // E.g. EMFILE: retry shortly rather than spin on the error.
                             logger()->warn("fault control server accept failed: {}", ec.message());
                             self->accept_pause_.expires_after(std::chrono::milliseconds(50));
                             self->accept_pause_.async_wait([self](const error_code& wait_ec) {
                               common::LockGuard l(self->mu_);
                               if (!wait_ec && !self->stopped_) self->accept_locked();
                             });
                             return;
                           }
                           const std::uint64_t id = self->next_id_++;
                           auto session = std::make_shared<ControlSession>(id, std::move(socket), self);
                           self->sessions_.emplace(id, session);
                           session->start();
                           self->accept_locked();
                         });
}

void ControlState::stop() {
  {
    common::LockGuard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    accept_pause_.cancel();
    for (const auto& [id, weak] : sessions_) {
      if (auto s = weak.lock()) s->close();
    }
  }
  // Waits for requests being answered; none touches the proxy afterwards.
  common::LockGuard lock(proxy_mu_);
  proxy_ = nullptr;
}

}  // namespace detail

ControlServer::ControlServer(boost::asio::any_io_executor ex, FaultProxy& proxy, unsigned short port)
    : state_(std::make_shared<detail::ControlState>(std::move(ex), proxy, port)) {}

ControlServer::~ControlServer() { stop(); }

boost::system::error_code ControlServer::start() { return state_->start(); }
void ControlServer::stop() { state_->stop(); }
boost::asio::ip::tcp::endpoint ControlServer::local_endpoint() const { return state_->local_endpoint(); }

}  // namespace wheelrpc::fault
