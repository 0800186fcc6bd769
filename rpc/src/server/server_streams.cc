// ServerCore's streams (docs/streams.md): a client's OPEN admitted or
// refused, the stream accepted and its handler started; and the drain a
// graceful shutdown announces to each connection (gRPC's GOAWAY).

#include <exception>
#include <memory>
#include <vector>

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include "base/log.h"
#include "server/server_core.h"
#include "stream/stream_core.h"
#include "wire/stream_open.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;

void ServerCore::on_stream_end(const void* core) {
  const auto* self = static_cast<const ServerCore*>(core);
  const_cast<ServerCore*>(self)->shutdown().recheck_drained();
}

void ServerCore::on_stream_open(ServerTransport& conn, StreamOpenRequest& open, const ConnContextPtr& context) {
  const std::uint64_t id = open.id;
  auto refuse = [&](errc why, std::string message) {
    streams_refused_.fetch_add(1, std::memory_order_relaxed);
    logger()->debug("conn={} stream '{}' refused: {}", conn.id(), open.method, message);
    open.wire->send_open_answer(id, make_error_code(why), message);
  };
  if (shutdown_.draining() || !shutdown_.listening()) {
    return refuse(errc::unavailable, fmt::format("server shutting down: stream '{}' not opened", open.method));
  }
  if (shutdown_.offline()) {
    return refuse(errc::unavailable, fmt::format("server offline: stream '{}' not opened", open.method));
  }
  const auto it = stream_handlers_.find(open.method);
  if (it == stream_handlers_.end()) {
    return refuse(errc::method_not_found, fmt::format("no stream method '{}'", open.method));
  }
  const std::size_t cap = options_.streams.max_per_connection;
  if (context->streams->size() >= cap) {
    return refuse(errc::resource_exhausted, fmt::format("stream '{}' refused: {} streams open on this connection "
                                                        "(ServerStreamOptions::max_per_connection)",
                                                        open.method, cap));
  }
  StreamCore::Settings s;
  s.client = false;
  s.method = open.method;
  s.ex = options_.handler_executor ? options_.handler_executor : conn.executor();
  s.timer = &timer_;
  s.clock = options_.clock;
  s.owner = shared_from_this();
  s.gate = &timer_work_;
  s.counters = &streams_;
  s.timeout_log = &timeout_log_;
  s.message_timeout = options_.streams.message_timeout;
  s.stall_timeout = options_.streams.stall_timeout;
  s.window = open.receive_window != 0 ? open.receive_window : options_.streams.window;
  s.max_message = options_.streams.max_message;
  s.on_end = &ServerCore::on_stream_end;
  // Its messages mirror the call's algorithm unless the server has its own.
  s.compression = options_.compression.reply.value_or(open.reply_compression);
  s.compression_level = options_.compression.reply_level;
  s.coding = &wire_settings_.coding;
  if (options_.metrics) s.cells = &methods_.get(open.method);
  auto stream = std::make_shared<StreamCore>(std::move(s));
  std::optional<StreamCore::TimePoint> deadline;
  if (open.budget.count() != 0) deadline = open.received + open.budget;
  stream->set_request(std::move(open.metadata), deadline);
  if (!stream->bind(open.wire, context->streams, id, open.peer_window == 0 ? kMinStreamWindow : open.peer_window,
                    open.peer_max_body, conn.remote(), open.peer_accept) ||
      !context->streams->add(id, stream)) {
    stream->end_local(make_error_code(errc::bad_request), "a stream id already open", StreamEnd::protocol);
    return refuse(errc::bad_request, fmt::format("stream id {} is already open on this connection", id));
  }
  std::string accepted;
  open.wire->send_open_answer(id, {}, accepted);
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
