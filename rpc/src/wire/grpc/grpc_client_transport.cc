#include "wire/grpc/grpc_client_transport.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <deque>
#include <optional>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/transport/errc.h>

#include "wire/grpc/grpc_client_call.h"
#include "wire/grpc/grpc_client_compression.h"
#include "wire/grpc/grpc_wire.h"
#include "base/log.h"
#include "base/payload_coding.h"
#include "stream/stream_core.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

class GrpcClientTransport::Handler final : public transport::ChannelHandler {
 public:
  explicit Handler(std::weak_ptr<GrpcClientTransport> t) : transport_(std::move(t)) {}
  void on_frame(transport::Channel&, transport::Frame&) override {}
  void on_data(transport::Channel& channel, std::string_view bytes) override {
    if (!batch_) batch_ = transport_.lock();
    if (batch_) batch_->on_data(channel, bytes);
  }
  void on_close(transport::Channel& channel, const error_code& ec, const std::string& reason) override {
    if (auto t = batch_ ? batch_ : transport_.lock()) t->on_close(channel, ec, reason);
  }
  void on_frames_delivered(transport::Channel&) override {
    auto t = std::move(batch_);
    if (t) t->on_frames_delivered();
  }
  bool send_heartbeat(transport::Channel&) override {
    auto t = transport_.lock();
    return t && t->send_heartbeat();
  }

 private:
  const std::weak_ptr<GrpcClientTransport> transport_;
  std::shared_ptr<GrpcClientTransport> batch_;
};

struct GrpcClientTransport::Callbacks {
  static GrpcClientTransport& self(void* p) { return *static_cast<GrpcClientTransport*>(p); }
  static int header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                    const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                    void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    if (f->hd.type != NGHTTP2_HEADERS) return 0;
    // A trailers-only response (HEADERS that end the stream) is all trailers.
    const bool trailers = f->headers.cat == NGHTTP2_HCAT_HEADERS || (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    return self(p).on_header(f->hd.stream_id, trailers, {reinterpret_cast<const char*>(name), namelen},
                             {reinterpret_cast<const char*>(value), valuelen});
  }
  static int frame_recv(nghttp2_session*, const nghttp2_frame* f, void* p) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    auto& c = self(p);
    const bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (f->hd.type) {
      case NGHTTP2_HEADERS: return c.on_headers_done(f->hd.stream_id, f->headers.cat == NGHTTP2_HCAT_HEADERS, end);
      case NGHTTP2_DATA: return end ? c.on_headers_done(f->hd.stream_id, true, true) : 0;
      case NGHTTP2_SETTINGS: return (f->hd.flags & NGHTTP2_FLAG_ACK) != 0 ? 0 : c.on_settings();
      case NGHTTP2_GOAWAY:
        return c.on_goaway(f->goaway.error_code,
                           {reinterpret_cast<const char*>(f->goaway.opaque_data), f->goaway.opaque_data_len});
      default: return 0;
    }
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

nghttp2_data_provider GrpcClientTransport::data_provider() noexcept {
  nghttp2_data_provider prd;
  prd.source.ptr = nullptr;
  prd.read_callback = &Callbacks::read;
  return prd;
}

GrpcClientTransport::GrpcClientTransport(std::shared_ptr<ClientTransportEvents> events,
                                         std::shared_ptr<const ClientWireSettings> settings, std::string authority)
    : events_(std::move(events)),
      settings_(std::move(settings)),
      authority_(std::move(authority)),
      accept_encoding_(grpc_accept_encoding(settings_->coding.accept)) {}

GrpcClientTransport::~GrpcClientTransport() = default;

std::shared_ptr<GrpcClientTransport> GrpcClientTransport::create(boost::asio::ip::tcp::socket socket,
                                                                 std::shared_ptr<ClientTransportEvents> events,
                                                                 std::shared_ptr<const ClientWireSettings> settings,
                                                                 std::string authority) {
  std::shared_ptr<GrpcClientTransport> t(
      new GrpcClientTransport(std::move(events), std::move(settings), std::move(authority)));
  const auto& c = *t->settings_;
  auto options = c.channel;
  options.raw = true;
  t->channel_ = transport::Channel::create(std::move(socket), std::make_shared<Handler>(t), options,
                                           c.tls ? &*c.tls : nullptr, c.server_name);
  t->max_body_ = c.channel.max_body;
  return t;
}

void GrpcClientTransport::start(std::uint64_t, std::chrono::milliseconds heartbeat, std::uint32_t) {
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &Callbacks::header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Callbacks::frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Callbacks::chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Callbacks::stream_close);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_session* s = nullptr;
  nghttp2_session_client_new2(&s, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  window_ = std::clamp<std::uint32_t>(settings_->stream_window, 65535, 1u << 24);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window_},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 64u << 10},
  };
  common::LockGuard lock(mu_);
  session_.reset(s);
  heartbeat_ = heartbeat;
  nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, 0, 16 << 20);
  channel_->pause_keepalive(true);  // no calls yet: no PINGs (see the header)
  channel_->start();
  flush();
}

