// ServerCore's streams (docs/streams.md): a client's OPEN admitted or
// refused, the stream accepted and its handler started; and the drain a
// graceful shutdown announces to each connection (gRPC's GOAWAY).

#include <exception>
#include <memory>
#include <vector>

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include "log.h"
#include "server_core.h"
#include "stream_core.h"
#include "stream_frames.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;

namespace {

/// The answer to an OPEN: its acceptance (ok) or its refusal.
transport::Frame open_answer(std::uint64_t id, Status status, std::string message) {
  auto f = make_stream_frame(StreamOp::open, id, false);
  f.header.status = static_cast<std::uint8_t>(status);
  f.payload = std::move(message);
  return f;
}

}  // namespace

void ServerCore::on_stream_end(const void* core) {
  const auto* self = static_cast<const ServerCore*>(core);
  const_cast<ServerCore*>(self)->shutdown().recheck_drained();
}

void ServerCore::on_stream_open(ServerTransport& conn, transport::Channel& channel, transport::Frame& frame,
                                const ConnContextPtr& context, const StreamWireBinding* wire) {
  const std::uint64_t id = frame.header.request_id;
  auto answer = [&](transport::Frame f) {
    if (wire) {
      wire->wire->send_stream_frame(f);
    } else {
      channel.send(f);
    }
  };
  auto refuse = [&](Status status, std::string message) {
    streams_refused_.fetch_add(1, std::memory_order_relaxed);
    logger()->debug("conn={} stream '{}' refused: {}", channel.id(), frame.method, message);
    answer(open_answer(id, status, std::move(message)));
  };
  if (shutdown_.draining() || !shutdown_.listening()) {
    return refuse(Status::shutting_down, fmt::format("server shutting down: stream '{}' not opened", frame.method));
  }
  if (shutdown_.offline()) {
    return refuse(Status::shutting_down, fmt::format("server offline: stream '{}' not opened", frame.method));
  }
  const auto it = stream_handlers_.find(frame.method);
  if (it == stream_handlers_.end()) {
    return refuse(Status::method_not_found, fmt::format("no stream method '{}'", frame.method));
  }
  const std::size_t cap = options_.streams.max_per_connection;
  if (context->streams->size() >= cap) {
    return refuse(Status::overloaded, fmt::format("stream '{}' refused: {} streams open on this connection "
                                                  "(ServerStreamOptions::max_per_connection)",
                                                  frame.method, cap));
  }
  StreamCore::Settings s;
  s.client = false;
  s.method = frame.method;
  s.ex = options_.handler_executor ? options_.handler_executor : asio::any_io_executor(channel.strand());
  s.timer = &timer_;
  s.clock = options_.clock;
  s.owner = shared_from_this();
  s.gate = &timer_work_;
  s.counters = &streams_;
  s.timeout_log = &timeout_log_;
  s.message_timeout = options_.streams.message_timeout;
  s.stall_timeout = options_.streams.stall_timeout;
  s.window = wire ? wire->receive_window : options_.streams.window;
  s.max_message = options_.streams.max_message;
  s.on_end = &ServerCore::on_stream_end;
  // Its messages mirror the call's algorithm unless the server has its own.
  s.compression = options_.compression.reply.value_or(requested_compression(frame.header.reply_encoding));
  s.compression_level = options_.compression.reply_level;
  s.coding = &coding_;
  if (options_.metrics) s.cells = &methods_.get(frame.method);
  auto stream = std::make_shared<StreamCore>(std::move(s));
  std::optional<StreamCore::TimePoint> deadline;
  if (frame.header.deadline_ms != 0) {
    deadline = receipt_time(channel) + std::chrono::milliseconds(frame.header.deadline_ms);
  }
  stream->set_request(std::move(frame.attachments), deadline);
  const std::uint32_t window = context->peer_stream_window.load(std::memory_order_relaxed);
  const auto peer_accept =
      wire ? wire->accept : transport::CompressionSet::from_bits(context->peer_accept.load(std::memory_order_relaxed));
  if (!stream->bind(channel.shared_from_this(), context->streams, id,
                    wire ? options_.streams.window : (window == 0 ? kMinStreamWindow : window),
                    context->peer_max_body.load(std::memory_order_relaxed), conn.remote(), peer_accept,
                    wire ? wire->wire : nullptr) ||
      !context->streams->add(id, stream)) {
    stream->end_local(make_error_code(errc::bad_request), "a stream id already open", StreamEnd::protocol);
    return refuse(Status::bad_request, fmt::format("stream id {} is already open on this connection", id));
  }
  answer(open_answer(id, Status::ok, {}));
  stream->start();
  auto run = [handler = &it->second, stream]() mutable {
    try {
      (*handler)(ServerStream(std::make_shared<StreamHandle>(stream)));
    } catch (const std::exception& e) {
      stream->end_local(make_error_code(errc::server_error), fmt::format("the stream handler threw: {}", e.what()),
                        StreamEnd::error);
    } catch (...) {
      stream->end_local(make_error_code(errc::server_error), "the stream handler threw", StreamEnd::error);
    }
  };
  if (options_.handler_executor) {
    asio::post(options_.handler_executor, std::move(run));
  } else {
    run();
  }
}

void ServerCore::announce_drain() {
  std::vector<std::shared_ptr<ServerTransport>> transports;
  {
    common::LockGuard lock(mu_);
    for (const auto& [id, c] : channels_) {
      if (auto t = c.context ? c.context->transport.lock() : nullptr) transports.push_back(std::move(t));
    }
  }
  for (auto& t : transports) t->drain();
}

}  // namespace wheelrpc::rpc::detail
