#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/connector.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <memory>
#include <utility>
#include <sys/socket.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/errc.h>

#include "log.h"
#include "tls_stream.h"

namespace wheelrpc::transport {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::atomic<std::uint64_t> g_next_id{1};

struct GlobalCounters {
  std::atomic<std::uint64_t> opened{0}, closed{0}, bad_input{0};
} g_counters;

// The timer's cheap steady clock: one read per read and per write completion.
Channel::Clock::rep now_rep() { return timer::fast_steady_now().time_since_epoch().count(); }

// The kept read buffer of a channel that just became busy: twice its last
// read, at least this, at most read_buffer_bytes.
constexpr std::size_t kFirstBusyBytes = 1024;
// A written buffer larger than this is given back as soon as its write completes.
constexpr std::size_t kMaxKeptInflightBytes = std::size_t{1} << 20;

const std::size_t kSmallStringCapacity = std::string().capacity();

// Heap bytes behind a string: 0 while it fits in its small-string buffer.
std::size_t heap_bytes(const std::string& s) noexcept {
  return s.capacity() > kSmallStringCapacity ? s.capacity() + 1 : 0;
}

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

std::shared_ptr<Channel> Channel::create(asio::ip::tcp::socket socket,
                                         std::shared_ptr<ChannelHandler> handler,
                                         ChannelOptions options, const TlsContext* tls,
                                         const std::string& server_name) {
  return std::make_shared<MakeShared>(std::move(socket), std::move(handler), options, tls, server_name);
}

Channel::Channel(asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler,
                 ChannelOptions options, const TlsContext* tls, const std::string& server_name)
    : id_(g_next_id.fetch_add(1, std::memory_order_relaxed)),
      options_(options),
      max_kept_read_(std::max(options.read_buffer_bytes, kInlineReadBytes)),
      busy_interval_(std::chrono::duration_cast<Clock::duration>(options.busy_read_interval).count()),
      strand_(asio::make_strand(socket.get_executor())),
      socket_(std::move(socket)),
      handler_(std::move(handler)),
      last_read_(now_rep()),
      last_write_(now_rep()),
      decoder_(options.max_body) {
  error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  auto remote = socket_.remote_endpoint(ec);
  remote_ = ec ? "?" : endpoint_text(remote);
  auto local = socket_.local_endpoint(ec);
  local_ = ec ? "?" : endpoint_text(local);
  if (tls) {
    tls_ = std::make_unique<Tls>(*tls, socket_);
    detail::prepare_tls(*tls_, tls->role(), server_name, remote);
    writing_ = true;  // frames sent before the handshake is done wait for it (see on_tls_handshake)
  }
  g_counters.opened.fetch_add(1, std::memory_order_relaxed);
}

struct Channel::PendingClose {
  error_code ec;
  std::string reason;
  std::unique_ptr<asio::steady_timer> limit;
};

Channel::~Channel() = default;

Channel::Clock::time_point Channel::last_read() const noexcept {
  return Clock::time_point(Clock::duration(last_read_.load(std::memory_order_relaxed)));
}
Channel::Clock::time_point Channel::last_write() const noexcept {
  return Clock::time_point(Clock::duration(last_write_.load(std::memory_order_relaxed)));
}

ChannelTraffic Channel::traffic() const noexcept {
  ChannelTraffic t;
  t.bytes_in = bytes_in_.load(std::memory_order_relaxed);
  t.bytes_out = bytes_out_.load(std::memory_order_relaxed);
  t.frames_in = frames_in_.load(std::memory_order_relaxed);
  t.frames_out = frames_out_.load(std::memory_order_relaxed) + strand_frames_out_.load(std::memory_order_relaxed);
  t.heartbeats_sent = heartbeats_sent_.load(std::memory_order_relaxed);
  return t;
}

std::size_t Channel::queued_bytes() const {
  std::lock_guard lock(write_mu_);
  return queued_.size() + strand_queued_bytes_.load(std::memory_order_relaxed);
}

ChannelBufferStats Channel::buffer_stats() const {
  ChannelBufferStats stats;
  stats.read_capacity = read_capacity_stat_.load(std::memory_order_relaxed);
  stats.read_pending = read_pending_stat_.load(std::memory_order_relaxed);
  stats.reads = reads_stat_.load(std::memory_order_relaxed);
  std::size_t queued = 0;
  {
    std::lock_guard lock(write_mu_);
    queued = heap_bytes(queued_);
  }
  queued += strand_capacity_stat_.load(std::memory_order_relaxed);
  stats.write_capacity = queued + inflight_capacity_stat_.load(std::memory_order_relaxed);
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
    release_read_buffer();
    return;
  }
  prepare_read_buffer();
  const std::size_t capacity = heap_ ? heap_capacity_ : kInlineReadBytes;
  offered_ = capacity - read_end_;
  // A buffer that ends where the partial frame does is expected to fill up;
  // only one with room past the frame says, when full, that more is waiting.
  full_means_more_ = capacity > decoder_.needed();
  auto buffer = asio::buffer(read_data() + read_end_, offered_);
  auto done = asio::bind_executor(strand_, [self = shared_from_this()](const error_code& ec, std::size_t n) {
    self->on_read(ec, n);
  });
  if (tls_) {
    tls_->stream.async_read_some(buffer, std::move(done));
  } else {
    socket_.async_read_some(buffer, std::move(done));
  }
}

