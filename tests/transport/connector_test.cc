// transport::async_connect: every completion token, a refused port, the
// timeout, per-operation cancellation, and the handler's executor. Each test
// checks that the handler ran exactly once, and never inside async_connect.
#include <wheelrpc/transport/connector.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/transport/errc.h>

#include "support/manual_timer.h"

namespace {

namespace asio = boost::asio;
namespace transport = wheelrpc::transport;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

const auto kLoopback = asio::ip::make_address("127.0.0.1");

// A listening socket on 127.0.0.1, port chosen by the system.
struct Listener {
  explicit Listener(asio::io_context& io, int backlog = asio::socket_base::max_listen_connections) : acceptor(io) {
    acceptor.open(tcp::v4());
    acceptor.bind({kLoopback, 0});
    acceptor.listen(backlog);
  }
  tcp::endpoint endpoint() const { return acceptor.local_endpoint(); }
  tcp::acceptor acceptor;
};

// A port that is bound but not listening: a connect to it is refused at once.
struct RefusingPort {
  explicit RefusingPort(asio::io_context& io) : socket(io) {
    socket.open(tcp::v4());
    socket.bind({kLoopback, 0});
  }
  tcp::endpoint endpoint() const { return socket.local_endpoint(); }
  tcp::socket socket;
};

// What a callback saw.
struct Outcome {
  int calls = 0;
  bool during_initiation = false;
  error_code ec;
  bool open = false;
  std::optional<tcp::endpoint> remote;
};

// A callback that records into `out`; `initiating` is true while
// async_connect has not returned yet.
auto recorder(Outcome& out, const bool& initiating) {
  return [&out, &initiating](error_code ec, tcp::socket s) {
    ++out.calls;
    out.during_initiation = out.during_initiation || initiating;
    out.ec = ec;
    out.open = s.is_open();
    error_code ignored;
    if (s.is_open()) out.remote = s.remote_endpoint(ignored);
  };
}

// The outcome of an async_connect as a future, through a plain callback
// (Boost 1.81's as_tuple(use_future) does not compile).
std::future<std::pair<error_code, tcp::socket>> connect_future(asio::any_io_executor ex, wheelrpc::timer::Timer& timer,
                                                               const tcp::endpoint& ep,
                                                               std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<std::pair<error_code, tcp::socket>>>();
  auto f = promise->get_future();
  transport::async_connect(std::move(ex), timer, ep, timeout, [promise](error_code ec, tcp::socket s) {
    promise->set_value({ec, std::move(s)});
  });
  return f;
}

TEST(AsyncConnect, ACallbackGetsTheConnectedSocketOnceAndNotInline) {
  asio::io_context io;
  wheelrpc::test::ManualTimer timer;
  Listener listener(io);
  Outcome out;
  bool initiating = true;
  transport::async_connect(io.get_executor(), timer.timer, listener.endpoint(), 1s, recorder(out, initiating));
  initiating = false;
  io.run_for(5s);
  EXPECT_EQ(out.calls, 1);
  EXPECT_FALSE(out.during_initiation);
  EXPECT_FALSE(out.ec) << out.ec.message();
  EXPECT_TRUE(out.open);
  EXPECT_EQ(out.remote, listener.endpoint());
}

TEST(AsyncConnect, ARefusedPortCompletesWithConnectionRefusedAndAClosedSocket) {
  asio::io_context io;
  wheelrpc::test::ManualTimer timer;
  RefusingPort port(io);
  Outcome out;
  bool initiating = true;
  transport::async_connect(io.get_executor(), timer.timer, port.endpoint(), 1s, recorder(out, initiating));
  initiating = false;
  io.run_for(5s);
  EXPECT_EQ(out.calls, 1);
  EXPECT_FALSE(out.during_initiation);
  EXPECT_EQ(out.ec, asio::error::connection_refused) << out.ec.message();
  EXPECT_FALSE(out.open);
}

TEST(AsyncConnect, UseFutureDeliversTheSocketOrThrowsTheError) {
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  wheelrpc::timer::HashedWheelTimer timer;
  Listener listener(io);
  RefusingPort refusing(io);

  std::future<tcp::socket> ok =
      transport::async_connect(io.get_executor(), timer, listener.endpoint(), 2s, asio::use_future);
  std::future<tcp::socket> refused =
      transport::async_connect(io.get_executor(), timer, refusing.endpoint(), 2s, asio::use_future);
  ASSERT_EQ(ok.wait_for(5s), std::future_status::ready);
  ASSERT_EQ(refused.wait_for(5s), std::future_status::ready);
  tcp::socket s = ok.get();
  EXPECT_TRUE(s.is_open());
  EXPECT_EQ(s.remote_endpoint(), listener.endpoint());
  try {
    refused.get();
    ADD_FAILURE() << "a refused connect must throw";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::connection_refused);
  }
  s.close();
  guard.reset();
  io.stop();
  runner.join();
}

