// GrpcClientTransport, what goes out: a stream's operations said in HTTP/2, the
// session's writes, credit for what was written, and PING heartbeats
// (grpc_client_transport.h).

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/transport/errc.h>

#include "wire/grpc/grpc_client_call.h"
#include "wire/grpc/grpc_client_transport.h"
#include "wire/grpc/grpc_wire.h"
#include "stream/stream_core.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

// ---- a stream's operations, said as HTTP/2 ------------------------------------

// Each runs `op` on the stream's call under the lock, then writes what the
// session has to send; a stream whose connection or call is gone: closed.
template <class Op>
error_code GrpcClientTransport::on_call(std::uint64_t id, Op op) {
  common::LockGuard lock(mu_);
  if (!session_ || closed_) return transport::make_error_code(transport::errc::closed);
  Call* c = find(static_cast<std::int32_t>(id));
  if (!c) return transport::make_error_code(transport::errc::closed);
  op(*c);
  flush();
  return {};
}

error_code GrpcClientTransport::send_message(std::uint64_t id, std::string& payload, std::uint8_t encoding,
                                             transport::Attachments&) {
  return on_call(id, [&](Call& c) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    append_grpc_prefix(c.out, encoding != 0, payload.size());
    c.out.append(payload);
    c.out_costs.emplace_back(c.out.size(), message_cost(payload.size()));
    nghttp2_session_resume_data(session_.get(), c.stream_id);
  });
}

error_code GrpcClientTransport::send_half_close(std::uint64_t id) {
  return on_call(id, [&](Call& c) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    c.out_end = true;
    nghttp2_session_resume_data(session_.get(), c.stream_id);
  });
}

error_code GrpcClientTransport::send_reset(std::uint64_t id) {
  return on_call(id, [&](Call& c) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    c.finished = true;  // it ended itself: nothing more is delivered to it
    nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, c.stream_id, NGHTTP2_CANCEL);
  });
}

error_code GrpcClientTransport::send_credit(std::uint64_t id, std::uint32_t bytes) {
  return on_call(id, [&](Call& c) WHEELRPC_NO_THREAD_SAFETY_ANALYSIS {
    consume_credited(session_.get(), c.stream_id, bytes, c.credit, c.unconsumed, c.held);
  });
}

// A server's operations: a client's stream never says them.
error_code GrpcClientTransport::send_end(std::uint64_t, const error_code&, std::string&, transport::Attachments&) {
  return {};
}
error_code GrpcClientTransport::send_open_answer(std::uint64_t, const error_code&, std::string&) { return {}; }

ssize_t GrpcClientTransport::read_out(std::int32_t stream_id, std::uint8_t* buf, std::size_t length,
                                      std::uint32_t* flags) {
  Call* c = find(stream_id);
  if (!c) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  const std::size_t n = take_message_bytes(c->out, c->out_pos, c->out_costs, buf, length, stream_id, credits_);
  if (c->out.empty() && c->out_end) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;  // END_STREAM: the request's (or the stream's half-close)
    return static_cast<ssize_t>(n);
  }
  if (n == 0) return NGHTTP2_ERR_DEFERRED;
  return static_cast<ssize_t>(n);
}

void GrpcClientTransport::flush() {
  int rv = 0;
  out_.clear();
  const bool ok = take_output(session_.get(), out_, rv);
  if (!out_.empty()) channel_->send_bytes(out_);
  if (out_.capacity() > 64 * 1024) std::string().swap(out_);
  if (!credits_.empty() && !credit_posted_) {
    credit_posted_ = true;
    asio::post(channel_->strand(), [self = shared_from_this()] { self->deliver_credits(); });
  }
  if (!ok) {
    close_later(transport::make_error_code(transport::errc::protocol_error),
                fmt::format("HTTP/2: {}", nghttp2_strerror(rv)));
  } else if (goaway_ && calls_.empty() && !nghttp2_session_want_write(session_.get())) {
    // The server said GOAWAY and every call on it ended: a new connection takes over.
    close_later(transport::make_error_code(transport::errc::closed),
                goaway_reason_.empty() ? std::string("GOAWAY") : goaway_reason_);
  }
}

void GrpcClientTransport::close_later(const error_code& ec, std::string reason) {
  // Posted: a close on the strand runs on_close at once, which takes `mu_`.
  asio::post(channel_->strand(),
             [ch = channel_, ec, reason = std::move(reason)]() mutable { ch->close(ec, std::move(reason)); });
}

void GrpcClientTransport::deliver_credits() {
  std::vector<std::pair<std::int32_t, std::uint64_t>> credits;
  {
    common::LockGuard lock(mu_);
    credits.swap(credits_);
    credit_posted_ = false;
  }
  for (const auto& [id, cost] : credits) {
    if (auto s = streams_->find(static_cast<std::uint64_t>(id))) s->on_credit(cost);
  }
}

bool GrpcClientTransport::send_heartbeat() {
  common::LockGuard lock(mu_);
  if (!session_ || closed_ || active_ == 0) return false;  // no PING without calls (gRPC servers forbid it)
  nghttp2_submit_ping(session_.get(), NGHTTP2_FLAG_NONE, reinterpret_cast<const std::uint8_t*>("wrpc-hb!"));
  flush();
  return true;
}

std::optional<std::chrono::milliseconds> GrpcClientTransport::heartbeat_for_handshake() const { return heartbeat_; }

}  // namespace wheelrpc::rpc::detail