ClientTransport::SendResult GrpcClientTransport::send_request(OutgoingRequest& r, std::size_t& body,
                                                              std::uint32_t& limit) {
  limit = max_body_;
  body = r.payload.size() + kGrpcPrefix;
  if (body > limit) return SendResult::too_big;
  // Compressed (gzip or deflate: the ones every gRPC server decodes; zstd
  // and lz4 fall back to gzip) in the per-thread scratch.
  const transport::Compression alg = grpc_call_compression(r.compression);
  const int level = grpc_call_compression_level(r.compression, alg, r.compression_level);
  if (alg != r.compression) note_fallback(r);
  std::string* payload = &r.payload;
  transport::Compression used = transport::Compression::identity;
  if (alg != transport::Compression::identity) {
    used = compress_payload(r.payload, alg, level, settings_->coding.threshold, transport::CompressionSet().insert(alg),
                            compression_scratch());
    if (used != transport::Compression::identity) payload = &compression_scratch();
  }
  HeaderBlock h;
  h.add(":method", "POST");
  h.add(":scheme", settings_->tls ? "https" : "http");
  // A method without a service ("echo") goes as "/echo", which a wheelrpc server serves as "echo".
  if (r.method.empty() || r.method[0] != '/') {
    h.add(":path", "/" + std::string(r.method));
  } else {
    h.add(":path", r.method);
  }
  h.add(":authority", authority_);
  h.add("content-type", "application/grpc");
  h.add("te", "trailers");
  h.add("user-agent", kWheelrpcUserAgent);
  if (r.stream) h.add(kKindHeader, "stream");
  const auto budget = r.stream ? (*r.stream)->remaining_budget() : r.budget;
  if (budget.count() > 0) h.add("grpc-timeout", format_grpc_timeout(budget), !index_name_once(kTimeoutName));
  if (used != transport::Compression::identity) {
    h.add("grpc-encoding", grpc_encoding_name(used));
  } else if (r.stream && alg != transport::Compression::identity) {
    h.add("grpc-encoding", grpc_encoding_name(alg));  // its messages' algorithm
  }
  h.add("grpc-accept-encoding", accept_encoding_);
  const auto add_md = [&h](std::string_view k, std::string_view v, bool never_index) {
    if (is_reserved_header(k) || !valid_metadata_key(k)) return;
    if (is_binary_key(k)) {
      h.add(k, base64_encode(v), never_index);
    } else {
      h.add(k, v, never_index);
    }
  };
  for (const auto& [k, v] : r.attachments) add_md(k, v, false);
  // The traceparent is new with every call: never in the HPACK tables.
  if (!r.extra_key.empty()) add_md(r.extra_key, r.extra_value, !index_name_once(kTraceName));

  common::LockGuard lock(mu_);
  if (!session_ || closed_ || goaway_ || !handshake_done_) return SendResult::closed;
  const auto prd = data_provider();
  const auto& nv = h.nv();
  const std::int32_t sid = nghttp2_submit_request(session_.get(), nullptr, nv.data(), nv.size(), &prd, nullptr);
  if (sid < 0) {
    goaway_ = true;  // out of stream ids: a new connection takes the next calls
    return SendResult::closed;
  }
  auto call = std::make_unique<Call>(sid, r.id, r.stream ? std::numeric_limits<std::uint32_t>::max() : max_body_);
  Call& c = *call;
  calls_[sid] = std::move(call);
  by_request_[r.id] = sid;
  activity(+1);
  if (r.stream) {
    c.stream = *r.stream;
    c.reader = GrpcMessageReader(c.stream->max_message());
    // Bound before anything is written: nothing of it can arrive unbound. (It
    // sends nothing from bind, so taking its lock here, under ours, is safe.)
    if (!c.stream->bind(
            shared_from_this(), streams_, static_cast<std::uint64_t>(sid), kGrpcClientStreamCredit, max_body_,
            channel_->remote(),
            transport::CompressionSet().insert(transport::Compression::gzip).insert(transport::Compression::deflate),
            stream_receive_window(window_)) ||
        !streams_->add(static_cast<std::uint64_t>(sid), c.stream)) {
      nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL);
    } else {
      // A gRPC server answers a stream when it likes: it counts as accepted now.
      Delivery d(Delivery::Kind::reply);
      d.request_id = r.id;
      batch_.push_back(std::move(d));
      asio::post(channel_->strand(), [self = shared_from_this()] { self->on_frames_delivered(); });
    }
  } else {
    append_grpc_prefix(c.out, used != transport::Compression::identity, payload->size());
    c.out.append(*payload);
    c.out_end = true;
  }
  r.wire_size = payload->size();
  r.compressed = used != transport::Compression::identity;
  flush();
  return SendResult::sent;
}

