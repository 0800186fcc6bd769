// A provider's health watch: the Watch stream opened on each of its
// connections, its answers, its end (unimplemented, or a restart after a
// backoff on the shared timer).

#include "client/health_watch.h"

#include <utility>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/status_code.h>

#include "base/health_codec.h"
#include "base/log.h"
#include "base/stream_end.h"
#include "client/client_context.h"
#include "stream/stream_core.h"
#include "stream/stream_side.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using Lock = common::LockGuard<common::SpinLock>;

namespace {

std::string_view serving_status_name(std::uint32_t status) noexcept {
  switch (status) {
    case 0: return "UNKNOWN";
    case 1: return "SERVING";
    case 2: return "NOT_SERVING";
    case 3: return "SERVICE_UNKNOWN";
    default: return "an unknown status";
  }
}

constexpr std::uint32_t kServing = 1;

}  // namespace

std::string_view health_name(HealthState s) noexcept {
  switch (s) {
    case HealthState::off: return "off";
    case HealthState::checking: return "checking";
    case HealthState::serving: return "serving";
    case HealthState::not_serving: return "not_serving";
    case HealthState::unimplemented: return "unimplemented";
  }
  return "off";
}

HealthWatch::HealthWatch(std::shared_ptr<ClientContext> ctx, std::string peer, std::uint64_t seed, OnChange on_change)
    : ctx_(std::move(ctx)),
      peer_(std::move(peer)),
      on_change_(std::move(on_change)),
      request_(encode_health_request(ctx_->options.health_check.service)),
      backoff_(ctx_->options.reconnect, seed) {
  // Its streams' own side: no counters and no method cells (the watch is not
  // the application's stream), no timers (no deadline: it is long-lived).
  side_ = make_stream_side(ctx_);
}

HealthWatch::~HealthWatch() = default;  // a pending restart holds it weakly and finds it gone

void HealthWatch::set_locked(HealthState state, std::string why) {
  state_ = state;
  why_ = std::move(why);
  state_mirror_.store(state, std::memory_order_release);
}

void HealthWatch::set(std::uint64_t gen, HealthState state, std::string why) {
  {
    Lock lock(mu_);
    if (gen != gen_ || !active_ || (state_ == state && why_ == why)) return;
    set_locked(state, std::move(why));
  }
  if (on_change_) on_change_(state);
}

std::string HealthWatch::why_not_serving() const {
  Lock lock(mu_);
  return state_ == HealthState::not_serving ? why_ : std::string();
}

// ---------------------------------------------------------------- a connection's watch

void HealthWatch::start(std::shared_ptr<ClientTransport> transport) { start_if(std::nullopt, std::move(transport)); }

void HealthWatch::start_later(std::shared_ptr<ClientTransport> transport) {
  std::uint64_t gen = 0;
  {
    Lock lock(mu_);
    gen = gen_;
  }
  const auto& strand = transport->channel()->strand();
  asio::post(strand, [self = shared_from_this(), gen, t = std::move(transport)]() mutable {
    self->start_if(gen, std::move(t));
  });
}

void HealthWatch::start_if(std::optional<std::uint64_t> expected, std::shared_ptr<ClientTransport> transport) {
  std::shared_ptr<StreamCore> old;
  std::uint64_t gen = 0;
  {
    Lock lock(mu_);
    if (expected && *expected != gen_) return;  // stopped or started again meanwhile
    old = std::move(stream_);
    restart_.cancel();
    gen = ++gen_;
    active_ = true;
    transport_ = std::move(transport);
    open_id_ = 0;
    answered_ = false;
    backoff_.reset();
    set_locked(HealthState::checking, "waiting for the first answer of the health watch of " + peer_);
  }
  if (old) old->end_local(make_error_code(errc::cancelled), "the health watch restarted", StreamEnd::cancelled);
  open(gen);
}

