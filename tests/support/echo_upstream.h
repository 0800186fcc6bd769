#pragma once
// A plain TCP echo server in raw Asio, for tests that need an upstream which
// is not the RPC server (e.g. FaultProxy tests). Listens on 127.0.0.1:0; each
// connection echoes what it reads; end-of-stream is echoed as a FIN after the
// data. Runs on the given executor (a strand per connection).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

namespace wheelrpc::test {

class EchoUpstream {
 public:
  explicit EchoUpstream(boost::asio::any_io_executor ex) : state_(std::make_shared<State>(ex)) {
    namespace asio = boost::asio;
    auto& a = state_->acceptor;
    const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
    a.open(ep.protocol());
    a.set_option(asio::socket_base::reuse_address(true));
    a.bind(ep);
    a.listen();
    endpoint_ = a.local_endpoint();
    std::lock_guard lock(state_->mu);
    accept_locked(state_);
  }
  ~EchoUpstream() { stop(); }
  EchoUpstream(const EchoUpstream&) = delete;
  EchoUpstream& operator=(const EchoUpstream&) = delete;

  boost::asio::ip::tcp::endpoint endpoint() const { return endpoint_; }
  int accepted() const { return state_->accepted.load(); }
  std::uint64_t bytes_received() const { return state_->bytes.load(); }

  /// Stops accepting and closes every connection. Idempotent; any thread.
  void stop() {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) return;
    state_->stopped = true;
    boost::system::error_code ignored;
    state_->acceptor.close(ignored);
    for (auto& weak : state_->sessions) {
      if (auto s = weak.lock()) {
        boost::asio::post(s->socket.get_executor(), [s] {
          boost::system::error_code e;
          s->socket.close(e);
        });
      }
    }
  }

 private:
  struct Session {
    explicit Session(boost::asio::ip::tcp::socket s) : socket(std::move(s)) {}
    boost::asio::ip::tcp::socket socket;
    std::vector<char> buf = std::vector<char>(16 * 1024);
  };
  struct State {
    explicit State(boost::asio::any_io_executor e) : ex(e), acceptor(e) {}
    boost::asio::any_io_executor ex;
    boost::asio::ip::tcp::acceptor acceptor;  // touched only under mu
    std::mutex mu;
    bool stopped = false;
    std::vector<std::weak_ptr<Session>> sessions;
    std::atomic<int> accepted{0};
    std::atomic<std::uint64_t> bytes{0};
  };

  static void accept_locked(const std::shared_ptr<State>& st) {
    namespace asio = boost::asio;
    st->acceptor.async_accept(asio::any_io_executor(asio::make_strand(st->ex)),
                              [st](const boost::system::error_code& ec, asio::ip::tcp::socket sock) {
                                std::lock_guard lock(st->mu);
                                if (ec || st->stopped) return;
                                st->accepted.fetch_add(1);
                                auto s = std::make_shared<Session>(std::move(sock));
                                st->sessions.push_back(s);
                                asio::post(s->socket.get_executor(), [s, st] { read(s, st); });
                                accept_locked(st);
                              });
  }

  static void read(const std::shared_ptr<Session>& s, const std::shared_ptr<State>& st) {
    namespace asio = boost::asio;
    s->socket.async_read_some(asio::buffer(s->buf), [s, st](const boost::system::error_code& ec, std::size_t n) {
      boost::system::error_code ignored;
      if (ec == asio::error::eof) {
        s->socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
        s->socket.close(ignored);
        return;
      }
      if (ec) {
        s->socket.close(ignored);
        return;
      }
      st->bytes.fetch_add(n);
      asio::async_write(s->socket, asio::buffer(s->buf.data(), n),
                        [s, st](const boost::system::error_code& wec, std::size_t) {
                          if (wec) {
                            boost::system::error_code e;
                            s->socket.close(e);
                            return;
                          }
                          read(s, st);
                        });
    });
  }

  std::shared_ptr<State> state_;
  boost::asio::ip::tcp::endpoint endpoint_;
};

}  // namespace wheelrpc::test