void GrpcClientTransport::note_fallback(OutgoingRequest& r) {
  // A stream's messages are compressed by the stream, which was made with the
  // call's algorithm: it is told the one this wire carries.
  if (r.stream) (*r.stream)->set_compression(grpc_call_compression(r.compression), 0);
  if (fallback_noted_.exchange(true, std::memory_order_relaxed) || !first_compression_fallback(settings_)) return;
  logger()->warn(
      "conn={} peer={} method={} compression {} is not gRPC's (gRPC defines gzip and deflate): this client's calls "
      "that choose it go gzip-compressed on the gRPC wire (said once per client)",
      channel_->id(), channel_->remote(), r.method, transport::to_string(r.compression));
}

void GrpcClientTransport::cancel_request(std::uint64_t id) {
  common::LockGuard lock(mu_);
  if (!session_ || closed_) return;
  const auto it = by_request_.find(id);
  if (it == by_request_.end()) return;
  nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, it->second, NGHTTP2_CANCEL);
  if (Call* c = find(it->second)) c->finished = true;  // no reply for an abandoned call
  flush();
}

void GrpcClientTransport::close(const error_code& ec, const std::string& reason) { channel_->close(ec, reason); }

bool GrpcClientTransport::index_name_once(unsigned name) {
  // Read first: after a connection's first calls, no locked write per call.
  if (names_indexed_.load(std::memory_order_relaxed) & name) return false;
  return (names_indexed_.fetch_or(name, std::memory_order_relaxed) & name) == 0;
}

GrpcClientTransport::Call* GrpcClientTransport::find(std::int32_t stream_id) {
  // nghttp2 calls back several times per frame on one stream: the last one found first.
  if (last_found_ && last_found_->stream_id == stream_id) return last_found_;
  const auto it = calls_.find(stream_id);
  if (it == calls_.end()) return nullptr;
  last_found_ = it->second.get();
  return last_found_;
}

void GrpcClientTransport::activity(int delta) {
  const bool was = active_ > 0;
  active_ += delta;
  if (was != (active_ > 0)) channel_->pause_keepalive(active_ == 0);
}

