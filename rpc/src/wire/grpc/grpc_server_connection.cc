// GrpcServerConnection: the session, the calls' headers and messages, and
// what a read delivers (grpc_server_connection.h). The replies and the
// streams' frames going out are in grpc_server_replies.cc.

#include "wire/grpc/grpc_server_connection.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/transport/errc.h>

#include "wire/grpc/grpc_server_call.h"
#include "base/log.h"
#include "base/payload_coding.h"
#include "stream/stream_core.h"
#include "wire/stream_open.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

struct GrpcServerConnection::Callbacks {
  static GrpcServerConnection& self(void* p) { return *static_cast<GrpcServerConnection*>(p); }

  static int begin_headers(nghttp2_session*, const nghttp2_frame* f, void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    return self(p).on_begin_headers(f->hd.stream_id);
  }
  static int header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                    const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                    void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  // trailers: none in gRPC
    return self(p).on_header(f->hd.stream_id, {reinterpret_cast<const char*>(name), namelen},
                             {reinterpret_cast<const char*>(value), valuelen});
  }
  static int frame_recv(nghttp2_session*, const nghttp2_frame* f, void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    auto& c = self(p);
    const bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (f->hd.type) {
      case NGHTTP2_HEADERS:
        if (f->headers.cat == NGHTTP2_HCAT_REQUEST) return c.on_headers_done(f->hd.stream_id, end);
        return end ? c.on_end_stream(f->hd.stream_id) : 0;
      case NGHTTP2_DATA: return end ? c.on_end_stream(f->hd.stream_id) : 0;
      case NGHTTP2_RST_STREAM: return c.on_rst(f->hd.stream_id, f->rst_stream.error_code);
      case NGHTTP2_PING:
        return c.on_ping((f->hd.flags & NGHTTP2_FLAG_ACK) != 0,
                         std::string_view(reinterpret_cast<const char*>(f->ping.opaque_data), 8));
      default: return 0;
    }
  }
  static int frame_send(nghttp2_session*, const nghttp2_frame* f, void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    return self(p).on_frame_sent(f->hd.type, f->hd.flags, f->hd.stream_id);
  }
  static int chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data, std::size_t len,
                   void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    return self(p).on_chunk(stream_id, {reinterpret_cast<const char*>(data), len});
  }
  static int stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t code,
                          void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    return self(p).on_stream_closed(stream_id, code);
  }
  static ssize_t read(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf, std::size_t length,
                      std::uint32_t* flags, nghttp2_data_source*, void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    return self(p).read_out(stream_id, buf, length, flags);
  }
};

nghttp2_data_provider GrpcServerConnection::data_provider() noexcept {
  nghttp2_data_provider prd;
  prd.source.ptr = nullptr;
  prd.read_callback = &Callbacks::read;
  return prd;
}

std::shared_ptr<GrpcServerConnection> GrpcServerConnection::create(
    const ConnContextPtr& context, const std::shared_ptr<transport::Channel>& channel,
    std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms) {
  std::shared_ptr<GrpcServerConnection> self(new GrpcServerConnection(context, channel));
  self->heartbeat_ms_ = std::move(heartbeat_ms);
  // No HELLO agrees a heartbeat here: the server's own interval applies.
  const auto agreed = context->events->agree_heartbeat(std::nullopt);
  self->heartbeat_ms_->store(agreed.count(), std::memory_order_relaxed);
  // On the channel's strand (Channel::switch_to_http2). Data the client never
  // acknowledges fails the connection within its idle limit too (gRFC A18).
  if (const auto user_timeout = context->settings->user_timeout_for(agreed); user_timeout.count() > 0) {
    if (auto ec = channel->set_user_timeout(user_timeout)) {
      logger()->debug("conn={} TCP_USER_TIMEOUT not set: {}", channel->id(), ec.message());
    }
  }
  context->transport = std::weak_ptr<ServerTransport>(std::static_pointer_cast<ServerTransport>(self));
  context->peer_stream_window.store(kMinStreamWindow, std::memory_order_relaxed);
  self->start_session();
  return self;
}

