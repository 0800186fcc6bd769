// Channel's write side: frames and bytes queued from any thread (or, from
// the handler on the strand, without a lock), written by one non-blocking
// send where the socket takes them, by an async write otherwise; the early
// flushes that let the peer work while a read is still being handled; the
// graceful close after the last byte.
#include <wheelrpc/transport/channel.h>

#include <cassert>
#include <memory>
#include <string>
#include <utility>

#include <sys/socket.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "channel_detail.h"
#include "tls_stream.h"
#include "write_queue.h"

namespace wheelrpc::transport {

namespace asio = boost::asio;
using boost::system::error_code;
using detail::now_rep;

error_code Channel::send(const Frame& frame) {
  if (delivering_here() && writes_->strand_path_open()) {
    // From the handler, on the strand, with nothing queued by others before
    // it: no lock, and the read's flush writes it (deliver_frames, on_read).
    const error_code ec = writes_->push_strand(frame, options_.max_write_queue_bytes);
    if (!ec) strand_sent_ = true;
    return ec;
  }
  bool kick = false;
  if (const error_code ec = writes_->push(frame, options_.max_write_queue_bytes, kick)) return ec;
  // Posted, not dispatched: frames sent while the strand is busy (say, replies
  // to a batch of requests just read) go out together in one write.
  if (kick) {
    if (detail::t_inline_kick.channel == this) {
      detail::t_inline_kick.kicked = true;  // send_heartbeat starts the write: it runs on the strand
    } else {
      asio::post(strand_, [self = shared_from_this()] { self->do_write(); });
    }
  }
  return {};
}

error_code Channel::send_bytes(std::string_view bytes) {
  if (delivering_here() && writes_->strand_path_open()) {
    const error_code ec = writes_->push_strand(bytes, options_.max_write_queue_bytes);
    if (!ec) strand_sent_ = true;
    return ec;
  }
  bool kick = false;
  if (const error_code ec = writes_->push(bytes, options_.max_write_queue_bytes, kick)) return ec;
  if (kick) asio::post(strand_, [self = shared_from_this()] { self->do_write(); });
  return {};
}

void Channel::flush_partial() {
  if (delivering_here()) flush_early(kEarlyFlushBytes);
}

// Writes what is queued, until nothing is. A plaintext channel first sends
// it with one non-blocking send (no completion to wait for, and no write
// under way while the strand goes on: see flush_early); what the socket does
// not take at once, and everything on a TLS channel, goes by an async write
// whose completion (on_write) comes back here.
void Channel::do_write() {
  if (write_active_) return;  // a write is under way: its completion goes on from here
  for (;;) {
    // The first write after a quiet spell does not need what the last burst left.
    const bool trim = writes_->inflight_heap_bytes() > kKeptWriteBytes &&
                      now_rep() - last_write_.load(std::memory_order_relaxed) >= busy_interval_;
    const auto taken = writes_->take(trim);
    if (taken != detail::WriteQueue::Take::batch) {
      if (pending_close_ && taken == detail::WriteQueue::Take::drained) {  // flushed: the graceful close
        auto pc = std::move(pending_close_);
        if (pc->limit) pc->limit->cancel();
        do_close(pc->ec, pc->reason);
      }
      return;
    }
    const std::size_t n = tls_ ? 0 : send_now();
    if (n < writes_->inflight().size()) {
      write_inflight(n);
      return;
    }
    wrote_inflight();
  }
}

std::size_t Channel::send_now() {
  const std::string& bytes = writes_->inflight();
  const ssize_t sent = ::send(socket_.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  const std::size_t n = sent > 0 ? static_cast<std::size_t>(sent) : 0;
  if (n > 0) writes_->note_written(n);
  return n;  // would block, partly written, or an error the async write then reports
}

void Channel::wrote_inflight() {
  last_write_.store(now_rep(), std::memory_order_relaxed);
  writes_->wrote();
}

void Channel::write_inflight(std::size_t from) {
  write_active_ = true;
  auto done = asio::bind_executor(
      strand_, [self = shared_from_this()](const error_code& ec, std::size_t n) { self->on_write(ec, n); });
  const std::string& bytes = writes_->inflight();
  const auto rest = asio::buffer(bytes.data() + from, bytes.size() - from);
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
  if (write_active_ || tls_ || writes_->closed_on_strand()) return;
  if (writes_->has_at_least(min_bytes)) do_write();
}

void Channel::on_write(const error_code& ec, std::size_t n) {
  write_active_ = false;
  writes_->note_written(n);
  if (ec) {
    writes_->drop_inflight();
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
  writes_->refuse();
  asio::dispatch(strand_, [self = shared_from_this(), ec, reason = std::move(reason), limit]() mutable {
    if (self->state() == ChannelState::closed || self->pending_close_) return;
    if (self->writes_->idle()) {
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

}  // namespace wheelrpc::transport
