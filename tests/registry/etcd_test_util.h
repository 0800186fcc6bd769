#pragma once
// Shared by the registry tests: an io_context on its own thread with the
// shared timer, and a bounded wait for one completion.

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/timer/hashed_wheel_timer.h>

namespace wheelrpc::test {

struct IoThread {
  wheelrpc::timer::HashedWheelTimer timer{std::chrono::milliseconds(5)};
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
  std::thread thread{[this] { io.run(); }};

  ~IoThread() {
    timer.stop();  // no deadline task may post into the io_context once it is gone
    guard.reset();
    io.stop();
    thread.join();
  }
};

/// Starts an operation with a handler `void(error_code, R)` and waits for it up
/// to `limit`; a missing completion is reported as timed_out (and fails the test
/// through the caller's assertion).
template <class R, class Start>
std::pair<boost::system::error_code, R> await(Start&& start,
                                              std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto p = std::make_shared<std::promise<std::pair<boost::system::error_code, R>>>();
  auto f = p->get_future();
  start([p](boost::system::error_code ec, R r) { p->set_value({ec, std::move(r)}); });
  if (f.wait_for(limit) != std::future_status::ready) return {boost::asio::error::timed_out, R{}};
  return f.get();
}

}  // namespace wheelrpc::test
