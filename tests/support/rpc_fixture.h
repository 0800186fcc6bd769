#pragma once
// An in-process server and client on 127.0.0.1 (port 0), one shared timer and
// an io_context run by a couple of threads; bounded waits only.

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

namespace wheelrpc::test {

class IoThreads {
 public:
  explicit IoThreads(int n = 2) : guard_(boost::asio::make_work_guard(io)) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { io.run(); });
  }
  ~IoThreads() { stop(); }
  void stop() {
    guard_.reset();
    io.stop();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  /// The threads running `io`.
  int size() const { return static_cast<int>(threads_.size()); }
  boost::asio::io_context io;

 private:
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

/// Registers `echo` (replies with the payload) and `sleep` (payload = decimal
/// milliseconds; replies "slept" after that long, without blocking a thread).
inline void register_test_methods(rpc::Server& server, boost::asio::io_context& io) {
  server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  server.handle("sleep", [&io](rpc::Request req, rpc::Responder r) {
    const auto ms = std::chrono::milliseconds(std::stoll(req.payload.empty() ? "0" : req.payload));
    auto t = std::make_shared<boost::asio::steady_timer>(io, ms);
    t->async_wait([t, r = std::move(r)](const boost::system::error_code&) mutable { r.reply("slept"); });
  });
}

/// A call's outcome, and how long it took on the clock it was started with.
struct Outcome {
  boost::system::error_code ec;
  rpc::Response response;
  std::chrono::nanoseconds took{};
};

/// The call behind `f` has completed (without waiting).
inline bool done(const std::future<Outcome>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

/// Starts a call; the future holds its outcome (a second completion would
/// throw std::future_error: exactly once). `took` is read on `clock`
/// (nullptr: the steady clock) when the handler runs: on a manual clock that
/// is exact while the test does not advance it before the call completes.
inline std::future<Outcome> start(rpc::Client& client, std::string method, std::string payload, rpc::CallOptions o,
                                  const timer::Clock* clock = nullptr) {
  auto p = std::make_shared<std::promise<Outcome>>();
  auto f = p->get_future();
  auto now = [clock] { return clock ? clock->now() : std::chrono::steady_clock::now(); };
  const auto t0 = now();
  client.async_call(std::move(method), std::move(payload), std::move(o),
                    [p, t0, now](boost::system::error_code ec, rpc::Response r) {
                      p->set_value(Outcome{ec, std::move(r), now() - t0});
                    });
  return f;
}

/// Starts a call and waits for it (at most `limit`; past it, a server_error
/// outcome that says so).
inline Outcome call_and_wait(rpc::Client& client, std::string method, std::string payload = {}, rpc::CallOptions o = {},
                             std::chrono::seconds limit = std::chrono::seconds(30)) {
  auto f = start(client, std::move(method), std::move(payload), std::move(o));
  if (f.wait_for(limit) != std::future_status::ready) {
    return {make_error_code(rpc::errc::server_error), {{}, {}, "no completion within the test's limit"}, {}};
  }
  return f.get();
}

inline boost::asio::ip::tcp::endpoint loopback0() { return {boost::asio::ip::make_address("127.0.0.1"), 0}; }

struct RpcFixture {
  /// `more_methods`: registers a test's own methods before the server listens.
  explicit RpcFixture(rpc::ServerOptions so = {}, rpc::ClientOptions co = {}, int io_threads = 2,
                      const std::function<void(rpc::Server&)>& more_methods = {})
      : threads(io_threads), server(threads.io.get_executor(), timer, so) {
    register_test_methods(server, threads.io);
    if (more_methods) more_methods(server);
    auto ec = server.listen(loopback0());
    if (ec) throw boost::system::system_error(ec);
    client.emplace(threads.io.get_executor(), timer,
                   std::vector<boost::asio::ip::tcp::endpoint>{server.local_endpoint()}, co);
  }
  ~RpcFixture() {
    if (client) client->close();
    server.stop();
    threads.stop();
  }

  timer::HashedWheelTimer timer;
  IoThreads threads;
  rpc::Server server;
  std::optional<rpc::Client> client;
};

}  // namespace wheelrpc::test