TEST(AsyncConnect, UseAwaitableReturnsTheSocketAndAsTupleTheError) {
  asio::io_context io;
  wheelrpc::test::ManualTimer timer;
  Listener listener(io);
  RefusingPort refusing(io);
  bool connected = false;
  error_code refused_ec;
  bool refused_open = true;
  auto fut = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        tcp::socket s =
            co_await transport::async_connect(ex, timer.timer, listener.endpoint(), 1s, asio::use_awaitable);
        connected = s.is_open() && s.remote_endpoint() == listener.endpoint();
        auto [ec, r] = co_await transport::async_connect(ex, timer.timer, refusing.endpoint(), 1s,
                                                         asio::as_tuple(asio::use_awaitable));
        refused_ec = ec;
        refused_open = r.is_open();
      },
      asio::use_future);
  io.run_for(5s);
  ASSERT_EQ(fut.wait_for(0s), std::future_status::ready);
  fut.get();  // rethrows what the coroutine threw
  EXPECT_TRUE(connected);
  EXPECT_EQ(refused_ec, asio::error::connection_refused);
  EXPECT_FALSE(refused_open);
}

// Deterministic: the timeout is run by hand before the io_context runs at
// all, so its close reaches the strand before the connect's completion can.
TEST(AsyncConnect, TheTimeoutCompletesWithConnectTimeoutAndAClosedSocket) {
  asio::io_context io;
  wheelrpc::test::ManualTimer timer;
  Listener listener(io);  // would accept: only the timeout can make this fail
  Outcome out;
  bool initiating = true;
  transport::async_connect(io.get_executor(), timer.timer, listener.endpoint(), 50ms, recorder(out, initiating));
  initiating = false;
  EXPECT_EQ(timer.advance(49ms), 0u) << "the timeout fired early";
  EXPECT_EQ(timer.advance(2ms), 1u);
  io.run_for(5s);
  EXPECT_EQ(out.calls, 1);
  EXPECT_FALSE(out.during_initiation);
  EXPECT_EQ(out.ec, transport::errc::connect_timeout) << out.ec.message();
  EXPECT_FALSE(out.open);
}

TEST(AsyncConnect, AFiredTimeoutAfterTheConnectCompletedChangesNothing) {
  asio::io_context io;
  wheelrpc::test::ManualTimer timer;
  Listener listener(io);
  Outcome out;
  bool initiating = true;
  transport::async_connect(io.get_executor(), timer.timer, listener.endpoint(), 50ms, recorder(out, initiating));
  initiating = false;
  io.run_for(5s);
  ASSERT_EQ(out.calls, 1);
  EXPECT_FALSE(out.ec);
  timer.advance(100ms);  // the timeout runs into an expired weak reference
  io.restart();
  io.run_for(100ms);
  EXPECT_EQ(out.calls, 1);
  EXPECT_FALSE(out.ec);
}