void Channel::prepare_read_buffer() {
  const std::size_t have = read_end_ - read_begin_;
  // What the next read wants room for: the kept buffer of a busy channel, and
  // the rest of a partial frame. The decoder has checked the frame's size
  // against max_body already; the buffer grows with what has arrived (at most
  // doubling), so a header alone cannot make us allocate its whole body.
  std::size_t want = busy_bytes_;
  if (decoder_.needed() > have) {
    want = std::max(want, std::min(decoder_.needed(), std::max(2 * have, max_kept_read_)));
  }
  const std::uint8_t* from = read_data() + read_begin_;
  if (busy_bytes_ == 0 && want <= kInlineReadBytes) {
    if (heap_) {
      std::memcpy(inline_, from, have);
      heap_.reset();
      heap_capacity_ = 0;
    } else if (read_begin_ > 0) {
      std::memmove(inline_, from, have);
    }
  } else if (!heap_ || heap_capacity_ < want || heap_capacity_ > std::max(want, max_kept_read_)) {
    // Grow, move off the inline bytes, or give back what a large frame needed.
    auto buf = std::make_unique_for_overwrite<std::uint8_t[]>(want);
    std::memcpy(buf.get(), from, have);
    heap_ = std::move(buf);
    heap_capacity_ = want;
  } else if (read_begin_ > 0) {
    std::memmove(heap_.get(), from, have);
  }
  read_begin_ = 0;
  read_end_ = have;
  read_capacity_stat_.store(heap_capacity_, std::memory_order_relaxed);
  read_pending_stat_.store(have, std::memory_order_relaxed);
}

void Channel::release_read_buffer() noexcept {
  heap_.reset();
  heap_capacity_ = 0;
  read_begin_ = read_end_ = 0;
  busy_bytes_ = 0;
  read_capacity_stat_.store(0, std::memory_order_relaxed);
  read_pending_stat_.store(0, std::memory_order_relaxed);
}