void HealthWatch::stop() {
  std::shared_ptr<StreamCore> old;
  {
    Lock lock(mu_);
    if (!active_ && !stream_) return;
    ++gen_;
    active_ = false;
    transport_.reset();
    old = std::move(stream_);
    open_id_ = 0;
    restart_.cancel();
    set_locked(HealthState::off, {});
  }
  // The server sees it cancelled (a RESET) if its connection is still up.
  if (old) old->end_local(make_error_code(errc::cancelled), "the health watch stopped", StreamEnd::cancelled);
}

void HealthWatch::open(std::uint64_t gen) {
  if (ctx_->closed.load(std::memory_order_acquire)) return;
  StreamCore::Settings settings;
  settings.side = side_;
  settings.method = std::string(kHealthWatchPath);
  auto stream = std::make_shared<StreamCore>(std::move(settings));
  std::shared_ptr<ClientTransport> transport;
  std::uint64_t id = 0;
  {
    Lock lock(mu_);
    if (gen != gen_ || !active_ || stream_) return;  // stopped, or a watch is open already
    transport = transport_.lock();
    if (!transport) return;
    stream_ = stream;
    id = kIdBit | ++next_id_;
    open_id_ = id;
    answered_ = false;
  }
  opened_.fetch_add(1, std::memory_order_relaxed);
  stream->start();
  // The request goes as the stream's one message once the OPEN is accepted
  // (on_open_answer): the OPEN itself carries nothing, as any stream's.
  std::string payload;
  transport::Attachments metadata;
  OutgoingRequest request{id, kHealthWatchPath, payload, metadata, {}, {}, std::chrono::milliseconds(0)};
  request.stream = &stream;
  std::size_t body = 0;
  std::uint32_t limit = 0;
  const auto sent = transport->send_request(request, body, limit);
  if (sent == ClientTransport::SendResult::sent) {
    logger()->debug("peer={} health watch opened (service '{}')", peer_, ctx_->options.health_check.service);
    return;
  }
  {
    Lock lock(mu_);
    if (open_id_ == id) open_id_ = 0;
  }
  if (sent == ClientTransport::SendResult::unsupported) {  // a peer that speaks no streams has no Watch
    const auto ec = make_error_code(errc::method_not_found);
    stream->fail_open(ec, "the provider speaks no streams");
    ended(gen, ec, "the provider speaks no streams");
    return;
  }
  const auto ec = make_error_code(errc::unavailable);
  stream->fail_open(ec, "the health watch could not be sent");
  ended(gen, ec, "the health watch could not be sent on its connection");
}

void HealthWatch::on_open_answer(const IncomingReply& reply) {
  std::shared_ptr<StreamCore> stream;
  std::uint64_t gen = 0;
  {
    Lock lock(mu_);
    if (reply.id != open_id_ || !stream_) return;  // an OPEN of an earlier watch: nothing waits for it
    open_id_ = 0;
    stream = stream_;
    gen = gen_;
  }
  if (reply.status != Status::ok) {
    // Refused: no such method (UNIMPLEMENTED), the path is a unary method,
    // the server is shutting down, overloaded...
    const auto ec = status_error(reply.status);
    const std::string what = reply.payload.empty() ? ec.message() : reply.payload;
    stream->fail_open(ec, what);
    ended(gen, ec, what);
    return;
  }
  // Server streaming: the request, the half-close, then the answers.
  stream->write(request_, [](const error_code&) {});
  stream->writes_done([](const error_code&) {});
  read_next(gen, stream);
}

void HealthWatch::read_next(std::uint64_t gen, const std::shared_ptr<StreamCore>& stream) {
  stream->read([weak = weak_from_this(), gen](error_code ec, std::optional<std::string> message) {
    if (auto self = weak.lock()) self->on_read(gen, ec, std::move(message));
  });
}

