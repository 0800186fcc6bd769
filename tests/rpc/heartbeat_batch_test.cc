// HeartbeatTimerTask's sends, batched: the heartbeats that one tick's tasks
// decide on go to their channels' executor as one job, which enters each
// channel's strand and sends there; a task cancelled before its batch is
// flushed sends nothing. A manual timer drives the ticks; the io_context is
// polled by hand, so the test sees how many jobs were posted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/transport/channel.h>

#include "base/channel_timer_task.h"

#include "support/manual_timer.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::ChannelProvider;
using wheelrpc::rpc::HeartbeatTimerTask;
using wheelrpc::rpc::WatchedChannel;
using wheelrpc::test::ManualTimer;
using wheelrpc::transport::Channel;

namespace {

namespace asio = boost::asio;

// Counts heartbeats (a byte channel's protocol heartbeat: nothing written).
class CountingHandler final : public wheelrpc::transport::ChannelHandler {
 public:
  void on_frame(Channel&, wheelrpc::transport::Frame&) override {}
  void on_close(Channel&, const boost::system::error_code&, const std::string&) override {}
  bool send_heartbeat(Channel& ch) override {
    EXPECT_TRUE(ch.strand().running_in_this_thread());
    sent.fetch_add(1);
    return true;
  }
  std::atomic<int> sent{0};
};

// Connected channels on `io` (not started: nothing reads).
struct Channels {
  explicit Channels(asio::io_context& io, int n) : acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}) {
    for (int i = 0; i < n; ++i) {
      peers.emplace_back(io).connect(acceptor.local_endpoint());
      asio::ip::tcp::socket accepted(io);
      acceptor.accept(accepted);
      channels.push_back(Channel::create(std::move(accepted), handler));
    }
  }
  asio::ip::tcp::acceptor acceptor;
  std::vector<asio::ip::tcp::socket> peers;
  std::shared_ptr<CountingHandler> handler = std::make_shared<CountingHandler>();
  std::vector<std::shared_ptr<Channel>> channels;
};

ChannelProvider watching(std::shared_ptr<Channel> ch) {
  return [ch](std::vector<WatchedChannel>& out) {
    WatchedChannel w;
    w.channel = ch;
    w.heartbeat = 1ms;
    out.push_back(std::move(w));
    return true;
  };
}

// Real time for the channels' idleness (their clocks are the steady
// clock's), not for the timer, which the test drives.
void let_channels_go_idle() { std::this_thread::sleep_for(5ms); }

TEST(HeartbeatBatch, OneTicksHeartbeatsGoToTheExecutorAsOneJob) {
  asio::io_context io;
  Channels c(io, 3);
  ManualTimer mt;
  std::vector<std::shared_ptr<HeartbeatTimerTask>> tasks;
  for (auto& ch : c.channels) {
    tasks.push_back(std::make_shared<HeartbeatTimerTask>(watching(ch), 10ms));
    tasks.back()->start(mt.timer);
  }
  let_channels_go_idle();
  mt.advance(10ms);  // the three first runs: one tick, one batch
  for (auto& t : tasks) EXPECT_EQ(t->heartbeats_sent(), 1u);
  EXPECT_EQ(c.handler->sent.load(), 0) << "the timer's worker only decides";
  EXPECT_EQ(io.poll_one(), 1u);
  EXPECT_EQ(c.handler->sent.load(), 3) << "one job sent all three, each on its strand";
  EXPECT_EQ(io.poll(), 0u) << "nothing else was posted";
  for (auto& t : tasks) t->cancel();
}

TEST(HeartbeatBatch, ATaskCancelledBeforeItsBatchIsFlushedSendsNothing) {
  asio::io_context io;
  Channels c(io, 2);
  ManualTimer mt;
  auto kept = std::make_shared<HeartbeatTimerTask>(watching(c.channels[0]), 10ms);
  auto cancelled = std::make_shared<HeartbeatTimerTask>(watching(c.channels[1]), 10ms);
  kept->start(mt.timer);
  cancelled->start(mt.timer);
  // Runs in the same tick, after the tasks' checks or before them.
  mt.timer.new_timeout([&cancelled] { cancelled->cancel(); }, 10ms);
  let_channels_go_idle();
  mt.advance(10ms);
  EXPECT_TRUE(cancelled->cancelled());
  io.poll();
  EXPECT_EQ(c.handler->sent.load(), 1) << "only the task still running sent";
  kept->cancel();
}

}  // namespace
