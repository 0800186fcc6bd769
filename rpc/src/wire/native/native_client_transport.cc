#include "wire/native/native_client_transport.h"

#include <algorithm>
#include <cassert>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/transport/errc.h>

#include "wire/native/native_control_frames.h"
#include "base/payload_coding.h"
#include "stream/stream_core.h"
#include "wire/native/native_stream_frames.h"
#include "wire/native/native_stream_wire.h"

namespace wheelrpc::rpc::detail {
using boost::system::error_code;

NativeClientTransport::NativeClientTransport(std::shared_ptr<ClientTransportEvents> events,
                                             std::shared_ptr<const ClientWireSettings> settings)
    : events_(std::move(events)), settings_(std::move(settings)) {}

class NativeClientTransport::Handler final : public transport::ChannelHandler {
 public:
  explicit Handler(std::weak_ptr<NativeClientTransport> t) : transport_(std::move(t)) {}
  void on_frame(transport::Channel& channel, transport::Frame& frame) override {
    if (!batch_) batch_ = transport_.lock();
    if (batch_) batch_->on_frame(channel, frame);
  }
  void on_close(transport::Channel& channel, const error_code& ec, const std::string& reason) override {
    if (auto t = batch_ ? batch_ : transport_.lock()) t->on_close(channel, ec, reason);
  }
  void on_frames_delivered(transport::Channel& channel) override {
    (void)channel;
    auto t = std::move(batch_);  // released last
    if (t) t->on_frames_delivered();
  }
  bool send_heartbeat(transport::Channel& channel) override { return send_heartbeat_frame(channel); }

