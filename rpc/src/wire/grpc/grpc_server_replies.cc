// GrpcServerConnection, what goes out: unary replies, the frames of its
// streams said in HTTP/2, heartbeats, the two-step GOAWAY, and the writes
// (grpc_server_connection.h).

#include <algorithm>
#include <cstring>
#include <limits>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/transport/errc.h>

#include "wire/grpc/grpc_server_call.h"
#include "wire/grpc/grpc_server_connection.h"
#include "base/log.h"
#include "base/payload_coding.h"
#include "stream/stream_core.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

/// Reply metadata: the initial fields, then (after kTrailersMarker) the trailing ones.
void add_metadata(HeaderBlock& h, const transport::Attachments& md, bool trailing) {
  bool in_trailers = false;
  for (const auto& [k, v] : md) {
    if (k == kTrailersMarker) {
      in_trailers = true;
      continue;
    }
    if (in_trailers != trailing || is_reserved_header(k) || !valid_metadata_key(k)) continue;
    if (is_binary_key(k)) {
      h.add(k, base64_encode(v));
    } else {
      h.add(k, v);
    }
  }
}

void add_status(HeaderBlock& h, StatusCode code, std::string_view message) {
  h.add("grpc-status", fmt::format("{}", static_cast<int>(code)));
  if (!message.empty()) h.add("grpc-message", percent_encode(message));
}

}  // namespace

bool GrpcServerConnection::send_reply(std::uint64_t id, Status status, std::string& payload,
                                      transport::Attachments& attachments, std::string_view, ReplyCoding& coding,
                                      bool) {
  common::LockGuard lock(mu_);
  if (!session_ || closed_) return false;
  Call* c = find(static_cast<std::int32_t>(id));
  if (!c || c->ended_here) return true;  // the client reset it: nothing to answer
  if (status != Status::ok) {
    submit_end(*c, grpc_code_of(status), payload, &attachments, 200, true);
    flush(false);
    return true;
  }
  std::string* body = &payload;
  transport::Compression used = transport::Compression::identity;
  if (coding.compression == transport::Compression::gzip || coding.compression == transport::Compression::deflate) {
    used = compress_payload(payload, coding.compression, coding.level, context_->settings->coding.threshold, c->accept,
                            compression_scratch());
    if (used != transport::Compression::identity) body = &compression_scratch();
  }
  c->response_encoding = used;
  submit_headers(*c, &attachments);
  queue_message(*c, *body, used != transport::Compression::identity);
  coding.wire_size = body->size();
  coding.compressed = used != transport::Compression::identity;
  submit_end(*c, StatusCode::ok, {}, &attachments, 200, false);
  flush(false);
  return true;
}

// ---- a stream's operations, said as HTTP/2 ------------------------------------

GrpcServerConnection::Call* GrpcServerConnection::writable(std::uint64_t id) {
  if (!session_ || closed_ || closing_) return nullptr;
  return find(static_cast<std::int32_t>(id));
}

error_code GrpcServerConnection::send_open_answer(std::uint64_t id, const error_code& ec, std::string& message) {
  common::LockGuard lock(mu_);
  Call* c = writable(id);
  if (!c) return transport::make_error_code(transport::errc::closed);
  if (!ec) {
    // The HEADERS name the algorithm the server's option gives the stream's
    // messages, if the client decodes it; a handler's choice is known from
    // its first message (send_message). Not the request's: kGrpcDefaultReplyCompression.
    const auto alg = context_->settings->reply_compression.value_or(kGrpcDefaultReplyCompression);
    if ((alg == transport::Compression::gzip || alg == transport::Compression::deflate) && c->accept.contains(alg)) {
      c->response_encoding = alg;
    }
    // The response's HEADERS go with the first message (they carry the
    // handler's initial metadata, ServerStream::add_initial_metadata), or
    // as a trailers-only answer with the end: as gRPC servers do.
    return {};
  }
  submit_end(*c, grpc_code_of(error_status(ec)), message, nullptr, 200, true);
  flush(false);
  return {};
}

