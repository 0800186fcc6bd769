#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/connector.h>

#include <cerrno>
#include <algorithm>
#include <bit>
#include <cassert>
#include <memory>
#include <utility>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/errc.h>

#include "channel_detail.h"
#include "log.h"
#include "read_buffer.h"
#include "tls_stream.h"
#include "write_queue.h"

namespace wheelrpc::transport {
namespace asio = boost::asio;
using boost::system::error_code;
using detail::now_rep;

namespace {

std::atomic<std::uint64_t> g_next_id{1};

struct GlobalCounters {
  std::atomic<std::uint64_t> opened{0}, closed{0}, bad_input{0};
} g_counters;

// The kept read buffer of a channel that just became busy: twice its last
// read, at least this, at most read_buffer_bytes.
constexpr std::size_t kFirstBusyBytes = 1024;

// The plaintext channel delivering a read on this thread (deliver_frames):
// a send() from its handler there is on its strand.
thread_local const Channel* t_delivering = nullptr;

}  // namespace

ChannelCounters channel_counters() noexcept {
  ChannelCounters c;
  c.opened = g_counters.opened.load(std::memory_order_relaxed);
  c.closed = g_counters.closed.load(std::memory_order_relaxed);
  c.bad_input = g_counters.bad_input.load(std::memory_order_relaxed);
  return c;
}

struct Channel::MakeShared final : Channel {
  MakeShared(asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler, ChannelOptions options,
             const TlsContext* tls, const std::string& server_name)
      : Channel(std::move(socket), std::move(handler), options, tls, server_name) {}
};

std::shared_ptr<Channel> Channel::create(asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler,
                                         ChannelOptions options, const TlsContext* tls,
                                         const std::string& server_name) {
  return std::make_shared<MakeShared>(std::move(socket), std::move(handler), options, tls, server_name);
}

Channel::Channel(asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler, ChannelOptions options,
                 const TlsContext* tls, const std::string& server_name)
    : id_(g_next_id.fetch_add(1, std::memory_order_relaxed)),
      options_(options),
      busy_interval_(std::chrono::duration_cast<Clock::duration>(options.busy_read_interval).count()),
      strand_(asio::make_strand(socket.get_executor())),
      socket_(std::move(socket)),
      handler_(std::move(handler)),
      raw_(options.raw),
      last_read_(now_rep()),
      last_write_(now_rep()),
      read_(std::make_unique<detail::ReadBuffer>(options.read_buffer_bytes)),
      decoder_(options.max_body),
      // A TLS channel's frames sent before the handshake is done wait for it
      // (see on_tls_handshake).
      writes_(std::make_unique<detail::WriteQueue>(tls != nullptr)) {
  error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  auto remote = socket_.remote_endpoint(ec);
  remote_ = ec ? "?" : endpoint_text(remote);
  auto local = socket_.local_endpoint(ec);
  local_ = ec ? "?" : endpoint_text(local);
  if (tls) {
    tls_ = std::make_unique<Tls>(*tls, socket_);
    detail::prepare_tls(*tls_, tls->role(), server_name, remote, options.raw);
  }
  g_counters.opened.fetch_add(1, std::memory_order_relaxed);
}

Channel::~Channel() = default;

error_code Channel::set_user_timeout(std::chrono::milliseconds timeout) {
#ifdef TCP_USER_TIMEOUT
  if (timeout.count() <= 0) return asio::error::invalid_argument;
  const auto ms = static_cast<unsigned int>(std::min<std::int64_t>(timeout.count(), 0x7fffffff));
  if (::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) != 0) {
    return {errno, boost::system::system_category()};
  }
  return {};
#else
  (void)timeout;
  return asio::error::operation_not_supported;
#endif
}

std::chrono::milliseconds Channel::user_timeout() const {
#ifdef TCP_USER_TIMEOUT
  unsigned int ms = 0;
  socklen_t len = sizeof ms;
  // On the strand (the doc): close() runs there, so the descriptor is the socket's.
  if (::getsockopt(const_cast<asio::ip::tcp::socket&>(socket_).native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &ms,
                   &len) != 0) {
    return std::chrono::milliseconds{0};
  }
  return std::chrono::milliseconds{ms};
#else
  return std::chrono::milliseconds{0};
#endif
}

