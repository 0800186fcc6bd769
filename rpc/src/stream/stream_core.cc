#include "stream/stream_core.h"

#include <algorithm>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/container/small_vector.hpp>

#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/transport/errc.h>

#include "base/log.h"
#include "base/method_metrics.h"
#include "stream/stream_pending.h"
#include "stream/stream_table.h"

#include <wheelrpc/rpc/server_stream.h>

namespace wheelrpc::rpc {

std::string_view to_string(StreamTimer timer) noexcept {
  switch (timer) {
    case StreamTimer::deadline: return "deadline";
    case StreamTimer::message_idle: return "message-idle";
    case StreamTimer::write_stall: return "write-stall";
    case StreamTimer::first_message: return "first-message";
  }
  return "?";
}

namespace detail {
using boost::system::error_code;
namespace asio = boost::asio;

namespace {

/// True if the calling thread runs `ex` now (a strand it is inside, or an
/// io_context it runs); false when that cannot be told cheaply.
template <class Executor>
bool running_here(const Executor& ex) {
  if (const auto* s = ex.template target<asio::strand<asio::any_io_executor>>()) return s->running_in_this_thread();
  if (const auto* io = ex.template target<asio::io_context::executor_type>()) return io->running_in_this_thread();
  if (const auto* a = ex.template target<asio::any_io_executor>()) return running_here(*a);
  return false;
}

template <class Handler, class... Args>
void invoke(Handler& h, Args&&... args) {
  auto slot = asio::get_associated_cancellation_slot(h);
  if (slot.is_connected()) slot.clear();
  std::move(h)(std::forward<Args>(args)...);
}

/// Completions running inline inside the user's own calls on this thread.
thread_local int inline_depth = 0;
/// How deep a chain of operations started from completions may complete
/// inline (a writer that writes again from its completion) before one is
/// posted, which bounds the stack whatever the window.
constexpr int kMaxInlineDepth = 8;

/// Completes `h`: inline when this thread already runs the handler's
/// executor (as dispatch would, without its type-erased wrapping), else
/// through that executor. From a user's call (`posted`), inline only up to
/// kMaxInlineDepth nested completions, then posted.
template <class Handler, class... Args>
void complete(const asio::any_io_executor& fallback, bool posted, Handler h, Args... args) {
  auto ex = asio::get_associated_executor(h, fallback);
  if (running_here(ex)) {
    if (!posted) return invoke(h, std::move(args)...);
    if (inline_depth < kMaxInlineDepth) {
      struct Nested {
        Nested() noexcept { ++inline_depth; }
        ~Nested() { --inline_depth; }
      } nested;
      return invoke(h, std::move(args)...);
    }
  }
  auto run = [h = std::move(h), ... a = std::move(args)]() mutable { invoke(h, std::move(a)...); };
  if (posted) {
    // Through the stream's executor (a handler's own executor need not be
    // one that can be posted to), then on to the handler's: usually the same.
    asio::post(fallback, [ex = std::move(ex), run = std::move(run)]() mutable { asio::dispatch(ex, std::move(run)); });
  } else {
    asio::dispatch(ex, std::move(run));
  }
}

}  // namespace

template <class Handler>
void StreamCore::watch_cancellation(Handler& h) {
  auto slot = asio::get_associated_cancellation_slot(h);
  if (!slot.is_connected()) return;
  slot.assign([weak = weak_from_this()](asio::cancellation_type) {
    if (auto self = weak.lock()) {
      self->end_local(asio::error::operation_aborted, "cancelled through the completion token's cancellation slot",
                      StreamEnd::cancelled);
    }
  });
}

StreamCore::StreamCore(Settings s) : s_(std::move(s)), start_(now()) {
  last_message_ = start_;
  window_ = s_.window;
  if (s_.side->counters) {
    s_.side->counters->opened.fetch_add(1, std::memory_order_relaxed);
    s_.side->counters->open.fetch_add(1, std::memory_order_relaxed);
  }
  if (s_.cells) s_.cells->stream_opened();
}

StreamCore::~StreamCore() {
  // Every stream ends before it goes (the transport's table, the handle, or
  // the failed open end it); one that never started counts as refused.
  common::LockGuard lock(mu_);
  if (!ended_ && s_.side->counters) {
    s_.side->counters->open.fetch_sub(1, std::memory_order_relaxed);
    s_.side->counters->ends[static_cast<std::size_t>(StreamEnd::refused)].fetch_add(1, std::memory_order_relaxed);
  }
  if (!ended_ && s_.cells) s_.cells->stream_ended(StreamEnd::refused, StatusCode::unknown);  // no error to say
}

std::chrono::milliseconds StreamCore::remaining_budget() const {
  if (s_.deadline.count() <= 0) return std::chrono::milliseconds(0);
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(start_ + s_.deadline - now());
  return std::max(left, std::chrono::milliseconds(1));
}

void StreamCore::start() {
  common::LockGuard lock(mu_);
  if (s_.deadline.count() > 0) {
    deadline_at_ = start_ + s_.deadline;
    arm(StreamTimer::deadline, start_ + s_.deadline);
  }
  if (s_.first_message_timeout.count() > 0) arm(StreamTimer::first_message, start_ + s_.first_message_timeout);
}

void StreamCore::fail_open(const error_code& ec, std::string message) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return;
    // The open's own deadline, when a stream timer bounded it, is that timer's.
    error_code e = ec;
    if (ec == errc::timeout && s_.first_message_timeout.count() > 0 &&
        (s_.deadline.count() == 0 || s_.first_message_timeout <= s_.deadline)) {
      e = make_error_code(errc::first_message_timeout);
      fired_ = StreamTimer::first_message;
      fired_elapsed_ = ms_between(start_, now());
      message = fmt::format("stream '{}': first-message timeout after {} ms: no response headers (timer {} ms): {}",
                            s_.method, fired_elapsed_.count(), s_.first_message_timeout.count(), message);
    }
    end_locked(e, std::move(message), fired_ ? StreamEnd::first_message : StreamEnd::refused, Wire::none, p,
               /*raw=*/true);
  }
  run(p);
}