GrpcServerConnection::GrpcServerConnection(const ConnContextPtr& context,
                                           const std::shared_ptr<transport::Channel>& channel)
    : context_(context),
      channel_(channel),
      raw_channel_(channel.get()),
      remote_(channel->remote()),
      id_(channel->id()),
      options_(context->settings->grpc),
      accept_encoding_(grpc_accept_encoding(context->settings->coding.accept)) {}

GrpcServerConnection::~GrpcServerConnection() = default;

void GrpcServerConnection::start_session() {
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &Callbacks::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &Callbacks::header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Callbacks::frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Callbacks::chunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &Callbacks::frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Callbacks::stream_close);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Windows open as the application takes what came (a stream's reads).
  nghttp2_option_set_no_auto_window_update(opt, 1);
  // nghttp2's own bound on resets sits above ours (on_rst), which says why.
  nghttp2_option_set_stream_reset_rate_limit(opt, 4 * std::uint64_t{options_.max_resets_burst} + 1000,
                                             4 * std::uint64_t{options_.resets_per_second} + 100);
  // SETTINGS and PING ACKs owed at once: the session's output is taken after
  // every kReadSliceBytes read, so only a burst within one slice (a legitimate
  // client sends one or two) piles them up; past this many it is a flood,
  // answered with GOAWAY ENHANCE_YOUR_CALM (flush).
  nghttp2_option_set_max_outbound_ack(opt, kMaxOwedAcks);
  nghttp2_session* s = nullptr;
  nghttp2_session_server_new2(&s, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  common::LockGuard lock(mu_);
  session_.reset(s);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, std::min<std::uint32_t>(options_.stream_window, NGHTTP2_MAX_WINDOW_SIZE)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, options_.max_header_list_bytes},
  };
  nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(
      s, NGHTTP2_FLAG_NONE, 0,
      static_cast<std::int32_t>(std::min<std::uint32_t>(options_.connection_window, NGHTTP2_MAX_WINDOW_SIZE)));
  reset_tokens_ = options_.max_resets_burst;
  reset_refill_ = std::chrono::steady_clock::now();
}

boost::asio::any_io_executor GrpcServerConnection::executor() const {
  const auto channel = channel_.lock();
  return channel ? boost::asio::any_io_executor(channel->strand()) : boost::asio::any_io_executor();
}

void GrpcServerConnection::on_frame(transport::Channel&, transport::Frame&) {}  // a byte channel has none

// ---- reading -----------------------------------------------------------------

void GrpcServerConnection::on_data(transport::Channel& channel, std::string_view bytes) {
  std::vector<Delivery> batch;
  while (!bytes.empty()) {
    const std::string_view slice = bytes.substr(0, kReadSliceBytes);
    bytes.remove_prefix(slice.size());
    {
      common::LockGuard lock(mu_);
      if (!session_ || closing_) return;
      if (!take(channel, slice)) bytes = {};
      batch.swap(batch_);
    }
    deliver(batch);
    batch.clear();
    if (!bytes.empty()) channel.flush_partial();  // the answers so far go out while the rest are handled
  }
}