Channel::Clock::time_point Channel::last_read() const noexcept {
  return Clock::time_point(Clock::duration(last_read_.load(std::memory_order_relaxed)));
}
Channel::Clock::time_point Channel::last_write() const noexcept {
  return Clock::time_point(Clock::duration(last_write_.load(std::memory_order_relaxed)));
}

ChannelTraffic Channel::traffic() const noexcept {
  ChannelTraffic t;
  t.bytes_in = read_->bytes_in();
  t.bytes_out = writes_->bytes_out();
  t.frames_in = read_->frames_in();
  t.frames_out = writes_->frames_out();
  t.heartbeats_sent = heartbeats_sent_.load(std::memory_order_relaxed);
  return t;
}

std::size_t Channel::queued_bytes() const { return writes_->queued_bytes(); }

ChannelBufferStats Channel::buffer_stats() const {
  ChannelBufferStats stats;
  stats.read_capacity = read_->capacity_stat();
  stats.read_pending = read_->pending_stat();
  stats.reads = read_->reads();
  stats.write_capacity = writes_->heap_capacity();
  return stats;
}

void Channel::start() {
  asio::dispatch(strand_, [self = shared_from_this()] {
    if (!self->tls_) {
      self->do_read();
    } else if (self->tls_->ctx.role() == TlsRole::server) {
      self->do_tls_peek();
    } else {
      self->do_tls_handshake();
    }
  });
}

void Channel::do_read() {
  assert(strand_.running_in_this_thread());
  if (!is_open()) {
    read_->release();
    return;
  }
  read_->prepare(decoder_.needed());
  offered_ = read_->room();
  // A buffer that ends where the partial frame does is expected to fill up;
  // only one with room past the frame says, when full, that more is waiting.
  full_means_more_ = read_->capacity() > decoder_.needed();
  auto buffer = asio::buffer(read_->tail(), offered_);
  auto done = asio::bind_executor(
      strand_, [self = shared_from_this()](const error_code& ec, std::size_t n) { self->on_read(ec, n); });
  if (tls_) {
    tls_->stream.async_read_some(buffer, std::move(done));
  } else {
    socket_.async_read_some(buffer, std::move(done));
  }
}

