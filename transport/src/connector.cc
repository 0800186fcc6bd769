#include <wheelrpc/transport/connector.h>

#include <memory>
#include <utility>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/strand.hpp>

#include <wheelrpc/transport/errc.h>

namespace wheelrpc::transport {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

using Handler = asio::any_completion_handler<ConnectSignature>;

// One attempt: the socket, the caller's handler, and why the attempt was cut
// short, if it was. The socket's completion, the timeout and a cancellation
// all meet on the strand, so the first of them decides the outcome.
struct ConnectOp {
  ConnectOp(asio::any_io_executor ex, Handler h)
      : io_ex(ex),
        strand(asio::make_strand(ex)),
        socket(ex),
        handler(std::move(h)),
        work(asio::prefer(asio::get_associated_executor(handler, io_ex), asio::execution::outstanding_work.tracked)) {}

  // Hands the result to the handler's executor. Strand only; once.
  void complete(error_code ec, asio::ip::tcp::socket s) {
    done = true;
    // Keep the handler's executor busy until the dispatch below has queued or
    // run the handler; then let go of it.
    auto keep_busy = std::move(work);
    asio::dispatch(io_ex, asio::append(std::move(handler), ec, std::move(s)));
  }

  // Closes the socket, so that a connect in progress completes at once, and
  // records why. Strand only.
  void cut_short(error_code why) {
    if (done || abort_reason) return;
    abort_reason = why;
    error_code ignored;
    socket.close(ignored);
  }

  asio::any_io_executor io_ex;
  asio::strand<asio::any_io_executor> strand;
  asio::ip::tcp::socket socket;
  Handler handler;
  asio::any_completion_executor work;  // the handler's executor, work tracked
  error_code abort_reason;             // strand only: connect_timeout or operation_aborted
  bool done = false;                   // strand only
};

// Lives in the caller's cancellation slot, possibly after the attempt is over
// (nothing forces the slot to be cleared), hence the weak reference. It may be
// called on any thread the caller emits from; it only posts to the strand.
struct CancelConnect {
  std::weak_ptr<ConnectOp> op;
  void operator()(asio::cancellation_type_t type) const {
    if (type == asio::cancellation_type::none) return;
    if (auto o = op.lock()) {
      asio::post(o->strand, [o] { o->cut_short(asio::error::operation_aborted); });
    }
  }
};

}  // namespace

namespace detail {

void async_connect_impl(Handler handler, asio::any_io_executor ex, timer::Timer& timer,
                        const asio::ip::tcp::endpoint& endpoint, std::chrono::milliseconds timeout) {
  auto slot = asio::get_associated_cancellation_slot(handler);
  auto op = std::make_shared<ConnectOp>(std::move(ex), std::move(handler));
  if (slot.is_connected()) slot.template emplace<CancelConnect>(CancelConnect{op});
  // The timer only posts to the strand, where the socket lives; it holds the op
  // weakly so an attempt that finished first is not kept alive. The timeout is
  // never cancelled: once the attempt is over it fires into an expired weak
  // reference. So the completion never touches the timer, and a client closed
  // while a connect is in flight has nothing left to do with the timer. A timer
  // that refuses the timeout (stopped, full) leaves the connect bounded only by
  // the system's own connect timeout, as documented.
  std::weak_ptr<ConnectOp> weak = op;
  std::error_code tec;
  timer.new_timeout(
      [weak] {
        if (auto o = weak.lock()) {
          asio::post(o->strand, [o] { o->cut_short(make_error_code(errc::connect_timeout)); });
        }
      },
      timeout, tec);
  op->socket.async_connect(endpoint, asio::bind_executor(op->strand, [op](const error_code& ec) {
                             auto closed = [&op] { return asio::ip::tcp::socket(op->io_ex); };
                             if (op->abort_reason) {
                               op->complete(op->abort_reason, closed());
                             } else if (ec) {
                               error_code ignored;
                               op->socket.close(ignored);
                               op->complete(ec, closed());
                             } else {
                               op->complete(ec, std::move(op->socket));
                             }
                           }));
}

}  // namespace detail

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