bool GrpcServerConnection::take(transport::Channel& channel, std::string_view bytes) {
  const ssize_t rv =
      nghttp2_session_mem_recv(session_.get(), reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (rv < 0) {
    // A flood (frames we must answer, sent faster than read) or bad input
    // nghttp2 could not even answer: what it queued goes out, then a
    // GOAWAY if it queued none, then the close.
    fail_reason_ = fmt::format("HTTP/2: {}", nghttp2_strerror(static_cast<int>(rv)));
    fatal_code_ =
        rv == NGHTTP2_ERR_FLOODED ? std::uint32_t{NGHTTP2_ENHANCE_YOUR_CALM} : std::uint32_t{NGHTTP2_PROTOCOL_ERROR};
    context_->events->note_bad_input(BadInput::http2, channel, fail_reason_);
  }
  flush(rv < 0);
  return rv >= 0;
}

GrpcServerConnection::Call* GrpcServerConnection::find(std::int32_t stream_id) {
  // nghttp2 calls back a dozen times per frame on one stream: the last one found first.
  if (last_found_ && last_found_->id == stream_id) return last_found_;
  const auto it = calls_.find(stream_id);
  if (it == calls_.end()) return nullptr;
  last_found_ = it->second.get();
  return last_found_;
}

int GrpcServerConnection::on_begin_headers(std::int32_t stream_id) {
  auto call = std::make_unique<Call>(stream_id, context_->settings->channel.max_body);
  calls_[stream_id] = std::move(call);
  return 0;
}

int GrpcServerConnection::on_header(std::int32_t stream_id, std::string_view name, std::string_view value) {
  Call* c = find(stream_id);
  if (!c) return 0;
  c->header_bytes += name.size() + value.size() + 32;  // as SETTINGS_MAX_HEADER_LIST_SIZE counts them
  if (c->header_bytes > options_.max_header_list_bytes) {
    c->header_overflow = true;
    return 0;  // the rest is only counted; the call is refused once its headers end
  }
  c->read_header(name, value);
  return 0;
}

int GrpcServerConnection::on_headers_done(std::int32_t stream_id, bool end_stream) {
  Call* c = find(stream_id);
  if (!c) return 0;
  c->remote_closed = end_stream;
  c->check_headers();
  if (c->header_overflow) {
    refuse(*c, StatusCode::resource_exhausted,
           fmt::format("request headers over the server's limit of {} bytes (GrpcServerOptions::max_header_list_bytes)",
                       options_.max_header_list_bytes),
           431);
    return 0;
  }
  if (c->problem_status != 0) {
    refuse(*c, c->problem_code, c->problem, c->problem_status);
    return 0;
  }
  c->is_stream = context_->events->is_stream_method(c->method);
  // A wheelrpc client says which kind it meant: a mismatch gets the native wire's answer.
  if (c->from_wheelrpc && c->is_stream != c->opened_as_stream) [[unlikely]] {
    if (auto why = context_->events->kind_mismatch(c->method, c->opened_as_stream)) {
      refuse(*c, StatusCode::unimplemented, std::move(*why));
      return 0;
    }
  }
  if (c->is_stream) {
    Delivery d{Delivery::Kind::open, stream_id};
    d.method = c->method;
    d.metadata = std::move(c->metadata);
    d.budget = c->timeout.value_or(std::chrono::milliseconds(0));
    d.encoding = c->encoding;
    d.accept = c->accept;
    batch_.push_back(std::move(d));
    c->dispatched = true;
    if (end_stream) batch_.push_back(Delivery{Delivery::Kind::half_close, stream_id});
    return 0;
  }
  if (end_stream) refuse(*c, StatusCode::internal, "the client sent no request message for a unary method");
  return 0;
}

int GrpcServerConnection::on_chunk(std::int32_t stream_id, std::string_view bytes) {
  Call* c = find(stream_id);
  if (!c || c->refused || !c->is_stream) {
    // A unary request's bytes are taken at once: its size is bounded by
    // max_body, which the reader enforces before buffering.
    nghttp2_session_consume(session_.get(), stream_id, bytes.size());
    if (!c || c->refused) return 0;
  } else {
    c->held += bytes.size();
  }
  // The reader calls back right here, under `mu_` (the analysis does not follow into lambdas).
  const bool fed = c->reader.feed(bytes, [&](std::string& m, bool compressed)
                                             WHEELRPC_NO_THREAD_SAFETY_ANALYSIS { on_message(*c, m, compressed); });
  if (fed && c->is_stream) take_partial(*c);
  if (!fed) {
    if (c->is_stream) {
      Delivery d{Delivery::Kind::reset, stream_id};
      d.payload = c->reader.error();
      d.code = c->reader.error_code();
      batch_.push_back(std::move(d));
      c->refused = true;
    } else {
      refuse(*c, c->reader.error_code(), fmt::format("the request to '{}': {}", c->method, c->reader.error()));
    }
  }
  return 0;
}

void GrpcServerConnection::take_partial(Call& c) {
  // A message not yet complete is taken as it comes: it may be larger than
  // the window, and the handler cannot read it before it is whole (its
  // size is bounded by the message limit). Whole messages the handler has
  // not read are what holds the window.
  const std::size_t partial = c.reader.partial_bytes();
  if (partial <= c.partial_taken) return;
  const std::size_t n = std::min(partial - c.partial_taken, c.held);
  nghttp2_session_consume(session_.get(), c.id, n);
  c.held -= n;
  c.partial_taken += n;
}

void GrpcServerConnection::on_message(Call& c, std::string& message, bool compressed) {
  if (c.refused) return;
  if (compressed && c.encoding == transport::Compression::identity) {
    const std::string why = "a message flagged compressed on a call whose grpc-encoding is identity";
    if (c.is_stream) {
      Delivery d{Delivery::Kind::reset, c.id};
      d.payload = why;
      d.code = StatusCode::internal;
      batch_.push_back(std::move(d));
      c.refused = true;
    } else {
      refuse(c, StatusCode::internal, why);
    }
    return;
  }
  if (c.is_stream) {
    // Its bytes open the window again once the handler reads it; what of it
    // was taken while it was incomplete (take_partial) is not counted twice.
    c.unconsumed.emplace_back(message_cost(message.size()), kGrpcPrefix + message.size() - c.partial_taken);
    c.partial_taken = 0;
    Delivery d{Delivery::Kind::message, c.id};
    d.payload = std::move(message);
    d.compressed = compressed;
    d.encoding = c.encoding;
    batch_.push_back(std::move(d));
    return;
  }
  if (c.has_request) {
    refuse(c, StatusCode::internal, fmt::format("more than one request message for the unary method '{}'", c.method));
    return;
  }
  c.has_request = true;
  c.request = std::move(message);
  c.request_compressed = compressed;
}

int GrpcServerConnection::on_end_stream(std::int32_t stream_id) {
  Call* c = find(stream_id);
  if (!c) return 0;
  c->remote_closed = true;
  if (c->refused) return 0;
  if (c->is_stream) {
    if (!c->reader.at_boundary()) {
      Delivery d{Delivery::Kind::reset, stream_id};
      d.payload = "the client ended the stream inside a message";
      d.code = StatusCode::internal;
      batch_.push_back(std::move(d));
      c->refused = true;
      return 0;
    }
    batch_.push_back(Delivery{Delivery::Kind::half_close, stream_id});
    return 0;
  }
  if (c->dispatched) return 0;
  if (!c->has_request || !c->reader.at_boundary()) {
    refuse(*c, StatusCode::internal,
           c->has_request ? "the client ended the call inside a message" : "the client sent no request message");
    return 0;
  }
  c->dispatched = true;
  Delivery d{Delivery::Kind::request, stream_id};
  d.method = c->method;
  d.payload = std::move(c->request);
  d.metadata = std::move(c->metadata);
  d.budget = c->timeout.value_or(std::chrono::milliseconds(0));
  d.compressed = c->request_compressed;
  d.encoding = c->encoding;
  batch_.push_back(std::move(d));
  return 0;
}

int GrpcServerConnection::on_rst(std::int32_t stream_id, std::uint32_t code) {
  // Rapid reset (CVE-2023-44487): a token bucket of resets per connection.
  const auto now = std::chrono::steady_clock::now();
  reset_tokens_ = std::min<double>(
      options_.max_resets_burst,
      reset_tokens_ + std::chrono::duration<double>(now - reset_refill_).count() * options_.resets_per_second);
  reset_refill_ = now;
  if (reset_tokens_ < 1) {
    goaway(NGHTTP2_ENHANCE_YOUR_CALM,
           fmt::format("too many stream resets: over {} at once or {} a second (GrpcServerOptions::max_resets_burst, "
                       "resets_per_second)",
                       options_.max_resets_burst, options_.resets_per_second));
    return 0;
  }
  reset_tokens_ -= 1;
  Call* c = find(stream_id);
  if (!c) return 0;
  c->reset_by_client = true;
  if (!c->dispatched) return 0;
  if (c->is_stream) {
    Delivery d{Delivery::Kind::reset, stream_id};
    d.payload = fmt::format("the client reset the stream ({})", http2_error_name(code));
    d.code = StatusCode::cancelled;
    batch_.push_back(std::move(d));
  } else {
    context_->cancels.add(static_cast<std::uint64_t>(stream_id));  // ServerContext::cancelled(); its reply is dropped
  }
  return 0;
}

int GrpcServerConnection::on_stream_closed(std::int32_t stream_id, std::uint32_t code) {
  const auto it = calls_.find(stream_id);
  if (it == calls_.end()) return 0;
  Call& c = *it->second;
  // What a stream's handler never read is given back to the connection's window.
  if (c.held > 0) nghttp2_session_consume_connection(session_.get(), c.held);
  if (c.is_stream && c.dispatched && !c.reset_by_client && !c.ended_here && code != NGHTTP2_NO_ERROR) {
    Delivery d{Delivery::Kind::reset, stream_id};
    d.payload = fmt::format("the HTTP/2 stream closed ({})", http2_error_name(code));
    d.code = StatusCode::cancelled;
    batch_.push_back(std::move(d));
  }
  if (last_found_ == &c) last_found_ = nullptr;
  calls_.erase(it);
  return 0;
}

int GrpcServerConnection::on_ping(bool ack, std::string_view opaque) {
  if (ack) {
    if (drain_ping_sent_ && opaque == kDrainPing) {
      // The client has seen the first GOAWAY: the final one names the last stream taken.
      drain_ping_sent_ = false;
      nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_.get()),
                            NGHTTP2_NO_ERROR, nullptr, 0);
    }
    return 0;
  }
  // Keepalive enforcement, as gRPC servers do it.
  const auto now = std::chrono::steady_clock::now();
  if (!data_since_ping_ && last_ping_ != std::chrono::steady_clock::time_point{} &&
      now - last_ping_ < options_.min_ping_interval && ++ping_strikes_ > options_.max_ping_strikes) {
    goaway(NGHTTP2_ENHANCE_YOUR_CALM, "too_many_pings");
    return 0;
  }
  last_ping_ = now;
  data_since_ping_ = false;
  return 0;
}

