#include "wire/native/native_server_connection.h"

#include <cassert>

#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/transport/errc.h>

#include <fmt/format.h>

#include "base/bad_input.h"
#include "wire/native/native_control_frames.h"
#include "base/log.h"
#include "base/payload_coding.h"
#include "stream/stream_core.h"
#include "wire/native/native_stream_frames.h"
#include "wire/native/native_stream_wire.h"
#include "wire/stream_open.h"

namespace wheelrpc::rpc::detail {

ServerConnection::ServerConnection(std::shared_ptr<ServerEvents> events, Http2Handoff http2)
    : heartbeat_ms_(std::make_shared<std::atomic<std::int64_t>>(0)), context_(new ServerConnContext), http2_(http2) {
  context_->settings = &events->wire_settings();
  context_->events = std::move(events);
  context_->streams = std::make_shared<StreamTable>();
}

void ServerConnection::attach(const std::shared_ptr<ServerConnection>& self,
                              const std::shared_ptr<transport::Channel>& channel) {
  assert(self.get() == this);
  channel_ = channel;
  raw_channel_ = channel.get();
  remote_ = channel->remote();
  id_ = channel->id();
  context_->transport = std::weak_ptr<ServerTransport>(std::static_pointer_cast<ServerTransport>(self));
}

boost::asio::any_io_executor ServerConnection::executor() const {
  const auto channel = channel_.lock();
  return channel ? boost::asio::any_io_executor(channel->strand()) : boost::asio::any_io_executor();
}

void ServerConnection::retire() {
  const auto channel = channel_.lock();
  if (!channel || retired_ || !channel->is_open()) return;
  assert(channel->strand().running_in_this_thread());
  // Requests are counted in flight on this strand (ServerCore::on_request),
  // so none can come between this check and the close below.
  if (context_->in_flight.load(std::memory_order_acquire) > 0 || context_->streams->size() > 0) return;
  retired_ = true;
  channel->pause_reading();
  channel->close_after_flush(transport::make_error_code(transport::errc::closed),
                             "the connection reached its maximum age", std::chrono::milliseconds(1000));
}

void ServerConnection::resume_reading() {
  if (auto ch = channel_.lock()) ch->resume_reading();
}

bool ServerConnection::send_reply(std::uint64_t id, Status status, std::string& payload,
                                  transport::Attachments& attachments, std::string_view method, ReplyCoding& coding,
                                  bool delivering) {
  transport::Frame f;
  f.header.status = static_cast<std::uint8_t>(status);
  f.header.request_id = id;
  f.attachments = std::move(attachments);
  f.payload = std::move(payload);
  std::shared_ptr<transport::Channel> held;  // unless the channel is delivering the request now
  transport::Channel* const channel = delivering ? raw_channel_ : (held = channel_.lock()).get();
  if (!channel) return false;
  // Compressed in a per-thread buffer, swapped back out after the send.
  const bool compressed = coding.compression != transport::Compression::identity && compress_reply(f, coding);
  fit_peer_limit(f, method, *channel);
  const auto ec = channel->send(f);
  coding.wire_size = f.payload.size();
  coding.compressed = compressed && f.header.encoding != 0;  // not if fit_peer_limit replaced it
  if (compressed) compression_scratch().swap(f.payload);
  if (delivering) channel->recycle(std::move(f.payload));  // the next request's payload, without a malloc
  if (ec == transport::errc::write_queue_full) {
    // The client sends requests and reads no replies: closed, not allowed to grow memory.
    context_->events->count_slow_reader();
    channel->close(ec, fmt::format("the client reads no replies: over {} bytes of replies queued "
                                   "(ChannelOptions::max_write_queue_bytes)",
                                   context_->settings->channel.max_write_queue_bytes));
  }
  return !ec;
}

bool ServerConnection::compress_reply(transport::Frame& f, const ReplyCoding& coding) {
  std::string& scratch = compression_scratch();
  const auto used = compress_payload(
      f.payload, coding.compression, coding.level, context_->settings->coding.threshold,
      transport::CompressionSet::from_bits(context_->peer_accept.load(std::memory_order_relaxed)), scratch);
  if (used == transport::Compression::identity) return false;
  f.header.encoding = static_cast<std::uint8_t>(used);
  f.payload.swap(scratch);
  return true;
}

void ServerConnection::fit_peer_limit(transport::Frame& f, std::string_view method, const transport::Channel& channel) {
  const std::uint32_t limit = context_->peer_max_body.load(std::memory_order_relaxed);
  if (f.payload.size() <= limit / 2 && f.attachments.empty()) return;
  const std::size_t body = transport::encoded_size(f) - transport::kHeaderSize;
  if (body <= limit) return;
  context_->events->count_oversize_reply();
  f.header.status = static_cast<std::uint8_t>(Status::server_error);
  f.header.encoding = 0;
  f.attachments.clear();
  f.payload =
      fmt::format("reply of {} bytes to '{}' exceeds the client's limit of {} bytes (max_body)", body, method, limit);
  logger()->warn("conn={} {}", channel.id(), f.payload);
}

void ServerConnection::start_hello_timeout(timer::Timer& timer, const std::shared_ptr<transport::Channel>& channel) {
  // The task only posts a close, holding the channel weakly.
  std::error_code tec;
  hello_timeout_ = timer.new_timeout(
      [weak = std::weak_ptr<transport::Channel>(channel), events = std::weak_ptr<ServerEvents>(context_->events)] {
        auto self = events.lock();
        if (!self) return;
        common::WorkGate::Scope in(self->timer_work());
        if (!in) return;  // stopped: the channel is closed already
        if (auto ch = weak.lock()) {
          ch->close(transport::make_error_code(transport::errc::protocol_error), "no HELLO within the hello timeout");
        }
      },
      context_->settings->hello_timeout, tec);
}

void ServerConnection::on_frame(transport::Channel& channel, transport::Frame& frame) {
  assert(channel.strand().running_in_this_thread());
  if (retired_) [[unlikely]]
    return;  // closing for its age: not run here, the client retries it elsewhere
  if (!hello_done_) {
    if (!is_hello(frame)) {
      first_frame_not_hello_ = true;  // counted and logged by on_close
      channel.close(transport::make_error_code(transport::errc::protocol_error), "the first frame was not a HELLO");
      return;
    }
    on_hello(channel, frame);
    return;
  }
  if (frame.header.is_event()) {
    if (is_heartbeat(frame)) {
      channel.send(make_heartbeat_reply(frame.header.request_id));
    } else if (is_cancel(frame)) {
      context_->cancels.add(frame.header.request_id);  // its reply will be dropped
      // An open the client abandoned, accepted meanwhile: that stream is cancelled.
      if (auto s = context_->streams->find(frame.header.request_id)) {
        s->end_local(make_error_code(errc::cancelled), "the client abandoned the stream's opening",
                     StreamEnd::cancelled);
      }
    }
    return;  // heartbeat replies (event responses) only refresh last-read
  }
  if (!frame.header.is_request()) return;  // the client never sends responses
  if (frame.header.is_stream()) [[unlikely]] {
    on_stream_frame(channel, frame);
    return;
  }
  // The request may close the channel (a reply over the write queue
  // bound); the channel keeps this handler alive while it delivers the
  // frame all the same (ChannelHandler::on_frame).
  IncomingRequest request{frame.header.request_id,
                          frame.header.is_two_way(),
                          frame.method,
                          frame.payload,
                          frame.attachments,
                          std::chrono::milliseconds(frame.header.deadline_ms),
                          context_->settings->receipt_time(channel),
                          frame.payload.size(),
                          frame.header.encoding != 0,
                          requested_compression(frame.header.reply_encoding),
                          {}};
  if (request.compressed) [[unlikely]] {
    const ServerWireSettings& settings = *context_->settings;
    std::string why;
    request.decode_error = decompress_payload(frame.header.encoding, frame.payload, settings.coding,
                                              settings.channel.max_body, "the request", why);
    if (request.decode_error) frame.payload = std::move(why);
  }
  context_->events->on_request(*this, request, context_);
  pause_if_full(channel);
}

void ServerConnection::on_stream_frame(transport::Channel& channel, transport::Frame& frame) {
  const std::uint64_t id = frame.header.request_id;
  if (stream_op(frame) == StreamOp::open) {
    StreamOpenRequest open{id, frame.method, frame.attachments};
    open.budget = std::chrono::milliseconds(frame.header.deadline_ms);
    open.received = context_->settings->receipt_time(channel);
    open.reply_compression = requested_compression(frame.header.reply_encoding);
    // One wire for the connection's streams, while any holds it.
    open.wire = context_->streams->wire.get(
        [&] { return std::make_shared<NativeStreamWire>(channel.shared_from_this(), false); });
    open.peer_window = context_->peer_stream_window.load(std::memory_order_relaxed);
    open.peer_max_body = context_->peer_max_body.load(std::memory_order_relaxed);
    open.peer_accept = transport::CompressionSet::from_bits(context_->peer_accept.load(std::memory_order_relaxed));
    context_->events->on_stream_open(*this, open, context_);
    return;
  }
  if (auto s = context_->streams->find(id)) {
    deliver_stream_frame(*s, frame);
    return;
  }
  // No such stream: it ended (a frame crossing its END, harmless), or never
  // was (the client's mistake). Either way the client is told, and nothing
  // else on the connection is disturbed; a RESET needs no answer.
  if (stream_op(frame) == StreamOp::reset) return;
  context_->events->count_unknown_stream_frame();
  auto end = make_stream_frame(StreamOp::end, id, false);
  end.header.status = static_cast<std::uint8_t>(Status::bad_request);
  end.payload = fmt::format("no stream {} is open on this connection (a {} frame)", id, frame.header.stream_op);
  channel.send(end);
}

void ServerConnection::on_hello(transport::Channel& channel, const transport::Frame& frame) {
  hello_done_ = true;
  hello_timeout_.cancel();
  const ServerWireSettings& settings = *context_->settings;
  const auto agreed = context_->events->agree_heartbeat(hello_heartbeat(frame));
  heartbeat_ms_->store(agreed.count(), std::memory_order_relaxed);
  // Data the client never acknowledges fails the connection within its idle
  // limit too, not after the kernel's ~15 minutes of retransmissions (gRFC A18).
  if (const auto user_timeout = settings.user_timeout_for(agreed); user_timeout.count() > 0) {
    if (auto ec = channel.set_user_timeout(user_timeout)) {
      logger()->debug("conn={} TCP_USER_TIMEOUT not set: {}", channel.id(), ec.message());
    }
  }
  context_->peer_max_body.store(hello_max_body(frame), std::memory_order_relaxed);
  context_->peer_stream_window.store(hello_stream_window(frame), std::memory_order_relaxed);
  context_->peer_accept.store(hello_accept(frame).bits(), std::memory_order_relaxed);
  channel.send(make_hello(frame.header.request_id, agreed, false, settings.channel.max_body,
                          settings.max_streams_per_connection == 0 ? 0 : settings.stream_window,
                          settings.coding.accept));
}

void ServerConnection::pause_if_full(transport::Channel& channel) {
  // Posted, so a resume racing with this lands after it.
  const std::size_t cap = context_->settings->max_requests_per_connection;
  if (cap != 0 && context_->in_flight.load(std::memory_order_acquire) >= static_cast<std::int64_t>(cap) &&
      channel.is_open()) {
    context_->events->count_read_pause();
    channel.pause_reading();
  }
}

bool ServerConnection::send_heartbeat(transport::Channel& channel) { return send_heartbeat_frame(channel); }

bool ServerConnection::keep_paused(transport::Channel& channel) {
  // A reply that went out between a request's count and its pause_if_full
  // posted a resume that the pause did not need; the pause that came later
  // (the next request brought the count back to the cap) stands until the
  // next reply's resume.
  (void)channel;
  const std::size_t cap = context_->settings->max_requests_per_connection;
  return cap != 0 && context_->in_flight.load(std::memory_order_acquire) >= static_cast<std::int64_t>(cap);
}

std::shared_ptr<transport::ChannelHandler> ServerConnection::on_http2(transport::Channel& channel) {
  if (!context_->settings->grpc.enabled || !http2_) return nullptr;
  hello_done_ = true;  // no HELLO on this connection: its timeout is off
  hello_timeout_.cancel();
  return http2_(context_, channel.shared_from_this(), heartbeat_ms_);
}

void ServerConnection::on_close(transport::Channel& channel, const boost::system::error_code& ec,
                                const std::string& reason) {
  hello_timeout_.cancel();
  // Bad input, counted and logged here, where every close passes: the
  // decoder's errors, and the two protocol errors of a connection without
  // a HELLO (the only protocol errors a server connection closes with).
  if (auto kind = bad_input_of(ec)) {
    context_->events->note_bad_input(*kind, channel, reason);
  } else if (ec == transport::errc::protocol_error && !hello_done_) {
    context_->events->note_bad_input(first_frame_not_hello_ ? BadInput::no_hello : BadInput::hello_timeout, channel,
                                     reason);
  }
  for (auto& s : context_->streams->close()) s->on_connection_lost(ec, reason);
  context_->events->on_connection_closed(channel.id());
}

}  // namespace wheelrpc::rpc::detail
