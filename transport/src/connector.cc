#include <wheelrpc/transport/connector.h>

#include <atomic>
#include <memory>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <wheelrpc/transport/errc.h>

namespace wheelrpc::transport {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// One attempt: the socket, the user's handler, and whether the timeout fired.
struct ConnectOp : std::enable_shared_from_this<ConnectOp> {
  ConnectOp(asio::any_io_executor ex, ConnectHandler h)
      : strand(asio::make_strand(ex)), socket(strand.get_inner_executor()), handler(std::move(h)) {}
  asio::strand<asio::any_io_executor> strand;
  asio::ip::tcp::socket socket;
  ConnectHandler handler;
  bool timed_out = false;  // strand only
};

}  // namespace

void async_connect(asio::any_io_executor ex, timer::Timer& timer,
                   const asio::ip::tcp::endpoint& endpoint, std::chrono::milliseconds timeout,
                   ConnectHandler handler) {
  auto op = std::make_shared<ConnectOp>(std::move(ex), std::move(handler));
  // The timer only posts to the strand, where the socket lives; it holds the op
  // weakly so an attempt that finished first is not kept alive. The timeout is
  // never cancelled: once the attempt is over it fires into an expired weak
  // reference. So the completion never touches the timer, and a client closed
  // while a connect is in flight has nothing left to do with the timer.
  std::weak_ptr<ConnectOp> weak = op;
  std::error_code tec;
  timer.new_timeout(
      [weak] {
        if (auto o = weak.lock()) {
          asio::post(o->strand, [o] {
            o->timed_out = true;
            error_code ignored;
            o->socket.close(ignored);
          });
        }
      },
      timeout, tec);
  op->socket.async_connect(
      endpoint, asio::bind_executor(op->strand, [op](const error_code& ec) {
        if (op->timed_out) {
          op->handler(make_error_code(errc::connect_timeout), asio::ip::tcp::socket(op->strand.get_inner_executor()));
        } else if (ec) {
          error_code ignored;
          op->socket.close(ignored);
          op->handler(ec, asio::ip::tcp::socket(op->strand.get_inner_executor()));
        } else {
          op->handler(ec, std::move(op->socket));
        }
      }));
}

std::string endpoint_text(const asio::ip::tcp::endpoint& endpoint) {
  // Built with append: g++ 12 at -O3 reports a false -Wrestrict for the
  // operator+ chain.
  const auto addr = endpoint.address();
  std::string out;
  if (addr.is_v6()) {
    out.append("[").append(addr.to_string()).append("]");
  } else {
    out.append(addr.to_string());
  }
  out.append(":").append(std::to_string(endpoint.port()));
  return out;
}

bool parse_endpoint(const std::string& text, asio::ip::tcp::endpoint& out) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size()) return false;
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  unsigned long port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') return false;
    port = port * 10 + static_cast<unsigned long>(c - '0');
    if (port > 65535) return false;
  }
  error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return false;
  out = asio::ip::tcp::endpoint(addr, static_cast<unsigned short>(port));
  return true;
}

}  // namespace wheelrpc::transport