boost::system::error_code StreamCore::open_result(const error_code& ec) const {
  common::LockGuard lock(mu_);
  if (bound_) return {};
  if (ended_) return end_ec_ ? end_ec_ : make_error_code(errc::stream_closed);
  return ec;
}

// ---- from the wire ----------------------------------------------------------

void StreamCore::on_message(std::string& payload, std::uint8_t encoding, transport::Attachments* initial) {
  const std::size_t wire = payload.size();
  std::string why;
  const error_code bad = encoding != 0 ? decode_message(encoding, payload, why) : error_code{};
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return;
    if (bad) [[unlikely]] {
      end_locked(bad, std::move(why), StreamEnd::protocol, s_.side->client ? Wire::reset : Wire::end, p);
    } else {
      take_message(payload, encoding != 0, wire, initial, p);
    }
  }
  run(p);
}

void StreamCore::on_half_close() {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_ || s_.side->client) return;  // not the server's to send: ignored
    if (peer_done_) {
      end_locked(make_error_code(StatusCode::internal), "the client half-closed twice", StreamEnd::protocol, Wire::end,
                 p);
    } else {
      peer_done_ = true;
      if (read_ && inbox_head_ == inbox_.size()) p.read(read_, {}, std::nullopt);
    }
  }
  run(p);
}

void StreamCore::on_credit(std::uint64_t bytes) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return;
    add_credit(bytes, p);
  }
  run(p);
}

void StreamCore::on_end(const error_code& ec, std::string message, transport::Attachments& metadata) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_ || !s_.side->client) return;
    take_end(ec, message, metadata, p);
  }
  run(p);
}

void StreamCore::on_reset() {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_ || s_.side->client) return;
    end_locked(make_error_code(errc::cancelled), "the client cancelled the stream", StreamEnd::cancelled, Wire::none,
               p);
  }
  run(p);
}

void StreamCore::on_bad_operation(std::string why) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return;
    end_locked(make_error_code(StatusCode::internal), std::move(why), StreamEnd::protocol,
               s_.side->client ? Wire::reset : Wire::end, p);
  }
  run(p);
}