// ---- reading -----------------------------------------------------------------

void GrpcClientTransport::on_data(transport::Channel& channel, std::string_view bytes) {
  std::vector<Delivery> batch;
  while (!bytes.empty()) {  // a slice at a time, as GrpcServerConnection::on_data
    const std::string_view slice = bytes.substr(0, kReadSliceBytes);
    bytes.remove_prefix(slice.size());
    {
      common::LockGuard lock(mu_);
      if (!session_ || closed_) return;
      const ssize_t rv =
          nghttp2_session_mem_recv(session_.get(), reinterpret_cast<const std::uint8_t*>(slice.data()), slice.size());
      if (rv < 0) goaway_reason_ = fmt::format("HTTP/2: {}", nghttp2_strerror(static_cast<int>(rv)));
      flush();
      if (rv < 0) {
        close_later(transport::make_error_code(transport::errc::protocol_error), goaway_reason_);
        bytes = {};
      }
      batch.swap(batch_);
    }
    deliver(batch);
    batch.clear();
    if (!bytes.empty()) channel.flush_partial();  // requests made from the first replies go out now
  }
}

int GrpcClientTransport::on_settings() {
  if (handshake_done_) return 0;
  handshake_done_ = true;
  batch_.emplace_back(Delivery::Kind::handshake);
  return 0;
}

int GrpcClientTransport::on_goaway(std::uint32_t code, std::string_view debug) {
  goaway_ = true;  // calls above its last stream are closed REFUSED_STREAM by nghttp2: retried elsewhere
  goaway_reason_ =
      fmt::format("the server sent GOAWAY {}{}{}", http2_error_name(code), debug.empty() ? "" : ": ", debug);
  if (code == NGHTTP2_ENHANCE_YOUR_CALM && debug == "too_many_pings") {
    // The server allows fewer PINGs than we sent: the next connection pings half as often.
    events_->on_too_many_pings();
  }
  logger()->info("conn={} {}", channel_->id(), goaway_reason_);
  events_->on_goaway();
  return 0;
}

int GrpcClientTransport::on_header(std::int32_t stream_id, bool trailers, std::string_view name,
                                   std::string_view value) {
  Call* c = find(stream_id);
  if (!c || c->finished) return 0;
  if (name == ":status") {
    c->http_status = std::atoi(std::string(value).c_str());
  } else if (name == "content-type") {
    c->grpc_content = value.rfind("application/grpc", 0) == 0;
  } else if (name == "grpc-status") {
    c->grpc_status = std::atoi(std::string(value).c_str());
  } else if (name == "grpc-message") {
    c->grpc_message = percent_decode(value);
  } else if (name == "grpc-encoding") {
    if (auto e = parse_grpc_encoding(value)) {
      c->encoding = *e;
    } else {
      c->bad_encoding = true;
    }
  } else if (!is_reserved_header(name) && valid_metadata_key(name)) {
    if (trailers && !c->marker_added) {
      c->metadata.emplace_back(std::string(kTrailersMarker), std::string());
      c->marker_added = true;
    }
    std::string v(value);
    if (is_binary_key(name)) {
      std::string bytes;
      if (base64_decode(value, bytes)) v = std::move(bytes);
    }
    c->metadata.emplace_back(std::string(name), std::move(v));
  }
  return 0;
}

namespace {
/// gRPC's reading of an HTTP status that came without a grpc-status (doc/http-grpc-status-mapping.md).
StatusCode code_of_http(int status) {
  switch (status) {
    case 400: return StatusCode::internal;
    case 401: return StatusCode::unauthenticated;
    case 403: return StatusCode::permission_denied;
    case 404: return StatusCode::unimplemented;
    case 429:
    case 502:
    case 503:
    case 504: return StatusCode::unavailable;
    default: return StatusCode::unknown;
  }
}
Status code_status(StatusCode c) { return status_of_grpc(static_cast<int>(c)); }
}  // namespace