error_code GrpcServerConnection::send_message(std::uint64_t id, std::string& payload, std::uint8_t encoding,
                                              transport::Attachments& initial) {
  common::LockGuard lock(mu_);
  Call* c = writable(id);
  if (!c) return transport::make_error_code(transport::errc::closed);
  if (!c->headers_sent) {
    // A message compressed with another algorithm than the stream's says so in the HEADERS.
    if (encoding != 0) c->response_encoding = static_cast<transport::Compression>(encoding);
    submit_headers(*c, &initial);
  }
  if (encoding != 0 && static_cast<transport::Compression>(encoding) != c->response_encoding) {
    // The HEADERS went naming another algorithm, or none (the handler chose
    // its algorithm after its first message went uncompressed), and a gRPC
    // client decodes a message only in the algorithm they name: this one
    // goes as it is. Our own encoder's output, within our own limits.
    std::string plain;
    transport::DecompressLimits unbounded;
    unbounded.max_output = std::numeric_limits<std::size_t>::max();
    unbounded.max_ratio = 0;
    if (transport::decompress(static_cast<transport::Compression>(encoding), payload, unbounded, plain)) {
      return transport::make_error_code(transport::errc::protocol_error);
    }
    logger()->debug("conn={} stream={} a message compressed with {} after HEADERS naming {}: sent uncompressed", id_,
                    c->id, transport::to_string(static_cast<transport::Compression>(encoding)),
                    grpc_encoding_name(c->response_encoding));
    queue_message(*c, plain, false);
  } else {
    queue_message(*c, payload, encoding != 0);
  }
  flush(false);
  return {};
}

error_code GrpcServerConnection::send_end(std::uint64_t id, const error_code& ec, std::string& message,
                                          transport::Attachments& metadata) {
  common::LockGuard lock(mu_);
  Call* c = writable(id);
  if (!c) return transport::make_error_code(transport::errc::closed);
  submit_end(*c, ec ? grpc_code_of(error_status(ec)) : StatusCode::ok, message, &metadata, 200, true);
  flush(false);
  return {};
}

error_code GrpcServerConnection::send_credit(std::uint64_t id, std::uint32_t bytes) {
  common::LockGuard lock(mu_);
  Call* c = writable(id);
  if (!c) return transport::make_error_code(transport::errc::closed);
  // The handler took messages: their HTTP/2 bytes open the client's window again.
  consume_credited(session_.get(), c->id, bytes, c->credit, c->unconsumed, c->held);
  flush(false);
  return {};
}

// A client's operations: a server's stream never says them.
error_code GrpcServerConnection::send_half_close(std::uint64_t) { return {}; }
error_code GrpcServerConnection::send_reset(std::uint64_t) { return {}; }

void GrpcServerConnection::submit_headers(Call& c, transport::Attachments* initial) {
  if (c.headers_sent) return;
  c.headers_sent = true;
  HeaderBlock h;
  h.add(":status", "200");
  h.add("content-type", "application/grpc");
  if (c.response_encoding != transport::Compression::identity) {
    h.add("grpc-encoding", grpc_encoding_name(c.response_encoding));
  }
  h.add("grpc-accept-encoding", accept_encoding_);
  if (initial) add_metadata(h, *initial, false);
  const auto prd = data_provider();
  const auto& nv = h.nv();
  nghttp2_submit_response(session_.get(), c.id, nv.data(), nv.size(), &prd);
}

void GrpcServerConnection::submit_end(Call& c, StatusCode code, std::string_view message,
                                      transport::Attachments* metadata, int http_status, bool send_initial) {
  if (c.ended_here) return;
  // Initial metadata and no message yet: the response's HEADERS with it,
  // then the trailers (a trailers-only answer has no initial metadata: a
  // client reads all of it as trailers).
  const bool initial = send_initial && metadata && !metadata->empty() && metadata->front().first != kTrailersMarker &&
                       http_status == 200;
  if (!c.headers_sent && initial) submit_headers(c, metadata);
  c.ended_here = true;
  if (!c.headers_sent) {
    // Trailers-only: one HEADERS with END_STREAM.
    c.headers_sent = true;
    HeaderBlock h;
    h.add(":status", fmt::format("{}", http_status));
    h.add("content-type", "application/grpc");
    if (code == StatusCode::unimplemented) h.add("grpc-accept-encoding", accept_encoding_);
    add_status(h, code, message);
    if (metadata) add_metadata(h, *metadata, true);
    const auto& nv = h.nv();
    nghttp2_submit_response(session_.get(), c.id, nv.data(), nv.size(), nullptr);
    return;
  }
  add_status(c.trailers, code, message);
  if (metadata) add_metadata(c.trailers, *metadata, true);
  resume(c);
}

void GrpcServerConnection::queue_message(Call& c, std::string_view payload, bool compressed) {
  append_grpc_prefix(c.out, compressed, payload.size());
  c.out.append(payload);
  if (c.is_stream) c.out_costs.emplace_back(c.out.size(), message_cost(payload.size()));
  resume(c);
}

void GrpcServerConnection::resume(Call& c) { nghttp2_session_resume_data(session_.get(), c.id); }