void StreamCore::add_credit(std::uint64_t n, Pending& p) {
  if (n == 0 || static_cast<std::uint64_t>(std::max<std::int64_t>(send_credit_, 0)) + n > kMaxCredit) {
    end_locked(make_error_code(StatusCode::internal),
               fmt::format("a credit of {} bytes overflows the window (holding {})", n, send_credit_),
               StreamEnd::protocol, s_.side->client ? Wire::reset : Wire::end, p);
    return;
  }
  send_credit_ += static_cast<std::int64_t>(n);
  last_credit_ = now();  // what the write-stall timer's message tells
  try_send_write(p);
}

void StreamCore::take_end(const error_code& ec, std::string& message, transport::Attachments& metadata, Pending& p) {
  take_end_metadata(metadata);
  peer_done_ = true;
  if (!ec) {
    end_locked({}, {}, StreamEnd::ok, Wire::none, p);
    return;
  }
  // The server's end of the stream's deadline, racing our own timer for the
  // same deadline (they fire within a tick of each other): ours to report,
  // as errc::timeout, whichever came first.
  if (ec == errc::server_timeout && deadline_at_) {
    const TimePoint t = now();
    expire(StreamTimer::deadline, start_, std::max(t, *deadline_at_), p);
    return;
  }
  if (message.empty()) message = ec.message();
  end_locked(ec, fmt::format("the server ended it: {}", message), StreamEnd::error, Wire::none, p);
}

void StreamCore::on_connection_lost(const error_code& ec, const std::string& reason) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return;
    end_locked(make_error_code(errc::connection_lost),
               fmt::format("the connection was lost: {}", reason.empty() ? ec.message() : reason),
               StreamEnd::connection_lost, Wire::none, p);
  }
  run(p);
}

// ---- the user ---------------------------------------------------------------

void StreamCore::read(StreamReadHandler h) {
  Pending p;
  p.posted = true;
  {
    common::LockGuard lock(mu_);
    if (read_) {
      p.read(h, make_error_code(errc::read_pending), std::nullopt);
    } else if (inbox_head_ < inbox_.size()) {
      const Received r = inbox_received_[inbox_head_];  // the same length as inbox_
      last_read_compressed_.store(r.compressed, std::memory_order_relaxed);
      std::string m = std::move(inbox_[inbox_head_++]);
      if (!ended_) consumed(r.cost);  // the cost it was counted at (not its decoded size)
      p.read(h, {}, std::move(m));
    } else if (ended_ && (end_ec_ || !peer_done_)) {
      p.read(h, end_ec_ ? end_ec_ : make_error_code(errc::stream_closed), std::nullopt);
    } else if (peer_done_) {
      p.read(h, {}, std::nullopt);
    } else {
      watch_cancellation(h);
      read_.swap(h);  // not operator=: Boost 1.81's any_completion_handler move assignment recurses
    }
  }
  run(p);
}

void StreamCore::write(std::string message, StreamDoneHandler h, bool compress) {
  const auto bytes = static_cast<std::uint32_t>(std::min<std::size_t>(message.size(), 0xffffffffu));
  const std::uint8_t encoding = compress_message(message, compress);
  Pending p;
  p.posted = true;
  {
    common::LockGuard lock(mu_);
    if (ended_ || writes_done_ || finished_) {
      p.done(h, ended_ && end_ec_         ? end_ec_
                : !ended_ && writes_done_ ? make_error_code(errc::stream_half_closed)
                                          : make_error_code(errc::stream_closed));
    } else if (write_) {
      p.done(h, make_error_code(errc::write_pending));
    } else if (message.size() + kMessageBodyOverhead > peer_max_body_) {
      p.done(h, make_error_code(errc::bad_request));  // the peer would close the connection on it
    } else {
      write_msg_ = std::move(message);
      write_bytes_ = bytes;
      write_encoding_ = encoding;
      watch_cancellation(h);
      write_.swap(h);
      stall_since_ = now();
      try_send_write(p);
      if (write_ && s_.stall_timeout.count() > 0 && !armed_[index(StreamTimer::write_stall)]) {
        arm(StreamTimer::write_stall, stall_since_ + s_.stall_timeout);
      }
    }
  }
  run(p);
}

bool StreamCore::can_send(std::uint64_t cost) const {
  return static_cast<std::int64_t>(cost) <= send_credit_ || send_credit_ == static_cast<std::int64_t>(peer_window_);
}