int GrpcClientTransport::on_headers_done(std::int32_t stream_id, bool trailers, bool end_stream) {
  Call* c = find(stream_id);
  if (!c || c->finished) return 0;
  if (!trailers && !end_stream) {
    // The response's headers: a non-gRPC answer ends the call at once.
    if (c->http_status != 200) {
      finish(*c, code_status(code_of_http(c->http_status)),
             fmt::format("the server answered HTTP {} (not a gRPC response)", c->http_status));
      nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    } else if (!c->grpc_content) {
      finish(*c, code_status(StatusCode::unknown), "the server's response is not application/grpc");
      nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    }
    return 0;
  }
  if (!end_stream) return 0;
  // The trailers (or a trailers-only response, or END_STREAM on DATA).
  if (!c->grpc_status) {
    const bool http_ok = c->http_status == 200;
    finish(*c, code_status(http_ok ? StatusCode::internal : code_of_http(c->http_status)),
           http_ok ? "the server ended the call without a grpc-status"
                   : fmt::format("the server answered HTTP {} without a grpc-status", c->http_status));
    return 0;
  }
  const int code = *c->grpc_status;
  if (code == 0 && !c->problem.empty()) {
    finish(*c, code_status(StatusCode::internal), c->problem);
  } else if (code == 0 && !c->stream && !c->has_message) {
    finish(*c, code_status(StatusCode::internal), "the server's OK reply carries no message");
  } else {
    finish(*c, status_of_grpc(code), c->grpc_message);
  }
  return 0;
}

int GrpcClientTransport::on_chunk(std::int32_t stream_id, std::string_view bytes) {
  Call* c = find(stream_id);
  if (!c || c->finished || !c->stream) {
    nghttp2_session_consume(session_.get(), stream_id, bytes.size());
    if (!c || c->finished) return 0;
  } else {
    c->held += bytes.size();
  }
  // The reader calls back right here, under `mu_` (the analysis does not follow into lambdas).
  const bool ok = c->reader.feed(bytes, [&](std::string& m, bool compressed) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    if (c->stream) {
      c->unconsumed.emplace_back(message_cost(m.size()), kGrpcPrefix + m.size() - c->partial_taken);
      c->partial_taken = 0;
      Delivery d(Delivery::Kind::stream_message);
      d.stream = c->stream;
      d.payload = std::move(m);
      d.compressed = compressed;
      d.encoding = c->encoding;
      if (!c->initial_given) {  // the response's initial metadata comes with the first message
        c->initial_given = true;
        d.metadata = c->metadata;
      }
      batch_.push_back(std::move(d));
      return;
    }
    if (c->has_message) {
      c->problem = "the server sent more than one message for a unary call";
      return;
    }
    c->has_message = true;
    c->message = std::move(m);
    c->message_compressed = compressed;
  });
  if (ok && c->stream && c->reader.partial_bytes() > c->partial_taken) {
    // An incomplete message is taken as it comes (see GrpcServerConnection::take_partial).
    const std::size_t n = std::min(c->reader.partial_bytes() - c->partial_taken, c->held);
    nghttp2_session_consume(session_.get(), stream_id, n);
    c->held -= n;
    c->partial_taken += n;
  }
  if (!ok) {
    finish(*c, code_status(c->reader.error_code()), fmt::format("the reply: {}", c->reader.error()));
    nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
  }
  return 0;
}