 private:
  const std::weak_ptr<NativeClientTransport> transport_;
  std::shared_ptr<NativeClientTransport> batch_;  // during one read's batch (the strand only)
};

std::shared_ptr<NativeClientTransport> NativeClientTransport::create(
    boost::asio::ip::tcp::socket socket, std::shared_ptr<ClientTransportEvents> events,
    std::shared_ptr<const ClientWireSettings> settings) {
  std::shared_ptr<NativeClientTransport> t(new NativeClientTransport(std::move(events), std::move(settings)));
  const auto& c = *t->settings_;
  t->channel_ = transport::Channel::create(std::move(socket), std::make_shared<Handler>(t), c.channel,
                                           c.tls ? &*c.tls : nullptr, c.server_name);
  return t;
}

void NativeClientTransport::start(std::uint64_t hello_id, std::chrono::milliseconds heartbeat, std::uint32_t max_body) {
  channel_->start();
  channel_->send(make_hello(hello_id, heartbeat, true, max_body, settings_->stream_window, settings_->coding.accept));
}

ClientTransport::SendResult NativeClientTransport::send_request(OutgoingRequest& r, std::size_t& body,
                                                                std::uint32_t& limit) {
  transport::Frame f;
  f.header.flags = transport::kFlagRequest | transport::kFlagTwoWay;
  f.header.request_id = r.id;
  if (r.budget.count() > 0) {
    f.header.deadline_ms = static_cast<std::uint32_t>(std::clamp<long long>(r.budget.count(), 1, 0xffffffffLL));
  }
  f.method = r.method;
  f.attachments = std::move(r.attachments);
  f.payload = std::move(r.payload);
  f.lent_key = r.extra_key;
  f.lent_value = r.extra_value;
  if (r.stream) [[unlikely]] {
    const std::uint32_t window = peer_stream_window_.load(std::memory_order_relaxed);
    if (window == 0) {
      r.payload = std::move(f.payload);
      r.attachments = std::move(f.attachments);
      return SendResult::unsupported;
    }
    f.header.flags |= transport::kFlagStream;
    f.header.stream_op = static_cast<std::uint8_t>(StreamOp::open);
    const auto budget = (*r.stream)->remaining_budget().count();
    f.header.deadline_ms = static_cast<std::uint32_t>(std::clamp<long long>(budget, 0, 0xffffffffLL));
    opens_->add(r.id, *r.stream);  // before the send: the acceptance finds it
  }
  // The payload goes compressed in a per-thread buffer, swapped back out
  // after the send (the call keeps its own for a retry or hedge).
  std::string original;
  if (r.compression != transport::Compression::identity) [[unlikely]] {
    if (settings_->coding.accept.contains(r.compression))
      f.header.reply_encoding = static_cast<std::uint8_t>(r.compression);
    std::string& scratch = compression_scratch();
    const auto used =
        compress_payload(f.payload, r.compression, r.compression_level, settings_->coding.threshold,
                         transport::CompressionSet::from_bits(peer_accept_.load(std::memory_order_relaxed)), scratch);
    if (used != transport::Compression::identity) {
      f.header.encoding = static_cast<std::uint8_t>(used);
      original.swap(f.payload);
      f.payload.swap(scratch);
    }
  }
  // Over our own limit, or the server's (from its HELLO): the server would
  // close the connection on it, failing every call there.
  limit = std::min(settings_->channel.max_body, peer_max_body_.load(std::memory_order_relaxed));
  // A bound on the body without walking it: the method's length byte, the
  // attachment count and the lent attachment's framing fit in 16 bytes.
  const std::size_t bound = f.payload.size() + f.method.size() + f.lent_key.size() + f.lent_value.size() + 16;
  body = bound > limit || !f.attachments.empty() ? transport::encoded_size(f) - transport::kHeaderSize
                                                 : 0;  // the common case: below either limit
  const bool too_big = body > limit;
  const error_code ec = too_big ? error_code{} : channel_->send(f);
  r.wire_size = f.payload.size();
  r.compressed = f.header.encoding != 0;
  if (r.compressed) {
    compression_scratch().swap(f.payload);
    f.payload.swap(original);
  }
  r.payload = std::move(f.payload);
  r.attachments = std::move(f.attachments);
  if (r.stream && (too_big || ec)) opens_->take(r.id);
  if (too_big) return SendResult::too_big;
  if (!ec) return SendResult::sent;
  return ec == transport::errc::write_queue_full ? SendResult::queue_full : SendResult::closed;
}

void NativeClientTransport::cancel_request(std::uint64_t id) {
  opens_->take(id);  // an open abandoned: an acceptance crossing the CANCEL is reset
  channel_->send(make_cancel(id));
}

void NativeClientTransport::close(const error_code& ec, const std::string& reason) { channel_->close(ec, reason); }

void NativeClientTransport::on_frame(transport::Channel& ch, transport::Frame& frame) {
  assert(ch.strand().running_in_this_thread());
  if (frame.header.is_event()) {
    if (frame.header.is_request()) {
      if (is_heartbeat(frame)) ch.send(make_heartbeat_reply(frame.header.request_id));
      return;
    }
    if (frame.attachments.empty()) return;  // a heartbeat reply: it refreshed last-read
    const std::uint32_t max_body = hello_max_body(frame);
    peer_max_body_.store(max_body, std::memory_order_relaxed);
    peer_stream_window_.store(hello_stream_window(frame), std::memory_order_relaxed);
    peer_accept_.store(hello_accept(frame).bits(), std::memory_order_relaxed);
    events_->on_handshake(hello_heartbeat(frame), max_body);
    return;
  }
  if (frame.header.is_request()) {
    ch.close(transport::make_error_code(transport::errc::protocol_error), "the server sent a request");
    return;
  }
  if (frame.header.is_stream()) [[unlikely]] {
    if (!on_stream_frame(ch, frame)) return;  // else: the answer to an OPEN, a reply
  }
  IncomingReply reply{frame.header.request_id, static_cast<Status>(frame.header.status),
                      frame.payload,           frame.attachments,
                      frame.payload.size(),    frame.header.encoding != 0};
  if (reply.compressed) [[unlikely]]
    decompress_reply(reply, frame.header.encoding);
  events_->on_transport_reply(reply, settings_->receipt_time(ch));
}

bool NativeClientTransport::on_stream_frame(transport::Channel& ch, transport::Frame& frame) {
  const std::uint64_t id = frame.header.request_id;
  if (stream_op(frame) != StreamOp::open) {
    // A frame crossing the stream's end (a RESET we sent) finds nothing: dropped.
    if (auto s = streams_->find(id)) deliver_stream_frame(*s, frame);
    return false;
  }
  // The answer to an OPEN: accepted (ok), or refused (the status says why).
  auto s = opens_->take(id);
  if (static_cast<Status>(frame.header.status) != Status::ok) return true;
  if (!s ||
      !s->bind(streams_->wire.get([this] { return std::make_shared<NativeStreamWire>(channel_, true); }), streams_, id,
               peer_stream_window_.load(std::memory_order_relaxed), peer_max_body_.load(std::memory_order_relaxed),
               ch.remote(), transport::CompressionSet::from_bits(peer_accept_.load(std::memory_order_relaxed))) ||
      !streams_->add(id, s)) {
    // Abandoned meanwhile (its call timed out or was cancelled): the server is told.
    auto reset = make_stream_frame(StreamOp::reset, id, true);
    ch.send(reset);
  }
  return true;
}

void NativeClientTransport::decompress_reply(IncomingReply& reply, std::uint8_t encoding) {
  std::string why;
  const auto ec =
      decompress_payload(encoding, reply.payload, settings_->coding, settings_->channel.max_body, "the reply", why);
  if (!ec) return;
  // The call fails with that status; the connection is fine (the frame's
  // boundary was intact).
  reply.status = error_status(ec);
  reply.payload = std::move(why);
  reply.attachments.clear();
}

void NativeClientTransport::on_frames_delivered() { events_->on_batch_end(); }

void NativeClientTransport::on_close(transport::Channel& ch, const error_code& ec, const std::string& reason) {
  assert(ch.strand().running_in_this_thread());
  (void)ch;
  opens_->close();  // their calls are lost attempts: the subchannel fails or retries them
  for (auto& s : streams_->close()) s->on_connection_lost(ec, reason);
  events_->on_transport_closed(ec, reason);
}

}  // namespace wheelrpc::rpc::detail