void Channel::on_read(const error_code& ec, std::size_t n) {
  assert(strand_.running_in_this_thread());
  if (ec) {
    // The peer answered with a TLS record shorter than a frame header (a
    // TLS server's alert to a plaintext client) and closed.
    std::string tls_reason;
    if (!tls_ && frames_in_.load(std::memory_order_relaxed) == 0) {
      tls_reason = detail::tls_record_reason(read_data() + read_begin_, read_end_ - read_begin_);
    }
    release_read_buffer();
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
  const bool starts_frame = read_end_ == 0;
  if (starts_frame) {
    quiet_ = !read_before_ || now - last_frame_start_ >= busy_interval_;
    last_frame_start_ = now;
    read_before_ = true;
  }
  const bool full = n == offered_ && full_means_more_;
  const std::size_t capacity = heap_ ? heap_capacity_ : kInlineReadBytes;
  reads_stat_.store(reads_stat_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  bytes_in_.store(bytes_in_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  read_end_ += n;
  if (!deliver_frames() || !flush_delivered()) return;
  // A full buffer says more bytes are waiting, unless a frame too large for
  // it explains why it is full (a HELLO over the inline bytes, a large frame:
  // their buffer is sized to them, the channel is not busy for that).
  const bool more_waiting = full && !(read_end_ > read_begin_ && decoder_.needed() > capacity);
  if (read_begin_ == read_end_) read_begin_ = read_end_ = 0;

  // How the next read is buffered ("Memory" in channel.h).
  const auto first_busy = [&] {
    return std::min(std::max(std::bit_ceil(2 * n), kFirstBusyBytes), max_kept_read_);
  };
  if (more_waiting) {
    busy_bytes_ = busy_bytes_ == 0 ? first_busy() : std::min(2 * busy_bytes_, max_kept_read_);
  } else if (starts_frame) {
    if (quiet_) {
      busy_bytes_ = 0;
    } else if (busy_bytes_ == 0) {
      busy_bytes_ = first_busy();
    }
  }
  if (quiet_ && !more_waiting && read_end_ == 0) trim_idle();
  do_read();
  // After a read whose handlers sent frames, one write check is posted, as a
  // send() from another thread posts one: the io_context then polls its
  // sockets once more before it sleeps, and the peer's answer to what was
  // just sent often arrives within that pass. Without it the thread blocks
  // in epoll_wait at once and pays a sleep and wake-up far more often
  // (docs/benchmarks-log.md, "Fewer locked instructions per request").
  if (strand_sent_) {
    strand_sent_ = false;
    asio::post(strand_, [self = shared_from_this()] { self->do_write(); });
  }
}

bool Channel::deliver_frames() {
  assert(strand_.running_in_this_thread());
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
    const auto r = decoder_.decode(read_data() + read_begin_, read_end_ - read_begin_, frame_, consumed);
    if (r == FrameDecoder::Result::need_more) break;
    if (r == FrameDecoder::Result::error) {
      g_counters.bad_input.fetch_add(1, std::memory_order_relaxed);
      // A TLS record as the first bytes of a plaintext connection: the ends
      // disagree on TLS, which the reason says (and a TLS client is answered
      // with bytes that are no TLS record, so it fails at once too).
      if (frames_in_.load(std::memory_order_relaxed) == 0 && !tls_) {
        auto tls_reason = detail::tls_record_reason(read_data() + read_begin_, read_end_ - read_begin_);
        if (!tls_reason.empty()) {
          if (read_data()[read_begin_] == detail::kTlsHandshakeRecord) {
            Frame notice;
            notice.header.flags = kFlagEvent;
            notice.attachments.emplace_back("error", "this port speaks plaintext wheelrpc, not TLS");
            std::string bytes;
            encode_frame(notice, bytes);
            drain_now();  // the rest of its ClientHello: a close with unread bytes would be a reset
            write_now(bytes);
          }
          do_close(make_error_code(read_data()[read_begin_] == detail::kTlsHandshakeRecord ? errc::tls_not_spoken
                                                                                          : errc::tls_required),
                   tls_reason);
          break;
        }
      }
      do_close(decoder_.error(), "bad input: " + decoder_.error_message());
      break;
    }
    read_begin_ += consumed;
    frames_in_.store(frames_in_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (handler) {
      delivering.any = true;
      handler->on_frame(*this, frame_);
    }
    if (++frames_since_flush_ >= kEarlyFlushFrames) {
      frames_since_flush_ = 0;
      if (read_begin_ != read_end_) flush_early(kEarlyFlushBytes);  // more frames to handle in this read
    }
    // The frame is reused; a large payload the handler left in it is not kept.
    if (frame_.payload.capacity() > max_kept_read_) std::string().swap(frame_.payload);
  }
  if (!is_open()) {  // closed by the handler or for bad input
    release_read_buffer();
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

bool Channel::flush_delivered() {
  flush_early(0);
  if (is_open()) return true;
  release_read_buffer();  // the flush ended a graceful close
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
  if (read_begin_ == read_end_) read_begin_ = read_end_ = 0;
  do_read();
}

void Channel::trim_idle() {
  frame_ = Frame{};
  std::lock_guard lock(write_mu_);
  if (writing_) return;  // a write cycle is under way: inflight_ is not ours to touch
  if (queued_.empty() && heap_bytes(queued_) > kKeptWriteBytes) std::string().swap(queued_);
  if (strand_queued_.empty() && heap_bytes(strand_queued_) > kKeptWriteBytes) std::string().swap(strand_queued_);
  strand_capacity_stat_.store(heap_bytes(strand_queued_), std::memory_order_relaxed);
  if (heap_bytes(inflight_) > kKeptWriteBytes) std::string().swap(inflight_);
  inflight_capacity_stat_.store(heap_bytes(inflight_), std::memory_order_relaxed);
}

error_code Channel::send(const Frame& frame) {
  if (delivering_here() && !queued_any_.load(std::memory_order_acquire)) {
    // From the handler, on the strand, with nothing queued by others before
    // it: no lock, and the read's flush writes it (deliver_frames, on_read).
    if (closed_for_write_ || refuse_sends_.load(std::memory_order_relaxed)) return make_error_code(errc::closed);
    if (strand_queued_.size() >= options_.max_write_queue_bytes) return make_error_code(errc::write_queue_full);
    encode_frame(frame, strand_queued_);
    strand_queued_bytes_.store(strand_queued_.size(), std::memory_order_relaxed);
    strand_capacity_stat_.store(heap_bytes(strand_queued_), std::memory_order_relaxed);
    strand_frames_out_.store(strand_frames_out_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    strand_sent_ = true;
    return {};
  }
  bool kick = false;
  {
    std::lock_guard lock(write_mu_);
    if (closed_for_write_ || refuse_sends_.load(std::memory_order_relaxed)) return make_error_code(errc::closed);
    if (queued_.size() + strand_queued_bytes_.load(std::memory_order_relaxed) >= options_.max_write_queue_bytes) {
      return make_error_code(errc::write_queue_full);
    }
    encode_frame(frame, queued_);
    queued_any_.store(true, std::memory_order_release);
    frames_out_.store(frames_out_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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

// Writes what is queued, until nothing is. A plaintext channel first sends
// it with one non-blocking send (no completion to wait for, and no write
// under way while the strand goes on: see flush_early); what the socket does
// not take at once, and everything on a TLS channel, goes by an async write
// whose completion (on_write) comes back here.
void Channel::do_write() {
  if (write_active_) return;  // a write is under way: its completion goes on from here
  for (;;) {
    {
      std::unique_lock lock(write_mu_);
      if (closed_for_write_ || (queued_.empty() && strand_queued_.empty())) {
        writing_ = false;
        if (pending_close_ && !closed_for_write_) {  // flushed: the graceful close
          lock.unlock();
          auto pc = std::move(pending_close_);
          if (pc->limit) pc->limit->cancel();
          do_close(pc->ec, pc->reason);
        }
        return;
      }
      // The first write after a quiet spell does not need what the last burst left.
      if (heap_bytes(inflight_) > kKeptWriteBytes &&
          now_rep() - last_write_.load(std::memory_order_relaxed) >= busy_interval_) {
        std::string().swap(inflight_);
      }
      writing_ = true;  // a cycle is under way (strand frames start one without send())
      if (strand_queued_.empty()) {
        std::swap(queued_, inflight_);
        queued_.clear();
      } else {  // the strand's frames first (see strand_queued_)
        std::swap(strand_queued_, inflight_);
        strand_queued_.clear();
        inflight_.append(queued_);
        queued_.clear();
        strand_queued_bytes_.store(0, std::memory_order_relaxed);
        strand_capacity_stat_.store(heap_bytes(strand_queued_), std::memory_order_relaxed);
      }
      queued_any_.store(false, std::memory_order_relaxed);
    }
    inflight_capacity_stat_.store(heap_bytes(inflight_), std::memory_order_relaxed);
    const std::size_t n = tls_ ? 0 : send_now();
    if (n < inflight_.size()) {
      write_inflight(n);
      return;
    }
    wrote_inflight();
  }
}

std::size_t Channel::send_now() {
  const ssize_t sent = ::send(socket_.native_handle(), inflight_.data(), inflight_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  const std::size_t n = sent > 0 ? static_cast<std::size_t>(sent) : 0;
  if (n > 0) bytes_out_.store(bytes_out_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  return n;  // would block, partly written, or an error the async write then reports
}

void Channel::wrote_inflight() {
  last_write_.store(now_rep(), std::memory_order_relaxed);
  // Keep a moderate buffer for the next batch; drop a huge one.
  if (inflight_.capacity() > kMaxKeptInflightBytes) {
    std::string().swap(inflight_);
  } else {
    inflight_.clear();
  }
  inflight_capacity_stat_.store(heap_bytes(inflight_), std::memory_order_relaxed);
}

void Channel::write_inflight(std::size_t from) {
  write_active_ = true;
  auto done = asio::bind_executor(strand_, [self = shared_from_this()](const error_code& ec, std::size_t n) {
    self->on_write(ec, n);
  });
  const auto rest = asio::buffer(inflight_.data() + from, inflight_.size() - from);
  if (tls_) {
    asio::async_write(tls_->stream, rest, std::move(done));
  } else {
    asio::async_write(socket_, rest, std::move(done));
  }
}

// Replies to the first requests of a large read go out while the rest are
// still being handled (and requests made from the first replies go out while
// the rest are), so the peer works on them meanwhile instead of waiting for
// the whole batch: both ends busy at once, the way a pipeline is. Plaintext
// only, and only when no write is under way (writes stay in order).
// At the end of a read's frames too: what they queued goes out now, before
// the next read is started (a round trip at C = 1 saves a scheduler pass).
void Channel::flush_early(std::size_t min_bytes) {
  assert(strand_.running_in_this_thread());
  if (write_active_ || tls_ || closed_for_write_) return;  // closed_for_write_ is written on the strand
  const std::size_t mine = strand_queued_.size();
  if (mine == 0 || mine < min_bytes) {  // what others queued may make up the rest
    std::lock_guard lock(write_mu_);
    const std::size_t all = queued_.size() + mine;
    if (all == 0 || all < min_bytes) return;
  }
  do_write();
}

void Channel::on_write(const error_code& ec, std::size_t n) {
  write_active_ = false;
  bytes_out_.store(bytes_out_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  if (ec) {
    std::string().swap(inflight_);
    inflight_capacity_stat_.store(0, std::memory_order_relaxed);
    if (ec != asio::error::operation_aborted) {
      if (tls_ && is_open()) {
        auto failure = detail::describe_tls_failure(ec, *tls_, tls_->ctx.role(), false);
        do_close(failure.ec, "write failed: " + failure.reason);
      } else {
        do_close(ec, "write failed: " + ec.message());
      }
    }
    return;
  }
  wrote_inflight();
  do_write();
}

void Channel::close_after_flush(error_code ec, std::string reason, std::chrono::milliseconds limit) {
  {
    std::lock_guard lock(write_mu_);
    refuse_sends_.store(true, std::memory_order_relaxed);
  }
  asio::dispatch(strand_, [self = shared_from_this(), ec, reason = std::move(reason), limit]() mutable {
    if (self->state() == ChannelState::closed || self->pending_close_) return;
    bool idle = false;
    {
      std::lock_guard lock(self->write_mu_);
      idle = !self->writing_ && self->queued_.empty() && self->strand_queued_.empty();
    }
    if (idle) {
      self->do_close(ec, reason);
      return;
    }
    // The write loop closes it when the queue runs dry (do_write); the limit
    // closes it if the peer never takes the bytes.
    self->pending_close_ = std::make_unique<PendingClose>();
    self->pending_close_->ec = ec;
    self->pending_close_->reason = reason;
    self->pending_close_->limit = std::make_unique<asio::steady_timer>(self->strand_, limit);
    self->pending_close_->limit->async_wait([self](const error_code& wait_ec) {
      if (wait_ec || !self->pending_close_) return;
      auto pc = std::move(self->pending_close_);
      self->do_close(pc->ec, pc->reason + " (unflushed after the limit)");
    });
  });
}

void Channel::close(error_code ec, std::string reason) {
  asio::dispatch(strand_, [self = shared_from_this(), ec, reason = std::move(reason)] {
    self->do_close(ec, reason);
  });
}

void Channel::do_close(const error_code& ec, const std::string& reason) {
  if (state_.exchange(ChannelState::closed, std::memory_order_acq_rel) == ChannelState::closed) return;
  if (park_) park_->cancel();  // a paused channel no longer keeps itself
  if (pending_close_) {  // closed before the flush: the limit's wait must not keep the channel
    if (pending_close_->limit) pending_close_->limit->cancel();
    pending_close_.reset();
  }
  {
    std::lock_guard lock(write_mu_);
    closed_for_write_ = true;
    std::string().swap(queued_);
    queued_any_.store(false, std::memory_order_relaxed);
  }
  std::string().swap(strand_queued_);
  strand_queued_bytes_.store(0, std::memory_order_relaxed);
  strand_capacity_stat_.store(0, std::memory_order_relaxed);
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