ssize_t GrpcServerConnection::read_out(std::int32_t stream_id, std::uint8_t* buf, std::size_t length,
                                       std::uint32_t* flags) {
  Call* c = find(stream_id);
  if (!c) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  const std::size_t n = take_message_bytes(c->out, c->out_pos, c->out_costs, buf, length, stream_id, credits_);
  if (c->out.empty() && c->ended_here) {
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    const auto& nv = c->trailers.nv();
    nghttp2_submit_trailer(session_.get(), stream_id, nv.data(), nv.size());
    return static_cast<ssize_t>(n);
  }
  if (n == 0) return NGHTTP2_ERR_DEFERRED;
  return static_cast<ssize_t>(n);
}

void GrpcServerConnection::flush(bool failed) {
  int rv = 0;
  out_.clear();
  const bool ok = take_output(session_.get(), out_, rv);
  const auto channel = channel_.lock();
  if (!channel) return;
  if ((failed || !ok) && !goaway_out_ && !closing_) {
    // nghttp2 ended the session without a GOAWAY (a flood): one of ours, the last frame.
    goaway_out_ = true;
    out_ += goaway_frame(nghttp2_session_get_last_proc_stream_id(session_.get()),
                         fatal_code_ != 0 ? fatal_code_ : std::uint32_t{NGHTTP2_INTERNAL_ERROR}, fail_reason_);
  }
  if (!out_.empty() && channel->send_bytes(out_) == transport::errc::write_queue_full && !closing_) {
    // The client reads nothing of what its windows let the session write:
    // closed, as a native slow reader is (the bytes just refused would leave
    // a hole in the HTTP/2 stream).
    context_->events->count_slow_reader();
    fail_reason_ = fmt::format("the client reads nothing: over {} bytes queued (ChannelOptions::max_write_queue_bytes)",
                               context_->settings->channel.max_write_queue_bytes);
    failed = true;
  }
  if (out_.capacity() > 64 * 1024) std::string().swap(out_);
  if (!credits_.empty() && !credit_posted_) {
    credit_posted_ = true;
    asio::post(channel->strand(), [self = shared_from_this()] { self->deliver_credits(); });
  }
  if (closing_) return;
  if (failed || !ok || (!nghttp2_session_want_read(session_.get()) && !nghttp2_session_want_write(session_.get()))) {
    closing_ = true;
    if (!ok && fail_reason_.empty()) fail_reason_ = fmt::format("HTTP/2: {}", nghttp2_strerror(rv));
    std::string why = fail_reason_.empty() ? std::string("HTTP/2 session ended (GOAWAY)") : fail_reason_;
    const auto ec = transport::make_error_code(failed || !ok || goaway_sent_ ? transport::errc::protocol_error
                                                                             : transport::errc::closed);
    // Posted, not called: with nothing left to write, close_after_flush
    // closes at once when called on the strand (a read's), and on_close
    // takes `mu_`, held here.
    asio::post(channel->strand(), [channel, ec, why = std::move(why)]() mutable {
      channel->close_after_flush(ec, std::move(why), std::chrono::milliseconds(1000));
    });
  }
}

void GrpcServerConnection::deliver_credits() {
  std::vector<std::pair<std::int32_t, std::uint64_t>> credits;
  {
    common::LockGuard lock(mu_);
    credits.swap(credits_);
    credit_posted_ = false;
  }
  for (const auto& [id, cost] : credits) {
    if (auto s = context_->streams->find(static_cast<std::uint64_t>(id))) s->on_credit(cost);
  }
}

bool GrpcServerConnection::send_heartbeat(transport::Channel&) {
  common::LockGuard lock(mu_);
  if (!session_ || closed_ || closing_) return false;
  nghttp2_submit_ping(session_.get(), NGHTTP2_FLAG_NONE, reinterpret_cast<const std::uint8_t*>("wrpc-hb!"));
  flush(false);
  return true;
}

void GrpcServerConnection::drain() {
  common::LockGuard lock(mu_);
  if (!session_ || closed_ || closing_ || draining_) return;
  // The two-step GOAWAY: a first one that takes every stream already on its
  // way, a PING, and on its ACK the final one with the last stream taken.
  draining_ = true;
  nghttp2_submit_shutdown_notice(session_.get());
  nghttp2_submit_ping(session_.get(), NGHTTP2_FLAG_NONE, reinterpret_cast<const std::uint8_t*>(kDrainPing.data()));
  drain_ping_sent_ = true;
  flush(false);
}

}  // namespace wheelrpc::rpc::detail