void Channel::on_read(const error_code& ec, std::size_t n) {
  assert(strand_.running_in_this_thread());
  if (ec) {
    // The peer answered with a TLS record shorter than a frame header (a
    // TLS server's alert to a plaintext client) and closed.
    std::string tls_reason;
    if (!tls_ && read_->frames_in() == 0) {
      tls_reason = detail::tls_record_reason(read_->pending(), read_->pending_size());
    }
    read_->release();
    if (!tls_reason.empty() && ec != asio::error::operation_aborted) {
      do_close(make_error_code(errc::tls_required), tls_reason);
    } else if (ec == asio::error::eof) {
      do_close(ec, "closed by peer");
    } else if (ec != asio::error::operation_aborted && tls_ && is_open()) {
      // After the handshake (TLS 1.3 tells a client its certificate was
      // refused here), or the peer closing without a close_notify.
      auto failure = detail::describe_tls_failure(ec, *tls_, tls_->ctx.role(), false);
      do_close(failure.ec, failure.reason == "closed by peer" ? failure.reason : "read failed: " + failure.reason);
    } else if (ec != asio::error::operation_aborted) {
      do_close(ec, "read failed: " + ec.message());
    }
    return;
  }
  const Clock::rep now = now_rep();
  last_read_.store(now, std::memory_order_relaxed);
  // A read that starts a frame decides whether the channel is busy; reads
  // that continue a frame (the rest of a large one, a header split in two)
  // say nothing about the traffic and keep that decision.
  const bool starts_frame = read_->unused();
  if (starts_frame) {
    quiet_ = !read_before_ || now - last_frame_start_ >= busy_interval_;
    last_frame_start_ = now;
    read_before_ = true;
  }
  const bool full = n == offered_ && full_means_more_;
  const std::size_t capacity = read_->capacity();
  read_->filled(n);
  if (!deliver_frames() || !flush_delivered()) return;
  // A full buffer says more bytes are waiting, unless a frame too large for
  // it explains why it is full (a HELLO over the inline bytes, a large frame:
  // their buffer is sized to them, the channel is not busy for that).
  const bool more_waiting = full && !(read_->pending_size() > 0 && decoder_.needed() > capacity);
  read_->rewind_if_consumed();

  // How the next read is buffered ("Memory" in channel.h).
  const auto first_busy = [&] { return std::min(std::max(std::bit_ceil(2 * n), kFirstBusyBytes), read_->max_kept()); };
  const std::size_t busy = read_->busy_bytes();
  if (more_waiting) {
    read_->set_busy_bytes(busy == 0 ? first_busy() : std::min(2 * busy, read_->max_kept()));
  } else if (starts_frame) {
    if (quiet_) {
      read_->set_busy_bytes(0);
    } else if (busy == 0) {
      read_->set_busy_bytes(first_busy());
    }
  }
  if (quiet_ && !more_waiting && read_->unused()) trim_idle();
  do_read();
  // After a read whose handlers sent frames, one write check is posted, as a
  // send() from another thread posts one: the io_context then polls its
  // sockets once more before it sleeps, and the peer's answer to what was
  // just sent often arrives within that pass. Without it the thread blocks
  // in epoll_wait at once and pays a sleep and wake-up far more often
  // (docs/benchmarks-log.md, "Fewer locked instructions per request").
  // Not after a read that came after a quiet spell (a heartbeat and its
  // answer, a lone call): nothing follows it soon, and on plaintext the
  // read's flush wrote what it sent already (TLS writes only from here).
  if (strand_sent_) {
    strand_sent_ = false;
    if (tls_ || !quiet_) asio::post(strand_, [self = shared_from_this()] { self->do_write(); });
  }
}

bool Channel::deliver_frames() {
  assert(strand_.running_in_this_thread());
  if (!raw_.load(std::memory_order_relaxed) && options_.accept_http2 && read_->frames_in() == 0) {
    switch (sniff_http2()) {
      case 2: return true;   // a partial preface: read on
      case 3: return false;  // closed
      default: break;
    }
  }
  if (raw_.load(std::memory_order_relaxed)) return deliver_bytes();
  frames_since_flush_ = 0;
  // Held for the whole batch (one count, not one per frame): a frame's
  // handler may close the channel, which lets go of handler_.
  const std::shared_ptr<ChannelHandler> handler = handler_;
  struct Delivering {
    Channel& self;
    ChannelHandler* handler;
    const Channel* outer;
    bool any = false;  // a frame was handed over: the batch ends with on_frames_delivered
    Delivering(Channel& c, ChannelHandler* h)
        : self(c), handler(h), outer(std::exchange(t_delivering, c.tls_ ? nullptr : &c)) {}
    ~Delivering() {
      t_delivering = outer;
      if (any) handler->on_frames_delivered(self);
    }
  } delivering(*this, handler.get());
  while (is_open() && !paused_.load(std::memory_order_relaxed)) {
    std::size_t consumed = 0;
    const auto r = decoder_.decode(read_->pending(), read_->pending_size(), frame_, consumed);
    if (r == FrameDecoder::Result::need_more) break;
    if (r == FrameDecoder::Result::error) {
      g_counters.bad_input.fetch_add(1, std::memory_order_relaxed);
      // A TLS record as the first bytes of a plaintext connection: the ends
      // disagree on TLS, which the reason says (and a TLS client is answered
      // with bytes that are no TLS record, so it fails at once too).
      if (read_->frames_in() == 0 && !tls_) {
        auto tls_reason = detail::tls_record_reason(read_->pending(), read_->pending_size());
        if (!tls_reason.empty()) {
          const bool tls_client = read_->pending()[0] == detail::kTlsHandshakeRecord;
          if (tls_client) {
            Frame notice;
            notice.header.flags = kFlagEvent;
            notice.attachments.emplace_back("error", "this port speaks plaintext wheelrpc, not TLS");
            std::string bytes;
            encode_frame(notice, bytes);
            drain_now();  // the rest of its ClientHello: a close with unread bytes would be a reset
            write_now(bytes);
          }
          do_close(make_error_code(tls_client ? errc::tls_not_spoken : errc::tls_required), tls_reason);
          break;
        }
      }
      do_close(decoder_.error(), "bad input: " + decoder_.error_message());
      break;
    }
    read_->consume_frame(consumed);
    if (handler) {
      delivering.any = true;
      handler->on_frame(*this, frame_);
    }
    if (++frames_since_flush_ >= kEarlyFlushFrames) {
      frames_since_flush_ = 0;
      if (read_->pending_size() > 0) flush_early(kEarlyFlushBytes);  // more frames to handle in this read
    }
    // The frame is reused; a large payload the handler left in it is not kept.
    if (frame_.payload.capacity() > read_->max_kept()) std::string().swap(frame_.payload);
  }
  if (!is_open()) {  // closed by the handler or for bad input
    read_->release();
    return false;
  }
  if (paused_.load(std::memory_order_relaxed)) {
    if (!flush_delivered()) return false;  // the replies its frames queued go out now, not at the resume
    // What is left in the buffer waits for the resume. No read is pending to
    // keep the channel alive meanwhile: it keeps itself, until the resume or
    // its close.
    parked_ = true;
    if (!park_) park_ = std::make_unique<asio::steady_timer>(strand_);
    park_->expires_at(asio::steady_timer::time_point::max());
    park_->async_wait([self = shared_from_this()](const error_code&) {});
    return false;
  }
  return true;
}