void StreamCore::try_send_write(Pending& p) {
  if (!write_ || !bound_ || !can_send(message_cost(write_msg_.size()))) return;
  send_message(write_msg_, p);
  if (ended_) return;  // the send failed and ended it
  p.done(write_, {});
  std::string().swap(write_msg_);  // its buffer goes too (= std::string() would keep it)
  if (half_close_after_write_) {
    half_close_after_write_ = false;
    send_half_close();
    p.done(writes_done_h_, {});
  }
}

void StreamCore::send_message(std::string& payload, Pending& p) {
  const std::uint64_t cost = message_cost(payload.size());
  transport::Attachments none;
  transport::Attachments* initial = &none;
  if (!s_.side->client && !initial_sent_) {  // the initial metadata goes with the first message
    initial_sent_ = true;
    if (extras_) initial = &extras_->initial_metadata;
  }
  const error_code ec =
      wire_ ? wire_->send_message(id(), payload, write_encoding_, *initial) : make_error_code(transport::errc::closed);
  if (ec == transport::errc::write_queue_full) {
    end_locked(make_error_code(errc::resource_exhausted),
               "the connection's write queue is full (ChannelOptions::max_write_queue_bytes)", StreamEnd::protocol,
               s_.side->client ? Wire::reset : Wire::end, p);
    return;
  }
  // A closed channel: its close ends the stream (on_connection_lost).
  send_credit_ -= static_cast<std::int64_t>(cost);
  ++sent_;
  bytes_sent_ += write_bytes_;
  if (s_.cells) s_.cells->stream_message(Direction::sent, write_bytes_, payload.size(), write_encoding_ != 0);
  if (s_.side->counters) s_.side->counters->messages_out.fetch_add(1, std::memory_order_relaxed);
}

void StreamCore::consumed(std::uint64_t cost) {
  recv_consumed_ += cost;
  // Credit goes back past half the window, or once everything received was
  // read: a peer waiting to send a message larger than the credit it has
  // left (more than half the window) gets it back then, not never.
  const bool drained = recv_consumed_ >= recv_outstanding_;
  if ((recv_consumed_ < window_ / 2 && !drained) || !bound_ || ended_ || peer_done_) return;
  const auto bytes = static_cast<std::uint32_t>(recv_consumed_);
  recv_outstanding_ -= std::min(recv_outstanding_, recv_consumed_);
  recv_consumed_ = 0;
  if (wire_) wire_->send_credit(id(), bytes);
}

void StreamCore::send_half_close() {
  if (wire_) wire_->send_half_close(id());
}

void StreamCore::writes_done(StreamDoneHandler h) {
  Pending p;
  p.posted = true;
  {
    common::LockGuard lock(mu_);
    if (!s_.side->client || ended_ || writes_done_) {
      p.done(h, ended_ && end_ec_         ? end_ec_
                : !ended_ && writes_done_ ? make_error_code(errc::stream_half_closed)
                                          : make_error_code(errc::stream_closed));
    } else {
      writes_done_ = true;
      if (write_) {  // after the write that waits for credit
        half_close_after_write_ = true;
        writes_done_h_.swap(h);
      } else {
        send_half_close();
        p.done(h, {});
      }
    }
  }
  run(p);
}

void StreamCore::wait_end(StreamDoneHandler h) {
  Pending p;
  p.posted = true;
  {
    common::LockGuard lock(mu_);
    if (ended_) {
      p.done(h, end_ec_);
    } else {
      watch_cancellation(h);
      end_waiters_.push_back(std::move(h));
    }
  }
  run(p);
}

void StreamCore::end_local(error_code ec, std::string message, StreamEnd cause) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return;
    end_locked(ec, std::move(message), cause, s_.side->client ? Wire::reset : Wire::end, p);
  }
  run(p);
}

void StreamCore::finish(const error_code& ec, std::string message) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_ || s_.side->client) return;
    finished_ = true;
    end_locked(ec, std::move(message), ec ? StreamEnd::error : StreamEnd::ok, Wire::end, p, /*raw=*/true);
  }
  run(p);
}