void GrpcClientTransport::finish(Call& c, Status status, std::string message) {
  if (c.finished) return;
  c.finished = true;
  if (c.stream) {
    Delivery d(Delivery::Kind::stream_end);
    d.stream = c.stream;
    d.status = status;
    d.payload = std::move(message);
    // The END carries the initial metadata no message carried, then the
    // marker and the trailers (metadata_split.h's shape).
    bool trailing = false;
    for (auto& kv : c.metadata) {
      if (kv.first == kTrailersMarker) trailing = true;
      if (trailing || !c.initial_given) d.metadata.push_back(std::move(kv));
    }
    c.initial_given = true;
    batch_.push_back(std::move(d));
    return;
  }
  Delivery d(Delivery::Kind::reply);
  d.request_id = c.request_id;
  d.status = status;
  d.metadata = std::move(c.metadata);
  if (status == Status::ok) {
    d.payload = std::move(c.message);
    d.wire_size = d.payload.size();
    d.compressed = c.message_compressed;
    d.encoding = c.encoding;
    if (d.compressed && (c.encoding == transport::Compression::identity || c.bad_encoding)) {
      d.status = code_status(StatusCode::internal);
      d.payload = "the reply is flagged compressed without a grpc-encoding this client decodes";
      d.compressed = false;
    }
  } else {
    d.payload = std::move(message);
  }
  batch_.push_back(std::move(d));
}

int GrpcClientTransport::on_stream_closed(std::int32_t stream_id, std::uint32_t code) {
  const auto it = calls_.find(stream_id);
  if (it == calls_.end()) return 0;
  Call& c = *it->second;
  if (c.held > 0) nghttp2_session_consume_connection(session_.get(), c.held);
  if (!c.finished) {
    // Reset before its trailers: REFUSED_STREAM (and a GOAWAY's unprocessed
    // streams) never reached a handler, which a retry may count on.
    const bool refused = code == NGHTTP2_REFUSED_STREAM;
    finish(c, refused ? Status::shutting_down : code_status(StatusCode::unavailable),
           fmt::format("the HTTP/2 stream was reset ({}){}", http2_error_name(code),
                       goaway_reason_.empty() ? "" : "; " + goaway_reason_));
  }
  by_request_.erase(c.request_id);
  if (last_found_ == &c) last_found_ = nullptr;
  calls_.erase(it);
  activity(-1);
  return 0;
}

// ---- delivering -----------------------------------------------------------

void GrpcClientTransport::deliver(std::vector<Delivery>& batch) {
  for (auto& d : batch) {
    switch (d.kind) {
      case Delivery::Kind::handshake: events_->on_handshake(heartbeat_for_handshake(), max_body_); break;
      case Delivery::Kind::reply: {
        IncomingReply reply{d.request_id, d.status, d.payload, d.metadata, d.wire_size, d.compressed};
        if (d.compressed) {
          std::string why;
          const auto ec = decompress_payload(static_cast<std::uint8_t>(d.encoding), d.payload, settings_->coding,
                                             max_body_, "the reply", why);
          if (ec) {
            reply.status = error_status(ec);
            d.payload = std::move(why);
            d.metadata.clear();
          }
        }
        events_->on_transport_reply(reply, settings_->receipt_time(*channel_));
        break;
      }
      case Delivery::Kind::stream_message:
        d.stream->on_message(d.payload, d.compressed ? static_cast<std::uint8_t>(d.encoding) : 0, &d.metadata);
        break;
      case Delivery::Kind::stream_end:
        d.stream->on_end(d.status == Status::ok ? boost::system::error_code{} : status_error(d.status),
                         std::move(d.payload), d.metadata);
        break;
    }
  }
  batch.clear();
}

void GrpcClientTransport::on_frames_delivered() {
  std::vector<Delivery> batch;
  {
    common::LockGuard lock(mu_);
    batch.swap(batch_);
  }
  deliver(batch);
  events_->on_batch_end();
}

void GrpcClientTransport::on_close(transport::Channel&, const error_code& ec, const std::string& reason) {
  std::vector<Delivery> batch;
  std::string why;
  {
    common::LockGuard lock(mu_);
    closed_ = true;
    batch.swap(batch_);
    why = goaway_reason_.empty() || reason.find(goaway_reason_) != std::string::npos ? reason
                                                                                     : goaway_reason_ + "; " + reason;
    last_found_ = nullptr;
    calls_.clear();
    by_request_.clear();
  }
  deliver(batch);  // what the last read brought before the close
  for (auto& s : streams_->close()) s->on_connection_lost(ec, why);
  events_->on_transport_closed(ec, why);
}

}  // namespace wheelrpc::rpc::detail
