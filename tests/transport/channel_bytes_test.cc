// A byte channel's (ChannelOptions::raw) handler, part way through a read,
// writes what it queued so far with Channel::flush_partial: the bytes are on
// the wire before on_data returns, as a frame channel's early flush puts the
// replies to a read's first frames there (the gRPC transports answer a large
// read a slice at a time this way).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/transport/channel.h>

namespace {

namespace asio = boost::asio;
using wheelrpc::transport::Channel;
using wheelrpc::transport::ChannelHandler;
using wheelrpc::transport::ChannelOptions;

/// Answers a read with two halves: the first queued, then flushed (or not),
/// then the second; notes the bytes written when on_data returns.
class Halves : public ChannelHandler {
 public:
  explicit Halves(bool flush) : flush_(flush) {}
  void on_frame(Channel&, wheelrpc::transport::Frame&) override {}
  void on_close(Channel&, const boost::system::error_code&, const std::string&) override {}
  void on_data(Channel& ch, std::string_view) override {
    if (answered_.exchange(true)) return;
    EXPECT_FALSE(ch.send_bytes(std::string(Channel::kEarlyFlushBytes, 'a')));
    if (flush_) ch.flush_partial();
    out_mid_.store(ch.traffic().bytes_out);
    EXPECT_FALSE(ch.send_bytes(std::string(Channel::kEarlyFlushBytes, 'b')));
  }
  std::uint64_t out_mid() const { return out_mid_.load(); }

 private:
  const bool flush_;
  std::atomic<bool> answered_{false};
  std::atomic<std::uint64_t> out_mid_{0};
};

/// The bytes written by the time the handler was half done, and that all
/// of the answer arrives in order.
std::uint64_t written_half_way(bool flush) {
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket peer(io);
  peer.connect(acceptor.local_endpoint());
  asio::ip::tcp::socket accepted(io);
  acceptor.accept(accepted);
  ChannelOptions options;
  options.raw = true;
  auto handler = std::make_shared<Halves>(flush);
  auto channel = Channel::create(std::move(accepted), handler, options);
  std::thread thread([&io] { io.run(); });
  channel->start();
  asio::write(peer, asio::buffer(std::string("go")));
  std::string got(2 * Channel::kEarlyFlushBytes, '\0');
  asio::read(peer, asio::buffer(got));
  EXPECT_EQ(got, std::string(Channel::kEarlyFlushBytes, 'a') + std::string(Channel::kEarlyFlushBytes, 'b'));
  channel->close({}, "test over");
  work.reset();
  thread.join();
  return handler->out_mid();
}

TEST(ChannelBytes, FlushPartialWritesWhatTheHandlerQueuedBeforeItReturns) {
  EXPECT_EQ(written_half_way(true), Channel::kEarlyFlushBytes);
  // Without it, nothing leaves before the handler returns.
  EXPECT_EQ(written_half_way(false), 0u);
}

}  // namespace
