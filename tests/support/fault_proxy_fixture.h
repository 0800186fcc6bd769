#pragma once
// The fixture of the FaultProxy tests: an io_context run by two threads, a raw
// echo upstream and a started proxy in front of it, all on 127.0.0.1 port 0.
// TearDown bounds the wait for everything to close on the io threads.

#include <wheelrpc/fault/control_server.h>
#include <wheelrpc/fault/fault_proxy.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include "support/echo_upstream.h"
#include "support/timed_client.h"
#include "support/wait.h"

namespace wheelrpc::test {

inline boost::asio::ip::tcp::endpoint loopback(unsigned short port) {
  return {boost::asio::ip::make_address("127.0.0.1"), port};
}

inline std::chrono::milliseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t);
}

/// Bytes that differ from position to position, so a lost, doubled or
/// reordered chunk shows.
inline std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

class FaultProxyFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      threads_.emplace_back([this] {
        io_.run();
        running_.fetch_sub(1);
      });
    }
    echo_ = std::make_unique<EchoUpstream>(io_.get_executor());
    proxy_ = std::make_unique<fault::FaultProxy>(io_.get_executor(), loopback(0), echo_->endpoint());
    ASSERT_FALSE(proxy_->start());
    ASSERT_NE(proxy_->local_endpoint().port(), 0);
  }

  void TearDown() override {
    control_.reset();
    proxy_.reset();
    if (echo_) echo_->stop();
    echo_.reset();
    work_.reset();
    // Everything closes on the io threads; bounded, then forced.
    if (!wait_until([&] { return running_.load() == 0; }, std::chrono::seconds(5))) io_.stop();
    for (auto& t : threads_) t.join();
  }

  /// A client connected through `proxy` (the fixture's by default).
  std::unique_ptr<TimedClient> connect(fault::FaultProxy* proxy = nullptr) {
    auto c = std::make_unique<TimedClient>();
    const auto ec = c->connect((proxy ? proxy : proxy_.get())->local_endpoint());
    EXPECT_FALSE(ec) << ec.message();
    return c;
  }

  /// Sends `data` and expects it back, intact.
  void expect_echo(TimedClient& c, const std::string& data) {
    ASSERT_FALSE(c.write(data));
    std::string back;
    const auto ec = c.read_exactly(data.size(), back);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(back, data);
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ = boost::asio::make_work_guard(io_);
  std::atomic<int> running_{2};
  std::vector<std::thread> threads_;
  std::unique_ptr<EchoUpstream> echo_;
  std::unique_ptr<fault::FaultProxy> proxy_;
  std::unique_ptr<fault::ControlServer> control_;
};

}  // namespace wheelrpc::test