void HealthWatch::on_read(std::uint64_t gen, const error_code& ec, std::optional<std::string> message) {
  std::shared_ptr<StreamCore> stream;
  {
    Lock lock(mu_);
    if (gen != gen_ || !active_) return;
    stream = stream_;
  }
  if (!stream) return;
  if (!ec && message) {
    std::uint32_t status = 0;
    if (!decode_health_response(*message, status)) {
      stream->end_local(make_error_code(errc::bad_request), "a malformed HealthCheckResponse", StreamEnd::protocol);
      ended(gen, make_error_code(StatusCode::internal), "the provider sent a malformed HealthCheckResponse");
      return;
    }
    {
      Lock lock(mu_);
      if (gen != gen_ || !active_) return;
      answered_ = true;
      backoff_.reset();
    }
    const auto& service = ctx_->options.health_check.service;
    if (status == kServing) {
      set(gen, HealthState::serving, {});
    } else {
      set(gen, HealthState::not_serving,
          fmt::format("{} says {} (health check of {})", peer_, serving_status_name(status),
                      service.empty() ? std::string("the server") : "service '" + service + "'"));
    }
    read_next(gen, stream);
    return;
  }
  // Lost with its connection: the connection's close stops the watch, and
  // the next connection starts one.
  if (ec == errc::connection_lost) return;
  if (!ec) {
    ended(gen, make_error_code(errc::stream_closed), "the provider ended the health watch");
  } else {
    ended(gen, ec, stream->error_message());
  }
}

void HealthWatch::ended(std::uint64_t gen, const error_code& ec, const std::string& what) {
  if (status_code_of(ec) == StatusCode::unimplemented) {
    {
      Lock lock(mu_);
      if (gen != gen_ || !active_) return;
      stream_.reset();
    }
    if (!told_unimplemented_.exchange(true, std::memory_order_relaxed)) {
      logger()->info("peer={} has no health service ({}): taken as serving, not health-checked on this connection",
                     peer_, what);
    } else {
      logger()->debug("peer={} has no health service ({})", peer_, what);
    }
    set(gen, HealthState::unimplemented, {});
    return;
  }
  std::chrono::milliseconds delay{0};
  bool answered = false;
  {
    Lock lock(mu_);
    if (gen != gen_ || !active_ || ctx_->closed.load(std::memory_order_acquire)) return;
    stream_.reset();
    answered = answered_;
    answered_ = false;
    if (answered) {
      // It had answered: opened again at once (through the timer), as gRPC does.
      backoff_.reset();
    } else {
      // `first` is the reconnect's fast first attempt: a watch waits `initial` first.
      if (backoff_.attempts() == 0) backoff_.next();
      delay = backoff_.next();
    }
    restart_.cancel();
    struct RestartTask {
      std::weak_ptr<HealthWatch> watch;
      std::uint64_t gen;
      void operator()() const {
        if (auto w = watch.lock()) w->on_restart_due(gen);
      }
    };
    std::error_code tec;
    restart_ = ctx_->timer.new_timeout(RestartTask{weak_from_this(), gen}, delay, tec);
    if (tec) logger()->warn("peer={} cannot schedule the restart of its health watch: {}", peer_, tec.message());
  }
  logger()->info("peer={} health watch ended ({}): opened again in {} ms", peer_, what, delay.count());
  // Until the new watch answers the provider takes no new calls: checking
  // after a watch that answered (gRPC's CONNECTING), unhealthy after one
  // that never did (gRPC's TRANSIENT_FAILURE).
  if (answered) {
    set(gen, HealthState::checking, "the health watch of " + peer_ + " restarts");
  } else {
    set(gen, HealthState::not_serving,
        fmt::format("the health watch of {} failed ({}); opened again in {} ms", peer_, what, delay.count()));
  }
}

void HealthWatch::on_restart_due(std::uint64_t gen) {
  // The timer's worker: decides, and posts the restart to the connection's strand.
  common::WorkGate::Scope in(ctx_->sweep_work);
  if (!in) return;  // the client closed
  std::shared_ptr<ClientTransport> transport;
  {
    Lock lock(mu_);
    if (gen != gen_ || !active_) return;
    transport = transport_.lock();
  }
  if (!transport) return;
  asio::post(transport->channel()->strand(), [self = shared_from_this(), gen] { self->open(gen); });
}

}  // namespace wheelrpc::rpc::detail