void GrpcServerConnection::refuse(Call& c, StatusCode code, std::string message, int http_status) {
  if (c.refused) return;
  c.refused = true;
  if (code != StatusCode::unimplemented || http_status != 200) note_bad_request(message);
  logger()->debug("conn={} gRPC call '{}' refused: {}", id_, c.method, message);
  submit_end(c, code, message, nullptr, http_status, false);
  // The client may still be sending: once the answer is out, it need not
  // (on_frame_sent). Not now: a stream with RST_STREAM queued is closing,
  // and nghttp2 drops the answer still queued on it.
}

int GrpcServerConnection::on_frame_sent(std::uint8_t type, std::uint8_t flags, std::int32_t stream_id) {
  if (type == NGHTTP2_GOAWAY) goaway_out_ = true;
  if (type != NGHTTP2_DATA && type != NGHTTP2_HEADERS) return 0;
  // Keepalive enforcement counts as gRPC servers do: headers or data sent
  // clear the strikes (clients probe as data arrives, many times in one
  // large message).
  data_since_ping_ = true;
  ping_strikes_ = 0;
  if (type != NGHTTP2_HEADERS || (flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
  // An answer ended its stream.
  Call* c = find(stream_id);
  if (c && c->refused && !c->remote_closed) {
    nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR);
  }
  return 0;
}

void GrpcServerConnection::note_bad_request(std::string_view why) {
  context_->events->count_undecodable();
  if (++bad_requests_ > options_.max_bad_requests) {
    goaway(NGHTTP2_ENHANCE_YOUR_CALM,
           fmt::format("over {} refused requests on this connection (GrpcServerOptions::max_bad_requests); the last: "
                       "{}",
                       options_.max_bad_requests, why));
  }
}

void GrpcServerConnection::goaway(std::uint32_t code, std::string_view debug) {
  if (goaway_sent_) return;
  goaway_sent_ = true;
  fail_reason_ = fmt::format("GOAWAY {}: {}", http2_error_name(code), debug);
  logger()->warn("conn={} peer={} {}", id_, remote_, fail_reason_);
  nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_.get()),
                        code, reinterpret_cast<const std::uint8_t*>(debug.data()), debug.size());
  nghttp2_session_terminate_session(session_.get(), code);  // no more reads; the GOAWAY above is the one sent
}

