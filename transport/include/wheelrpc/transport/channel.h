#pragma once
/// Channel: one TCP connection carrying frames, on its own strand.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/transport/channel_options.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::transport {

enum class ChannelState : std::uint8_t { ready, closed };

class Channel;

/// Receives a channel's events. Every call runs on the channel's strand.
class ChannelHandler {
 public:
  virtual ~ChannelHandler() = default;
  /// A decoded frame; the handler may move from it.
  virtual void on_frame(Channel& channel, Frame& frame) = 0;
  /// The channel closed: locally (`close()`), by the peer (end of stream), on an
  /// I/O error, or on bad input. Called exactly once; no on_frame follows.
  virtual void on_close(Channel& channel, const boost::system::error_code& ec,
                        const std::string& reason) = 0;
};

/// Counters of every channel in the process (monotonic).
struct ChannelCounters {
  std::uint64_t opened = 0;
  std::uint64_t closed = 0;
  std::uint64_t bad_input = 0;  ///< closed because of undecodable input
};
ChannelCounters channel_counters() noexcept;

/// A connected socket that reads and decodes frames and writes encoded frames
/// in batches (one write in flight, everything queued meanwhile goes out in the
/// next one). Created by Acceptor or Connector users via `create()`.
///
/// Thread-safety: `send`, `close` and the getters are safe from any thread;
/// the handler runs on the channel's strand, where all state changes happen.
class Channel : public std::enable_shared_from_this<Channel> {
 public:
  using Clock = std::chrono::steady_clock;

  /// Takes a connected socket; sets TCP_NODELAY. Call `start()` to begin reading.
  static std::shared_ptr<Channel> create(boost::asio::ip::tcp::socket socket,
                                         std::shared_ptr<ChannelHandler> handler,
                                         ChannelOptions options = {});
  ~Channel();

  /// Starts the read loop (on the strand). Call once.
  void start();

  /// Queues `frame` for writing. Fails with errc::closed once closed and with
  /// errc::write_queue_full when the queue is over its limit (the frame is not
  /// queued). Any thread.
  boost::system::error_code send(const Frame& frame);

  /// Closes the channel with a reason (logged, passed to on_close). Idempotent;
  /// any thread; the close itself happens on the strand.
  void close(boost::system::error_code ec, std::string reason);

  ChannelState state() const noexcept { return state_.load(std::memory_order_acquire); }
  bool is_open() const noexcept { return state() != ChannelState::closed; }
  /// Process-unique id, for logs ("conn={}").
  std::uint64_t id() const noexcept { return id_; }
  /// "ip:port" of the peer and of this end, captured at creation.
  const std::string& remote() const noexcept { return remote_; }
  const std::string& local() const noexcept { return local_; }
  /// When bytes were last read from / written to the socket.
  Clock::time_point last_read() const noexcept;
  Clock::time_point last_write() const noexcept;
  /// Bytes queued and not yet handed to the socket.
  std::size_t queued_bytes() const;

  const boost::asio::strand<boost::asio::any_io_executor>& strand() const noexcept { return strand_; }

 private:
  Channel(boost::asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler,
          ChannelOptions options);
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void do_write();
  void on_write(const boost::system::error_code& ec, std::size_t n);
  void do_close(const boost::system::error_code& ec, const std::string& reason);

  const std::uint64_t id_;
  const ChannelOptions options_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<ChannelHandler> handler_;  // strand only; reset after on_close
  std::string remote_, local_;
  std::atomic<ChannelState> state_{ChannelState::ready};
  std::atomic<Clock::rep> last_read_, last_write_;

  // Reading (strand only).
  std::vector<std::uint8_t> read_buf_;
  std::size_t read_begin_ = 0, read_end_ = 0;
  FrameDecoder decoder_;
  Frame frame_;

  // Writing: frames are encoded straight into queued_ by any thread; the strand
  // swaps it with inflight_ and writes that.
  mutable std::mutex write_mu_;
  std::string queued_;
  bool writing_ = false;
  bool closed_for_write_ = false;
  std::string inflight_;  // strand only
};

}  // namespace wheelrpc::transport