// A real timer against a peer that never answers the handshake: a listener
// whose accept queue is full, so the kernel drops further SYNs. Skipped where
// the kernel answers an overflow with a reset instead.
TEST(AsyncConnect, ARealTimerTimesOutAConnectThatHangs) {
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  wheelrpc::timer::HashedWheelTimer timer;
  Listener listener(io, 0);
  std::vector<tcp::socket> fillers;
  bool full = false;
  for (int i = 0; i < 16 && !full; ++i) {
    // Generous, so that only a full queue (not a slow machine) times a filler out.
    auto f = connect_future(io.get_executor(), timer, listener.endpoint(), 1000ms);
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    auto [ec, s] = f.get();
    if (ec == transport::errc::connect_timeout) {
      full = true;
    } else if (!ec) {
      fillers.push_back(std::move(s));
    } else {
      break;
    }
  }
  if (full) {
    const auto start = std::chrono::steady_clock::now();
    auto f = connect_future(io.get_executor(), timer, listener.endpoint(), 100ms);
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    auto [ec, s] = f.get();
    EXPECT_EQ(ec, transport::errc::connect_timeout) << ec.message();
    EXPECT_FALSE(s.is_open());
    EXPECT_GE(elapsed, 100ms) << "the timeout fired early";
  }
  for (auto& s : fillers) s.close();
  guard.reset();
  io.stop();
  runner.join();
  if (!full) GTEST_SKIP() << "could not fill the accept queue: the kernel does not drop SYNs here";
}

// Deterministic, like the timeout test: the cancellation is emitted before the
// io_context runs, so it reaches the strand first.
TEST(AsyncConnect, ACancellationThroughTheSlotCompletesWithOperationAborted) {
  for (auto type :
       {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
    asio::io_context io;
    wheelrpc::test::ManualTimer timer;
    Listener listener(io);
    asio::cancellation_signal signal;
    Outcome out;
    bool initiating = true;
    transport::async_connect(io.get_executor(), timer.timer, listener.endpoint(), 1s,
                             asio::bind_cancellation_slot(signal.slot(), recorder(out, initiating)));
    initiating = false;
    signal.emit(type);
    io.run_for(5s);
    EXPECT_EQ(out.calls, 1);
    EXPECT_FALSE(out.during_initiation);
    EXPECT_EQ(out.ec, asio::error::operation_aborted) << out.ec.message();
    EXPECT_FALSE(out.open);
    signal.emit(type);  // after completion: harmless
    io.restart();
    io.run_for(50ms);
    EXPECT_EQ(out.calls, 1);
  }
}

TEST(AsyncConnect, TheFirstOfTimeoutAndCancellationDecides) {
  asio::io_context io;
  wheelrpc::test::ManualTimer timer;
  Listener listener(io);
  asio::cancellation_signal signal;
  Outcome out;
  bool initiating = true;
  transport::async_connect(io.get_executor(), timer.timer, listener.endpoint(), 10ms,
                           asio::bind_cancellation_slot(signal.slot(), recorder(out, initiating)));
  initiating = false;
  timer.advance(20ms);
  signal.emit(asio::cancellation_type::terminal);
  io.run_for(5s);
  EXPECT_EQ(out.calls, 1);
  EXPECT_EQ(out.ec, transport::errc::connect_timeout) << out.ec.message();
}

TEST(AsyncConnect, TheHandlerRunsOnItsOwnExecutorWhichIsKeptBusyUntilThen) {
  asio::io_context io;          // runs the socket and the operation's strand
  asio::io_context handler_io;  // the handler's executor: no work of its own
  auto guard = asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  wheelrpc::test::ManualTimer timer;
  Listener listener(io);
  int calls = 0;
  bool on_handler_io = false;
  error_code result;
  transport::async_connect(io.get_executor(), timer.timer, listener.endpoint(), 1s,
                           asio::bind_executor(handler_io, [&](error_code ec, tcp::socket) {
                             ++calls;
                             on_handler_io = handler_io.get_executor().running_in_this_thread();
                             result = ec;
                           }));
  // Without the operation's outstanding work on handler_io, run_for would
  // return at once with nothing run.
  handler_io.run_for(5s);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(on_handler_io);
  EXPECT_FALSE(result) << result.message();
  guard.reset();
  io.stop();
  runner.join();
}

}  // namespace