// ---- delivering what a read decoded ------------------------------------------

void GrpcServerConnection::deliver(std::vector<Delivery>& batch) {
  if (batch.empty()) return;
  ServerEvents& events = *context_->events;
  const ServerWireSettings& settings = *context_->settings;
  transport::Channel& channel = *raw_channel_;
  for (auto& d : batch) {
    switch (d.kind) {
      case Delivery::Kind::request: {
        IncomingRequest request{static_cast<std::uint64_t>(d.stream_id),
                                true,
                                d.method,
                                d.payload,
                                d.metadata,
                                d.budget,
                                settings.receipt_time(channel),
                                d.payload.size(),
                                d.compressed,
                                kGrpcDefaultReplyCompression,
                                {}};
        if (d.compressed) {
          std::string why;
          request.decode_error = decompress_payload(static_cast<std::uint8_t>(d.encoding), d.payload, settings.coding,
                                                    settings.channel.max_body, "the request", why);
          if (request.decode_error) d.payload = std::move(why);
        }
        events.on_request(*this, request, context_);
        break;
      }
      case Delivery::Kind::open: {
        StreamOpenRequest open{static_cast<std::uint64_t>(d.stream_id), d.method, d.metadata};
        open.budget = d.budget;
        open.received = settings.receipt_time(channel);
        open.reply_compression = kGrpcDefaultReplyCompression;
        open.wire = shared_from_this();
        open.peer_window = settings.stream_window;  // credit is HTTP/2's: the stream only paces its own writes
        open.receive_window = stream_receive_window();
        open.peer_max_body = context_->peer_max_body.load(std::memory_order_relaxed);
        open.peer_accept = d.accept;
        events.on_stream_open(*this, open, context_);
        break;
      }
      case Delivery::Kind::message:
      case Delivery::Kind::half_close:
      case Delivery::Kind::reset: {
        auto s = context_->streams->find(static_cast<std::uint64_t>(d.stream_id));
        if (!s) break;
        if (d.kind == Delivery::Kind::reset) {
          s->end_local(make_error_code(d.code), std::move(d.payload),
                       d.code == StatusCode::cancelled ? StreamEnd::cancelled : StreamEnd::protocol);
          break;
        }
        if (d.kind == Delivery::Kind::half_close) {
          s->on_half_close();
        } else {
          s->on_message(d.payload, d.compressed ? static_cast<std::uint8_t>(d.encoding) : 0, nullptr);
        }
        break;
      }
    }
  }
  batch.clear();
}

std::uint32_t GrpcServerConnection::stream_receive_window() const noexcept {
  return detail::stream_receive_window(options_.stream_window);
}

void GrpcServerConnection::on_close(transport::Channel& channel, const error_code& ec, const std::string& reason) {
  std::string why = reason;
  {
    common::LockGuard lock(mu_);
    closed_ = true;
    batch_.clear();
    if (!fail_reason_.empty() && why.find(fail_reason_) == std::string::npos) why = fail_reason_ + "; " + reason;
  }
  for (auto& s : context_->streams->close()) s->on_connection_lost(ec, why);
  context_->events->on_connection_closed(channel.id());
}

}  // namespace wheelrpc::rpc::detail
