// ServerCore's streams (docs/streams.md): a client's OPEN admitted or
// refused, the stream accepted and its handler started; and the drain a
// graceful shutdown announces to each connection (gRPC's GOAWAY).

#include <exception>
#include <memory>
#include <vector>

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include "base/log.h"
#include "server/health_service.h"
#include "server/server_core.h"
#include "server/stream_interception.h"
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
  // The same ladder as a call's (Admission::admit), at the stream's start.
  // The health service's Watch opens while offline or draining: saying
  // NOT_SERVING then is its job (it ends at once when draining).
  if ((shutdown_.draining() && !HealthService::serves_while_refusing(options_, open.method)) ||
      !shutdown_.listening()) {
    return refuse(errc::unavailable, fmt::format("server shutting down: stream '{}' not opened", open.method));
  }
  if (shutdown_.offline() && !HealthService::serves_while_refusing(options_, open.method)) {
    return refuse(errc::unavailable, fmt::format("server offline: stream '{}' not opened", open.method));
  }
  const StreamMethod* method = stream_methods_.find(open.method);
  if (!method) {
    if (admission_.has_method(open.method)) return refuse(errc::method_not_found, opened_as_stream(open.method));
    return refuse(errc::method_not_found, fmt::format("no stream method '{}'", open.method));
  }
  // Its deadline: the client's, bounded by the method's own timeout.
  std::optional<StreamCore::TimePoint> deadline;
  if (open.budget.count() != 0) deadline = open.received + open.budget;
  if (const auto timeout = method->limits->timeout();
      timeout.count() != 0 && (!deadline || open.received + timeout < *deadline)) {
    deadline = open.received + timeout;
  }
  if (deadline && options_.overload.deadline_admission && now() >= *deadline) {
    return refuse(
        errc::server_timeout,
        fmt::format("the deadline of stream '{}' had passed when the server got to it: not opened", open.method));
  }
  const std::size_t cap = options_.streams.max_per_connection;
  if (context->streams->size() >= cap) {
    return refuse(errc::resource_exhausted, fmt::format("stream '{}' refused: {} streams open on this connection "
                                                        "(ServerStreamOptions::max_per_connection)",
                                                        open.method, cap));
  }
  if (auto why = admission_.stream_overloaded(open.method)) return refuse(errc::resource_exhausted, std::move(*why));
  const bool holds = stream_methods_.limited(*method);
  bool counted = false;
  if (holds) {
    if (auto why = stream_methods_.take(*method, open.method, counted)) {
      return refuse(errc::resource_exhausted, std::move(*why));
    }
  }
  StreamCore::Settings s;
  // What the connection's streams share: made by its first, kept while any is open.
  s.side = context->streams->side.get([&] {
    auto side = std::make_shared<StreamSide>();
    side->client = false;
    side->ex = options_.handler_executor ? options_.handler_executor : conn.executor();
    side->timer = &timer_;
    side->clock = options_.clock;
    side->owner = shared_from_this();
    side->gate = &timer_work_;
    side->counters = &streams_;
    side->timeout_log = &timeout_log_;
    side->max_message = options_.streams.max_message;
    side->on_end = &ServerCore::on_stream_end;
    side->coding = &wire_settings_.coding;
    return std::shared_ptr<const StreamSide>(std::move(side));
  });
  s.method = open.method;
  s.message_timeout = options_.streams.message_timeout;
  s.stall_timeout = options_.streams.stall_timeout;
  s.window = open.receive_window != 0 ? open.receive_window : options_.streams.window;
  // Its messages mirror the call's algorithm unless the server has its own.
  s.compression = options_.compression.reply.value_or(open.reply_compression);
  s.compression_level = options_.compression.reply_level;
  if (options_.metrics) s.cells = &methods_.get(open.method);
  auto stream = std::make_shared<StreamCore>(std::move(s));
  if (holds) {
    // Its places are given back once it ended, however it ends.
    stream->wait_end([core = shared_from_this(), method, counted](const boost::system::error_code&) {
      core->stream_methods_.give_back(*method, counted);
    });
  }
  const bool intercepted = !options_.interceptors.empty();
  transport::Attachments metadata;  // with interceptors, theirs to see first
  if (intercepted) metadata = std::move(open.metadata);
  stream->set_request(intercepted ? transport::Attachments() : std::move(open.metadata), deadline);
  if (!stream->bind(open.wire, context->streams, id, open.peer_window == 0 ? kMinStreamWindow : open.peer_window,
                    open.peer_max_body, conn.remote(), open.peer_accept) ||
      !context->streams->add(id, stream)) {
    stream->end_local(make_error_code(errc::bad_request), "a stream id already open", StreamEnd::protocol);
    return refuse(errc::bad_request, fmt::format("stream id {} is already open on this connection", id));
  }
  stream->start();
  if (!intercepted) return accept_stream(*this, stream, *method);
  // Its interceptors decide, where its handler would run: its messages wait
  // in its inbox meanwhile, its deadline runs.
  auto chain = std::make_shared<StreamInterception>(shared_from_this(), stream, *method, &ServerCore::accept_stream);
  if (options_.handler_executor) {
    asio::post(options_.handler_executor, [chain, metadata = std::move(metadata), peer = conn.remote()]() mutable {
      chain->start(std::move(metadata), std::move(peer));
    });
  } else {
    chain->start(std::move(metadata), conn.remote());
  }
}

std::optional<std::string> ServerCore::kind_mismatch(const std::string& method, bool as_stream) const {
  if (as_stream) {
    if (!stream_methods_.contains(method) && admission_.has_method(method)) return opened_as_stream(method);
  } else if (const StreamMethod* m = stream_methods_.find(method)) {
    return called_as_call(method, m->kind);
  }
  return std::nullopt;
}

void ServerCore::accept_stream(ServerHost& host, const std::shared_ptr<StreamCore>& stream,
                               const StreamMethod& method) {
  auto& core = static_cast<ServerCore&>(host);
  if (!stream->accept_open()) return;  // ended meanwhile: its deadline, the client, the connection
  auto run = [handler = &method.handler, core_handler = &method.core_handler, stream]() mutable {
    try {
      if (*core_handler) {  // a built-in method (grpc.health.v1's Watch)
        (*core_handler)(stream);
        return;
      }
      (*handler)(ServerStream(std::make_shared<StreamHandle>(stream)));
    } catch (const std::exception& e) {
      stream->end_local(make_error_code(errc::server_error), fmt::format("the stream handler threw: {}", e.what()),
                        StreamEnd::error);
    } catch (...) {
      stream->end_local(make_error_code(errc::server_error), "the stream handler threw", StreamEnd::error);
    }
  };
  // With interceptors this already runs where the handler would.
  if (core.options_.handler_executor && core.options_.interceptors.empty()) {
    asio::post(core.options_.handler_executor, std::move(run));
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
