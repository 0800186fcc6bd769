#include <wheelrpc/transport/acceptor.h>
#include <wheelrpc/transport/connector.h>

#include <chrono>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>

#include "log.h"

namespace wheelrpc::transport {
namespace asio = boost::asio;
using boost::system::error_code;

std::shared_ptr<Acceptor> Acceptor::create(asio::any_io_executor ex, AcceptHandler on_accept) {
  return std::shared_ptr<Acceptor>(new Acceptor(std::move(ex), std::move(on_accept)));
}

Acceptor::Acceptor(asio::any_io_executor ex, AcceptHandler on_accept)
    : strand_(asio::make_strand(ex)), acceptor_(strand_), on_accept_(std::move(on_accept)) {}

error_code Acceptor::listen(const asio::ip::tcp::endpoint& endpoint, int backlog) {
  error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(backlog, ec);
  if (!ec) bound_ = acceptor_.local_endpoint(ec);
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    // Returned, so the caller reports it: logged at error level too, it
    // would be said twice.
    detail::logger()->debug("cannot listen on {}: {}", endpoint_text(endpoint), ec.message());
    return ec;
  }
  asio::dispatch(strand_, [self = shared_from_this()] { self->do_accept(); });
  return {};
}

asio::ip::tcp::endpoint Acceptor::local_endpoint() const { return bound_; }

void Acceptor::close() {
  asio::dispatch(strand_, [self = shared_from_this()] {
    error_code ignored;
    self->acceptor_.close(ignored);
  });
}

void Acceptor::do_accept() {
  if (!acceptor_.is_open()) return;
  acceptor_.async_accept(
      // Each accepted socket gets the acceptor's underlying executor, not its
      // strand: the channel makes a strand of its own.
      strand_.get_inner_executor(),
      asio::bind_executor(strand_, [self = shared_from_this()](const error_code& ec, asio::ip::tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
        if (ec) {
          // E.g. EMFILE: log and retry shortly rather than spin on the error.
          detail::logger()->warn("accept failed: {}", ec.message());
          auto pause = std::make_shared<asio::steady_timer>(self->strand_, std::chrono::milliseconds(50));
          pause->async_wait([self, pause](const error_code&) { self->do_accept(); });
          return;
        }
        self->on_accept_(std::move(socket));
        self->do_accept();
      }));
}

}  // namespace wheelrpc::transport
