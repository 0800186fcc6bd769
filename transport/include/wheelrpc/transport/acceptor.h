#pragma once
/// Acceptor: listens on a TCP endpoint and hands over accepted sockets.

#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

namespace wheelrpc::transport {

/// Accepts connections until closed. Accept errors other than cancellation are
/// logged and accepting goes on (e.g. running out of file descriptors is
/// retried after a short pause instead of spinning).
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: `listen` and `close` from any thread; `on_accept` runs on the
/// acceptor's strand.
class Acceptor : public std::enable_shared_from_this<Acceptor> {
 public:
  using AcceptHandler = std::function<void(boost::asio::ip::tcp::socket)>;

  static std::shared_ptr<Acceptor> create(boost::asio::any_io_executor ex, AcceptHandler on_accept);

  /// Binds (SO_REUSEADDR) and listens; port 0 picks a free port. Starts accepting.
  /// A failure is returned, not logged (above debug level): the caller reports it.
  /// `backlog`: connections the kernel may hold completed but not yet accepted;
  /// default the system's largest (SOMAXCONN, capped by net.core.somaxconn),
  /// so that many clients (re)connecting at once are not dropped and retried.
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint,
                                   int backlog = boost::asio::socket_base::max_listen_connections);
  /// The bound endpoint (the real port when listening on port 0).
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  /// Stops accepting and closes the listening socket. Idempotent.
  void close();

 private:
  Acceptor(boost::asio::any_io_executor ex, AcceptHandler on_accept);
  void do_accept();

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  boost::asio::ip::tcp::acceptor acceptor_;
  AcceptHandler on_accept_;
  boost::asio::ip::tcp::endpoint bound_;
};

}  // namespace wheelrpc::transport