namespace {
constexpr std::string_view kHttp2Preface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
}  // namespace

int Channel::sniff_http2() {
  const std::size_t n = std::min(read_->pending_size(), kHttp2Preface.size());
  if (n == 0) return 2;
  if (std::string_view(reinterpret_cast<const char*>(read_->pending()), n) != kHttp2Preface.substr(0, n)) return 1;
  if (n < kHttp2Preface.size()) return 2;
  return switch_to_http2("the HTTP/2 client preface") ? 0 : 3;
}

bool Channel::switch_to_http2(const char* why) {
  assert(strand_.running_in_this_thread());
  const std::shared_ptr<ChannelHandler> old = handler_;
  std::shared_ptr<ChannelHandler> next = old ? old->on_http2(*this) : nullptr;
  if (!next) {
    g_counters.bad_input.fetch_add(1, std::memory_order_relaxed);
    do_close(make_error_code(errc::protocol_error), fmt::format("{}, and this port serves no HTTP/2", why));
    read_->release();
    return false;
  }
  detail::logger()->debug("conn={} peer={} HTTP/2 ({})", id_, remote_, why);
  handler_ = std::move(next);
  raw_.store(true, std::memory_order_release);
  return true;
}

bool Channel::deliver_bytes() {
  const std::shared_ptr<ChannelHandler> handler = handler_;
  const std::size_t n = read_->pending_size();
  if (handler && n > 0) {
    const Channel* outer = std::exchange(t_delivering, tls_ ? nullptr : this);
    handler->on_data(*this, std::string_view(reinterpret_cast<const char*>(read_->pending()), n));
    t_delivering = outer;
    read_->consume_frame(n);
    handler->on_frames_delivered(*this);
  } else {
    read_->consume_frame(n);
  }
  if (!is_open()) {
    read_->release();
    return false;
  }
  return true;
}

bool Channel::flush_delivered() {
  flush_early(0);
  if (is_open()) return true;
  read_->release();  // the flush ended a graceful close
  return false;
}

void Channel::pause_reading() noexcept {
  assert(strand_.running_in_this_thread());
  paused_.store(true, std::memory_order_release);
}