void StreamCore::add_trailer(std::string key, std::string value) {
  common::LockGuard lock(mu_);
  if (!ended_ && !s_.side->client) extras().trailers.emplace_back(std::move(key), std::move(value));
}

void StreamCore::handle_dropped() {
  Pending p;
  {
    common::LockGuard lock(mu_);
    handle_gone_ = true;
    if (ended_) return;
    if (s_.side->client) {
      end_locked(asio::error::operation_aborted, "every ClientStream handle was dropped", StreamEnd::cancelled,
                 Wire::reset, p);
    } else {
      end_locked(make_error_code(errc::server_error), "the handler dropped the stream without finishing it",
                 StreamEnd::error, Wire::end, p);
    }
  }
  run(p);
}

bool StreamCore::cancelled() const {
  common::LockGuard lock(mu_);
  return ended_ && !finished_;
}

std::string StreamCore::error_message() const {
  common::LockGuard lock(mu_);
  return end_ec_ && extras_ ? extras_->end_message : std::string();
}

StreamInfo StreamCore::info() const {
  common::LockGuard lock(mu_);
  StreamInfo i;
  i.method = s_.method;
  i.peer = peer_;
  i.id = id();
  i.messages_sent = sent_;
  i.messages_received = received_;
  i.bytes_sent = bytes_sent_;
  i.bytes_received = bytes_received_;
  i.ended = ended_;
  i.timer = fired_;
  i.timer_elapsed = fired_elapsed_;
  return i;
}

// ---- the end ----------------------------------------------------------------

std::string StreamCore::describe(std::string_view what) const {
  return fmt::format("stream '{}'{}{}: {} ({} messages sent, {} received)", s_.method,
                     s_.side->client ? " to " : " from ", peer_.empty() ? "(not connected)" : peer_, what, sent_,
                     received_);
}

void StreamCore::end_locked(error_code ec, std::string message, StreamEnd cause, Wire wire, Pending& p, bool raw) {
  if (ended_) return;
  ended_ = true;
  end_ec_ = ec;
  if (!message.empty()) extras().end_message = raw ? message : describe(message);
  if (bound_ && wire_) {
    if (wire == Wire::reset) {
      wire_->send_reset(id());
    } else if (wire == Wire::end) {
      std::string what = ec ? std::move(message) : std::string();  // what happened; the client says where
      auto metadata = end_metadata();
      wire_->send_end(id(), ec, what, metadata);
    }
  }
  for (std::size_t i = 0; i < armed_.size(); ++i) {
    if (armed_[i]) (*timeouts_)[i].cancel();  // armed: made
    armed_[i] = false;
  }
  if (ec) {  // what was received and not read is dropped with the error
    inbox_.clear();
    inbox_received_.clear();
    inbox_head_ = 0;
  }
  const error_code write_ec = ec ? ec : make_error_code(errc::stream_closed);
  p.done(write_, write_ec);
  std::string().swap(write_msg_);
  p.done(writes_done_h_, write_ec);
  if (read_) p.read(read_, ec ? ec : (peer_done_ ? error_code{} : make_error_code(errc::stream_closed)), std::nullopt);
  for (auto& h : end_waiters_) p.done(h, ec);
  end_waiters_.clear();
  if (auto t = table_.lock()) t->remove(id(), this);
  wire_.reset();
  if (s_.side->counters) {
    s_.side->counters->open.fetch_sub(1, std::memory_order_relaxed);
    s_.side->counters->ends[static_cast<std::size_t>(cause)].fetch_add(1, std::memory_order_relaxed);
  }
  if (s_.cells) s_.cells->stream_ended(cause, status_code_of(ec));
  if (ec && cause != StreamEnd::ok && cause != StreamEnd::cancelled) {
    logger()->debug("{}", extras_ ? extras_->end_message : std::string());
  }
  if (s_.side->on_end) s_.side->on_end(s_.side->owner.get());
}

void StreamCore::run(Pending& p) {
  for (auto& r : p.reads) complete(s_.side->ex, p.posted, std::move(r.h), r.ec, std::move(r.message));
  for (auto& d : p.dones) complete(s_.side->ex, p.posted, std::move(d.h), d.ec);
}

}  // namespace detail
}  // namespace wheelrpc::rpc
