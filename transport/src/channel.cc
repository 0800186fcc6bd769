#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/connector.h>

#include <algorithm>
#include <cstring>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/transport/errc.h>

#include "log.h"

namespace wheelrpc::transport {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::atomic<std::uint64_t> g_next_id{1};

struct GlobalCounters {
  std::atomic<std::uint64_t> opened{0}, closed{0}, bad_input{0};
} g_counters;

Channel::Clock::rep now_rep() { return Channel::Clock::now().time_since_epoch().count(); }

}  // namespace

ChannelCounters channel_counters() noexcept {
  ChannelCounters c;
  c.opened = g_counters.opened.load(std::memory_order_relaxed);
  c.closed = g_counters.closed.load(std::memory_order_relaxed);
  c.bad_input = g_counters.bad_input.load(std::memory_order_relaxed);
  return c;
}

std::shared_ptr<Channel> Channel::create(asio::ip::tcp::socket socket,
                                         std::shared_ptr<ChannelHandler> handler,
                                         ChannelOptions options) {
  return std::shared_ptr<Channel>(new Channel(std::move(socket), std::move(handler), options));
}

Channel::Channel(asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler,
                 ChannelOptions options)
    : id_(g_next_id.fetch_add(1, std::memory_order_relaxed)),
      options_(options),
      strand_(asio::make_strand(socket.get_executor())),
      socket_(std::move(socket)),
      handler_(std::move(handler)),
      last_read_(now_rep()),
      last_write_(now_rep()),
      read_buf_(std::max<std::size_t>(options.read_buffer_bytes, kHeaderSize)),
      decoder_(options.max_body) {
  error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  auto remote = socket_.remote_endpoint(ec);
  remote_ = ec ? "?" : endpoint_text(remote);
  auto local = socket_.local_endpoint(ec);
  local_ = ec ? "?" : endpoint_text(local);
  g_counters.opened.fetch_add(1, std::memory_order_relaxed);
}

Channel::~Channel() = default;

Channel::Clock::time_point Channel::last_read() const noexcept {
  return Clock::time_point(Clock::duration(last_read_.load(std::memory_order_relaxed)));
}
Channel::Clock::time_point Channel::last_write() const noexcept {
  return Clock::time_point(Clock::duration(last_write_.load(std::memory_order_relaxed)));
}

std::size_t Channel::queued_bytes() const {
  std::lock_guard lock(write_mu_);
  return queued_.size();
}

void Channel::start() {
  asio::dispatch(strand_, [self = shared_from_this()] { self->do_read(); });
}

void Channel::do_read() {
  if (!is_open()) return;
  // Compact: move the partial frame to the front, and make room for the whole
  // frame when its header said it is bigger than the buffer (the decoder has
  // already checked the size against the limit).
  if (read_begin_ > 0) {
    std::memmove(read_buf_.data(), read_buf_.data() + read_begin_, read_end_ - read_begin_);
    read_end_ -= read_begin_;
    read_begin_ = 0;
  }
  if (decoder_.needed() > read_buf_.size()) read_buf_.resize(decoder_.needed());
  if (read_end_ == read_buf_.size()) read_buf_.resize(read_buf_.size() * 2);
  socket_.async_read_some(
      asio::buffer(read_buf_.data() + read_end_, read_buf_.size() - read_end_),
      asio::bind_executor(strand_, [self = shared_from_this()](const error_code& ec, std::size_t n) {
        self->on_read(ec, n);
      }));
}

void Channel::on_read(const error_code& ec, std::size_t n) {
  if (ec) {
    if (ec == asio::error::eof) {
      do_close(ec, "closed by peer");
    } else if (ec != asio::error::operation_aborted) {
      do_close(ec, "read failed: " + ec.message());
    }
    return;
  }
  last_read_.store(now_rep(), std::memory_order_relaxed);
  read_end_ += n;
  while (is_open()) {
    std::size_t consumed = 0;
    const auto r = decoder_.decode(read_buf_.data() + read_begin_, read_end_ - read_begin_, frame_,
                                   consumed);
    if (r == FrameDecoder::Result::need_more) break;
    if (r == FrameDecoder::Result::error) {
      g_counters.bad_input.fetch_add(1, std::memory_order_relaxed);
      do_close(decoder_.error(), "bad input: " + decoder_.error_message());
      return;
    }
    read_begin_ += consumed;
    if (handler_) handler_->on_frame(*this, frame_);
  }
  if (read_begin_ == read_end_) read_begin_ = read_end_ = 0;
  do_read();
}

error_code Channel::send(const Frame& frame) {
  bool kick = false;
  {
    std::lock_guard lock(write_mu_);
    if (closed_for_write_) return make_error_code(errc::closed);
    if (queued_.size() >= options_.max_write_queue_bytes) return make_error_code(errc::write_queue_full);
    encode_frame(frame, queued_);
    if (!writing_) {
      writing_ = true;
      kick = true;
    }
  }
  // Posted, not dispatched: frames sent while the strand is busy (say, replies
  // to a batch of requests just read) go out together in one write.
  if (kick) asio::post(strand_, [self = shared_from_this()] { self->do_write(); });
  return {};
}

void Channel::do_write() {
  {
    std::lock_guard lock(write_mu_);
    if (closed_for_write_ || queued_.empty()) {
      writing_ = false;
      return;
    }
    std::swap(queued_, inflight_);
    queued_.clear();
  }
  asio::async_write(socket_, asio::buffer(inflight_),
                    asio::bind_executor(strand_, [self = shared_from_this()](
                                                     const error_code& ec, std::size_t n) {
                      self->on_write(ec, n);
                    }));
}

void Channel::on_write(const error_code& ec, std::size_t) {
  if (ec) {
    if (ec != asio::error::operation_aborted) do_close(ec, "write failed: " + ec.message());
    return;
  }
  last_write_.store(now_rep(), std::memory_order_relaxed);
  // Keep a moderate buffer for reuse; drop a huge one.
  if (inflight_.capacity() > (std::size_t{1} << 20)) {
    std::string().swap(inflight_);
  } else {
    inflight_.clear();
  }
  do_write();
}

void Channel::close(error_code ec, std::string reason) {
  asio::dispatch(strand_, [self = shared_from_this(), ec, reason = std::move(reason)] {
    self->do_close(ec, reason);
  });
}

void Channel::do_close(const error_code& ec, const std::string& reason) {
  if (state_.exchange(ChannelState::closed, std::memory_order_acq_rel) == ChannelState::closed) return;
  {
    std::lock_guard lock(write_mu_);
    closed_for_write_ = true;
    queued_.clear();
  }
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  g_counters.closed.fetch_add(1, std::memory_order_relaxed);
  auto log = detail::logger();
  if (ec == errc::closed || ec == asio::error::eof) {
    log->debug("conn={} peer={} closed: {}", id_, remote_, reason);
  } else {
    log->info("conn={} peer={} closed: {} ({})", id_, remote_, reason, ec.message());
  }
  if (auto h = std::move(handler_)) h->on_close(*this, ec, reason);
}

}  // namespace wheelrpc::transport