void Channel::resume_reading() {
  asio::post(strand_, [self = shared_from_this()] { self->on_resume(); });
}

void Channel::on_resume() {
  assert(strand_.running_in_this_thread());
  if (!paused_.load(std::memory_order_relaxed)) return;
  if (handler_ && handler_->keep_paused(*this)) return;  // paused again since this resume was asked
  // The pause was ours, not the peer's silence: the channel counts as having
  // read now. Stored before the flag clears, so an idle check that sees the
  // channel reading again also sees this time, and does not close a channel
  // the moment a long pause ends.
  last_read_.store(now_rep(), std::memory_order_relaxed);
  paused_.store(false, std::memory_order_release);
  if (!parked_) return;  // paused and resumed within one delivery: the read goes on as usual
  parked_ = false;
  const auto keep = shared_from_this();
  park_->cancel();  // its wait lets go of the channel
  if (!is_open()) return;
  if (!deliver_frames() || !flush_delivered()) return;
  read_->rewind_if_consumed();
  do_read();
}

void Channel::trim_idle() {
  frame_ = Frame{};
  writes_->trim_idle();
}

void Channel::send_heartbeat() {
  assert(strand_.running_in_this_thread());
  if (!handler_ || !is_open()) return;
  // On the strand already: the write a frame send needs started is started
  // here, not posted for a second turn through the strand.
  const auto outer = std::exchange(detail::t_inline_kick, detail::InlineKick{this, false});
  bool sent = false;
  try {
    sent = handler_->send_heartbeat(*this);
  } catch (...) {
    const bool kicked = detail::t_inline_kick.kicked;
    detail::t_inline_kick = outer;
    if (kicked) do_write();
    throw;
  }
  const bool kicked = detail::t_inline_kick.kicked;
  detail::t_inline_kick = outer;
  if (sent) note_heartbeat_sent();
  if (kicked) do_write();
}

bool Channel::delivering_here() const noexcept { return t_delivering == this; }

void Channel::recycle(std::string&& bytes) noexcept {
  assert(strand_.running_in_this_thread());
  if (!frame_.payload.empty() || frame_.payload.capacity() >= bytes.capacity() ||
      bytes.capacity() > kMaxRecycledBytes) {
    return;
  }
  bytes.clear();
  frame_.payload.swap(bytes);
}

void Channel::close(error_code ec, std::string reason) {
  asio::dispatch(strand_, [self = shared_from_this(), ec, reason = std::move(reason)] { self->do_close(ec, reason); });
}

void Channel::do_close(const error_code& ec, const std::string& reason) {
  if (state_.exchange(ChannelState::closed, std::memory_order_acq_rel) == ChannelState::closed) return;
  if (park_) park_->cancel();  // a paused channel no longer keeps itself
  if (pending_close_) {        // closed before the flush: the limit's wait must not keep the channel
    if (pending_close_->limit) pending_close_->limit->cancel();
    pending_close_.reset();
  }
  writes_->close();
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  g_counters.closed.fetch_add(1, std::memory_order_relaxed);
  auto log = detail::logger();
  // A TLS channel closed by its owner before its handshake ended says so
  // (e.g. a connect or HELLO timeout spent in the handshake).
  const bool in_handshake = tls_ && tls_->handshaking && ec != errc::tls_handshake_failed &&
                            ec != errc::tls_not_spoken && ec != errc::tls_required;
  const std::string& why = in_handshake ? reason + " (during the TLS handshake)" : reason;
  if (ec == errc::closed || ec == asio::error::eof) {
    log->debug("conn={} peer={} closed: {}", id_, remote_, why);
  } else if (ec == errc::tls_handshake_failed || ec == errc::tls_not_spoken || ec == errc::tls_required) {
    log->warn("conn={} peer={} closed: {}", id_, remote_, why);  // a misconfigured end: the operator's business
  } else {
    log->info("conn={} peer={} closed: {} ({})", id_, remote_, why, ec.message());
  }
  if (auto h = std::move(handler_)) h->on_close(*this, ec, why);
}

}  // namespace wheelrpc::transport
