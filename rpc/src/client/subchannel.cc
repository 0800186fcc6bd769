// A provider's connection: connecting, the HELLO exchange, sending attempts
// and taking their replies, losing it, draining after it left the set, and
// the lock-free view its timer tasks watch. One file tells its life.

#include "client/subchannel.h"

#include <algorithm>
#include <cassert>

#include <boost/asio/post.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "client/client_context.h"
#include "client/provider_review.h"
#include "base/idle_limit.h"
#include "base/log.h"
#include "client/subchannel_listener.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using Lock = common::LockGuard<common::SpinLock>;
using State = Subchannel::State;
// The channel tasks run on a grid of heartbeat / this (AbstractTimerTask::
// set_coalescing): a heartbeat or an idle close at most that late.
constexpr int kHeartbeatCoalescing = 16;

Subchannel::Subchannel(std::shared_ptr<ClientContext> ctx, std::weak_ptr<SubchannelListener> listener,
                       asio::ip::tcp::endpoint endpoint, std::uint64_t seed, const ProviderStats* restored)
    : ctx_(std::move(ctx)),
      listener_(std::move(listener)),
      endpoint_(endpoint),
      peer_(transport::endpoint_text(endpoint)),
      attempts_(restored ? restored->attempts : 0),
      oks_(restored ? restored->ok : 0),
      connect_attempts_(restored ? restored->connect_attempts : 0),
      failures_(restored ? restored->failures : 0),
      cancelled_(restored ? restored->cancelled : 0),
      backoff_(ctx_->options.reconnect, seed) {}

void Subchannel::start_tasks() {
  // Its own HeartbeatTimerTask and ReconnectTimerTask run on the worker, read
  // only the atomics, and post any action. Watching this one channel, they
  // sleep until it needs them (a heartbeat due, the idle timeout), at most a
  // heartbeat interval; a connect failure, a loss and the start of a
  // handshake bring the reconnect task's next check forward (check_within).
  const auto tick = std::max(ctx_->options.heartbeat, std::chrono::milliseconds(1));
  auto provider = [weak = weak_from_this()](std::vector<WatchedChannel>& out) {
    auto self = weak.lock();
    return self && self->watched(out);
  };
  heartbeat_task_ = std::make_shared<HeartbeatTimerTask>(provider, tick);
  reconnect_task_ = std::make_shared<ReconnectTimerTask>(provider, tick);
  // Up to a sixteenth of the interval late, on a grid every connection
  // shares: the worker wakes once per step for all of them, and a step's
  // heartbeats go to the executor as one job (kHeartbeatCoalescing).
  heartbeat_task_->set_coalescing(tick / kHeartbeatCoalescing);
  reconnect_task_->set_coalescing(tick / kHeartbeatCoalescing);
  heartbeat_task_->start(ctx_->timer);
  reconnect_task_->start(ctx_->timer);
  if (!ctx_->options.health_check.enabled) return;
  health_ = std::make_shared<HealthWatch>(ctx_, peer_, endpoint_.port(), [weak = weak_from_this()](HealthState h) {
    if (auto self = weak.lock()) self->on_health(h);
  });
}

std::uint64_t Subchannel::heartbeats_sent() const noexcept { return heartbeat_task_->heartbeats_sent(); }
std::uint64_t Subchannel::idle_closes() const noexcept { return reconnect_task_->idle_closes(); }

void Subchannel::set_state(State s) noexcept {
  state_ = s;
  state_mirror_.store(s, std::memory_order_release);
  ready_.store(s == State::ready, std::memory_order_release);
}

// ---------------------------------------------------------------- connecting

void Subchannel::want(TimePoint t) {
  Lock lock(mu_);
  wanted_.store(true, std::memory_order_release);
  attempt_connect_locked(t);
}

void Subchannel::maybe_reconnect(TimePoint t) {
  if (ctx_->closed.load(std::memory_order_acquire)) return;
  Lock lock(mu_);
  attempt_connect_locked(t);
}

void Subchannel::reset_backoff(TimePoint t) {
  if (ctx_->closed.load(std::memory_order_acquire)) return;
  Lock lock(mu_);
  backoff_.reset();
  next_attempt_ = {};
  // In backoff and wanted: connect now rather than after the grown delay.
  if (state_ == State::idle && failing_.load(std::memory_order_relaxed) && wanted_.load(std::memory_order_relaxed)) {
    logger()->info("peer={} reported again: reconnect backoff reset, connecting now", peer_);
    attempt_connect_locked(t);
  }
}

void Subchannel::attempt_connect_locked(TimePoint t) {
  if (closed_ || retired_.load(std::memory_order_relaxed) || state_ != State::idle || t < next_attempt_) return;
  // The backoff's delays are "before attempt 1, 2, 3...". Attempt 1 (after a
  // loss, or ever) waits `first`, which next_attempt_ = {} already granted;
  // consume it, then set the earliest start of attempt 2. Delays count from
  // the start of each attempt, as gRPC's do.
  if (backoff_.attempts() == 0) backoff_.next();
  next_attempt_ = t + backoff_.next();
  set_state(State::connecting);
  connect_attempts_.add();
  wanted_.store(true, std::memory_order_release);
  transport::async_connect(
      ctx_->ex, ctx_->timer, endpoint_, ctx_->options.connect_timeout,
      [self = shared_from_this()](error_code ec, asio::ip::tcp::socket s) { self->on_connected(ec, std::move(s)); });
}

void Subchannel::on_connected(error_code ec, asio::ip::tcp::socket socket) {
  auto listener = listener_.lock();
  if (!listener) return;  // the client is gone
  common::UniqueLock lock(mu_);
  if (closed_) return;
  if (retired_.load(std::memory_order_relaxed)) {
    // It left the set while connecting: the socket is dropped unused.
    set_state(State::idle);
    lock.unlock();
    listener->on_retired_closed(*this);
    return;
  }
  const ClientOptions& options = ctx_->options;
  if (ec) {
    // The ReconnectTimerTask retries under the backoff. Calls waiting for
    // ready go on waiting (until their deadlines); the others fail now if no
    // provider is left to wait for.
    failing_.store(true, std::memory_order_release);
    set_state(State::idle);
    last_error_ = "cannot connect to " + peer_ + ": " + ec.message();
    ClientMetrics::count(ctx_->metrics.connect_failures);
    logger()->warn("connect to {} failed: {}", peer_, ec.message());
    const auto delay = next_attempt_ - ctx_->now();
    lock.unlock();
    reconnect_task_->check_within(delay);  // the next attempt when its backoff ends, not at a later tick
    listener->on_connect_failed(*this, /*refused=*/true);
    return;
  }
  // Pings less often after a server refused them as too frequent (only a
  // gRPC server says so: elsewhere the factor stays 1).
  const auto heartbeat = options.heartbeat * (1 << std::min(ping_backoff_.load(std::memory_order_relaxed), 16));
  std::shared_ptr<ClientTransport> t = ctx_->make_transport(std::move(socket), shared_from_this(), ctx_->wire, peer_);
  transport_ = t;
  watched_channel_.store(t->channel());
  idle_timeout_ms_.store(options.connect_timeout.count(), std::memory_order_relaxed);
  set_state(State::handshaking);
  lock.unlock();
  reconnect_task_->check_within(options.connect_timeout);  // a HELLO that never comes
  t->start(ctx_->next_event_id.fetch_add(1, std::memory_order_relaxed), heartbeat, options.channel.max_body);
}

void Subchannel::on_goaway() {
  Lock lock(mu_);
  if (state_ != State::ready || draining_.load(std::memory_order_relaxed)) return;
  // Not ready for new attempts, but connecting as far as calls can tell: they
  // wait for the next connection, made once this one closes (at once: it was
  // ready), instead of failing on one that refuses them.
  draining_.store(true, std::memory_order_release);
  ready_.store(false, std::memory_order_release);
  logger()->info("peer={} takes no new calls on this connection (GOAWAY): {} in flight finish on it", peer_,
                 table_.size());
}

void Subchannel::on_too_many_pings() {
  const int n = ping_backoff_.fetch_add(1, std::memory_order_relaxed) + 1;
  logger()->warn("{} answered GOAWAY too_many_pings: its next connections ping every {} ms", peer_,
                 (ctx_->options.heartbeat * (1 << std::min(n, 16))).count());
}

void Subchannel::on_handshake(std::optional<std::chrono::milliseconds> proposed, std::uint32_t max_body) {
  (void)max_body;  // the transport applies it to the requests it sends
  std::chrono::milliseconds idle{0};
  std::shared_ptr<ClientTransport> watched;  // with health checking, calls wait for its watch's answer
  {
    Lock lock(mu_);
    if (closed_ || state_ != State::handshaking) return;
    if (health_ && !retired_.load(std::memory_order_relaxed)) watched = transport_;
    const auto& options = ctx_->options;
    const auto heartbeat = std::max(proposed.value_or(options.heartbeat), options.heartbeat);
    heartbeat_ms_.store(heartbeat.count(), std::memory_order_relaxed);
    idle = idle_limit(options.idle_timeout, heartbeat);
    idle_timeout_ms_.store(idle.count(), std::memory_order_relaxed);
    // Data the provider never acknowledges fails the connection within the
    // idle limit too, not after the kernel's ~15 minutes of retransmissions.
    if (options.tcp_user_timeout && transport_) {
      if (auto ec = transport_->channel()->set_user_timeout(idle)) {
        logger()->debug("peer={} TCP_USER_TIMEOUT not set: {}", peer_, ec.message());
      } else {
        user_timeout_ms_.store(idle.count(), std::memory_order_relaxed);
      }
    }
    failing_.store(false, std::memory_order_release);
    // Counted before the state is published: whoever sees it ready sees it counted.
    ClientMetrics::count(ctx_->metrics.connects);
    set_state(State::ready);
    backoff_.reset();
    next_attempt_ = {};  // the first attempt after a loss is immediate
    last_error_.clear();
    logger()->debug("conn={} peer={} ready, heartbeat {} ms", transport_ ? transport_->channel()->id() : 0, peer_,
                    heartbeat.count());
  }
  // The reconnect task sleeps until the idle deadline it last saw, the
  // handshake's (connect_timeout from its start): the agreed one may be sooner.
  reconnect_task_->check_within(idle);
  if (health_) {
    if (watched) health_->start(std::move(watched));  // its answer makes it ready (on_health)
    return;
  }
  if (auto* listener = batch_listener()) listener->on_subchannel_ready();
}

void Subchannel::on_health(HealthState h) {
  auto listener = listener_.lock();
  if (!listener || state_mirror_.load(std::memory_order_acquire) != State::ready) return;
  if (takes_calls(h)) {
    listener->on_subchannel_ready();  // the state was published first: the drain sees it ready
  } else if (h == HealthState::not_serving) {
    logger()->info("peer={} takes no new calls: {}", peer_, health_->why_not_serving());
    listener->on_connect_failed(*this, /*refused=*/false);  // calls that do not wait for ready may fail now
  }
}

void Subchannel::on_transport_closed(const error_code& ec, const std::string& reason) {
  auto listener = listener_.lock();
  if (!listener) return;
  LostAttempts lost;  // the calls, and the ids of their attempts here
  bool was_ready = false, client_closed = false, retired = false;
  std::chrono::nanoseconds reconnect_in{0};
  // Closed by this client because the provider left the set: not the
  // provider's failure, even before it was ready (it may have come back
  // before this close landed: then it reconnects as usual, not in backoff).
  const bool ours = ec == transport::errc::closed;
  // A connection lost before it was ready, by the peer's doing: a failed connect.
  bool failed_connect = false;
  {
    Lock lock(mu_);
    was_ready = state_ == State::ready;
    client_closed = closed_;
    retired = retired_.load(std::memory_order_relaxed);
    failed_connect = !was_ready && !ours;
    if (was_ready || failed_connect) failing_.store(failed_connect, std::memory_order_release);
    set_state(State::idle);
    draining_.store(false, std::memory_order_release);
    transport_.reset();
    watched_channel_.store(nullptr);
    if (was_ready) next_attempt_ = ctx_->now() + ctx_->options.reconnect.first;  // the first attempt's delay
    if (failed_connect) last_error_ = "the connection to " + peer_ + " closed before it was ready: " + reason;
    if (failed_connect && !closed_ &&
        (ec == transport::errc::tls_handshake_failed || ec == transport::errc::tls_not_spoken ||
         ec == transport::errc::tls_required)) {
      ClientMetrics::count(ctx_->metrics.connect_failures);  // a failed handshake: as a refused connect
      logger()->warn("connect to {} failed: {}", peer_, reason);
    }
    reconnect_in = next_attempt_ - ctx_->now();
    table_.for_each([&](std::uint64_t id, const CallPtr& c) { lost.emplace_back(c, id); });
  }
  if (health_) health_->stop();  // the next connection watches again
  if (client_closed) return;     // close() fails the calls itself
  if (retired) {
    // A provider that left the set, closed once drained or after its grace:
    // no reconnect; calls still on it are retried elsewhere.
    logger()->debug("peer={} removed provider closed ({}): {} calls in flight", peer_, reason, lost.size());
    listener->on_retired_closed(*this);
  } else {
    // The next connect attempt when the backoff allows it (at once after a
    // loss, by default), whether or not calls are waiting.
    reconnect_task_->check_within(reconnect_in);
    if (was_ready || !lost.empty()) {
      logger()->info("peer={} connection lost ({}): {} calls in flight", peer_, reason, lost.size());
    }
    // Reconnect at once if calls are waiting (the ReconnectTimerTask would, at
    // its next check); the backoff decides whether an attempt is due.
    if (listener->calls_waiting()) maybe_reconnect(ctx_->now());
    if (failed_connect) listener->on_connect_failed(*this, /*refused=*/false);  // a failed handshake
  }
  if (!lost.empty()) {
    listener->on_attempts_lost(*this, lost, "connection lost (" + reason + (ec ? ": " + ec.message() : "") + ")");
  }
}

// ---------------------------------------------------------------- attempts

bool Subchannel::place(Call& call, CallPtr& spare, bool sweep, TimePoint deadline, TimePoint t, std::size_t max_active,
                       Placed& out) {
  Lock lock(mu_);
  if (closed_ || retired_.load(std::memory_order_relaxed) || !ready() || !transport_) return false;  // health too
  // Two calls may have picked its last slot at once: one gets it.
  if (max_active != 0 && active_.load() >= max_active) return false;
  out.transport = transport_.get();
  if (!out.transport->delivering_here()) out.held = transport_;
  // A call with nothing yet to end it at its deadline has it swept from this
  // entry: no timeout of its own on the wheel.
  out.swept = sweep && arm_sweep_locked(deadline, t);
  assert(!spare || spare.get() == &call);
  out.id = table_.insert(spare ? std::move(spare) : CallPtr(&call), out.swept ? deadline : kNever);
  // Counted before the lock drops: a retire (under this lock) that sees no
  // attempt active closes the channel, which then fails this one.
  active_.add();
  attempts_.add();
  return true;
}

Subchannel::SendResult Subchannel::send(const Placed& placed, Call& call, std::chrono::milliseconds wire,
                                        std::size_t& body, std::uint32_t& limit) {
  OutgoingRequest request{placed.id, call.method, call.payload, call.attachments, {}, {}, wire};
  if (call.stream) request.stream = &call.stream;
  request.compression = call.compression;
  request.compression_level = call.compression_level;
  if (call.send_trace) {
    request.extra_key = kTraceparentKey;
    request.extra_value = std::string_view(call.traceparent.data(), call.traceparent.size());
  }
  const auto sent = placed.transport->send_request(request, body, limit);
  if (sent == SendResult::sent && call.cells && !call.stream) {  // a stream counts its messages
    call.cells->payload(Direction::sent, call.payload.size(), request.wire_size, request.compressed);
  }
  return sent;
}

CallPtr Subchannel::take(const IncomingReply& reply) {
  CallPtr call = take(reply.id);
  if (call && call->cells && !call->stream) {  // a stream counts its messages
    call->cells->payload(Direction::received, reply.payload.size(), reply.wire_size, reply.compressed);
  }
  return call;
}

CallPtr Subchannel::take(std::uint64_t id) {
  CallPtr entry;
  std::uint64_t before = 0;
  {
    Lock lock(mu_);
    entry = table_.take(id);
    if (entry) {
      before = active_.load();
      active_.sub();
    }
  }
  if (entry) attempt_ended(before);
  return entry;
}

void Subchannel::attempt_ended(std::uint64_t before) {
  // A slot freed at max_active_per_provider: calls waiting for one go now.
  // Posted: the caller may hold a call's lock. A call that decides to wait
  // (under the driver's books lock) after this decrement sees the slot; one
  // that decided before is in the list the posted drain takes.
  const std::size_t cap = ctx_->options.max_active_per_provider;
  if (cap != 0 && before == cap && ready()) {
    if (auto listener = listener_.lock()) {
      asio::post(ctx_->ex, [listener = std::move(listener)] { listener->on_slot_freed(); });
    }
  }
  // Pairs with retire(): it marks the subchannel retired and reads `active_`
  // under mu_, under which `active_` dropped; `retired_` is read after. One
  // of the two sees the other.
  if (before == 1 && retired_.load(std::memory_order_seq_cst)) {
    asio::post(ctx_->ex, [self = shared_from_this()] { self->close_drained(); });
  }
}

std::shared_ptr<ClientTransport> Subchannel::transport() const {
  Lock lock(mu_);
  return transport_;
}

bool Subchannel::arm_sweep_locked(TimePoint deadline, TimePoint t) {
  if (deadline >= sweep_at_) return true;  // the sweep armed runs first and looks again
  sweep_timeout_.cancel();                 // at most one armed per subchannel
  std::error_code tec;
  struct SweepTask {
    std::weak_ptr<Subchannel> sub;
    TimePoint due;
    void operator()() const {
      if (auto s = sub.lock()) s->on_sweep_due(due);
    }
  };
  sweep_timeout_ = ctx_->timer.new_timeout(SweepTask{weak_from_this(), deadline},
                                           std::max(deadline - t, TimePoint::duration::zero()), tec);
  sweep_at_ = tec ? kNever : deadline;
  return !tec;
}

void Subchannel::on_sweep_due(TimePoint due) {
  auto listener = listener_.lock();
  if (!listener) return;
  common::WorkGate::Scope in(ctx_->sweep_work);
  if (!in) return;                 // the client closed: it ended every call
  const auto fired = ctx_->now();  // when the worker ran it, for the timeline
  asio::post(ctx_->ex, [listener = std::move(listener), self = shared_from_this(), due, fired] {
    self->sweep(due, fired, *listener);
  });
}

void Subchannel::sweep(TimePoint reached, TimePoint fired, SubchannelListener& listener) {
  std::vector<CallPtr> due;
  {
    Lock lock(mu_);
    // The wheel said `reached` has come: what is due by then is due, even if
    // this clock reads a hair earlier (as a call's own timeout would end it).
    const auto t = std::max(ctx_->now(), reached);
    const auto next = table_.sweep(t, [&](std::uint64_t, const CallPtr& c) { due.push_back(c); });
    if (sweep_at_ <= t) sweep_at_ = kNever;  // the one that ran (a later one stays armed)
    if (next != kNever && !closed_) arm_sweep_locked(next, t);
  }
  // Each takes its call's lock (never under ours) and completes it as its
  // own deadline would, taking its attempts out of the table.
  if (!due.empty()) listener.on_deadlines_due(due, fired);
}

// ---------------------------------------------------------------- the provider set

bool Subchannel::retire(std::shared_ptr<ClientTransport>& close_now) {
  if (health_) health_->stop();  // first: its stream is not one a drain waits for
  bool keep = false;
  {
    Lock lock(mu_);
    retired_.store(true, std::memory_order_seq_cst);
    wanted_.store(false, std::memory_order_release);  // no reconnect from now on (heartbeats while it drains)
    if (transport_) {
      keep = true;  // it drains: closed when its last attempt ends, or after the grace
      // Open streams drain too: they are pinned to it, so it stays until the
      // grace ends them (or its last attempt ends after they did).
      if (active_.load() == 0 && transport_->open_streams() == 0) close_now = transport_;
    } else if (state_ == State::connecting) {
      keep = true;  // on_connected drops the socket and forgets it
    }
  }
  if (!keep) {
    stop_tasks();
    return false;
  }
  // Its CloseTimerTask: closes the channel `removal_grace` from now. Until
  // then it keeps its heartbeats (watched()), so neither side takes a
  // connection that still carries calls for an idle one.
  const auto grace = ctx_->options.removal_grace;
  const auto close_at = timer::fast_steady_now() + grace;
  auto task = std::make_shared<CloseTimerTask>(
      [weak = weak_from_this(), close_at](std::vector<WatchedChannel>& out) {
        auto self = weak.lock();
        if (!self || !self->retired_.load(std::memory_order_acquire)) return false;
        WatchedChannel w;
        w.channel = self->watched_channel_.load();
        w.close_at = close_at;
        out.push_back(std::move(w));
        return true;
      },
      grace);
  {
    Lock lock(mu_);
    close_task_ = task;
  }
  task->start(ctx_->timer);
  return true;
}

void Subchannel::revive() {
  std::shared_ptr<CloseTimerTask> task;
  std::shared_ptr<ClientTransport> watched;  // its watch ended when it left: a new one decides
  {
    Lock lock(mu_);
    retired_.store(false, std::memory_order_seq_cst);
    task.swap(close_task_);
    if (health_ && state_ == State::ready) watched = transport_;
  }
  if (task) task->cancel();
  if (watched) health_->start_later(std::move(watched));  // not under the pool's lock: its answer dispatches
  logger()->debug("peer={} back in the provider set before its channel closed", peer_);
}

void Subchannel::stop_tasks() {
  std::shared_ptr<CloseTimerTask> close_task;
  {
    Lock lock(mu_);
    close_task.swap(close_task_);
  }
  heartbeat_task_->cancel();
  reconnect_task_->cancel();
  if (close_task) close_task->cancel();
}

void Subchannel::close_drained() {
  std::shared_ptr<ClientTransport> transport;
  {
    Lock lock(mu_);
    if (closed_ || !retired_.load(std::memory_order_relaxed) || active_.load() != 0) return;
    if (transport_ && transport_->open_streams() != 0) return;  // its streams run on until the grace
    transport = transport_;
  }
  if (transport)
    transport->close(transport::make_error_code(transport::errc::closed), "provider left the set; drained");
}

// ---------------------------------------------------------------- snapshots and close

void Subchannel::shut(std::vector<CallPtr>& calls, std::vector<std::shared_ptr<ClientTransport>>& transports) {
  std::shared_ptr<CloseTimerTask> close_task;
  {
    Lock lock(mu_);
    closed_ = true;
    table_.for_each([&](std::uint64_t, const CallPtr& c) { calls.push_back(c); });
    close_task.swap(close_task_);
    sweep_timeout_.cancel();
    sweep_at_ = kNever;
    // Break subchannel <-> transport: if the executor stops before the
    // caller closes it, neither keeps the other alive.
    if (transport_) transports.push_back(std::move(transport_));
    transport_.reset();
    watched_channel_.store(nullptr);
    set_state(State::idle);
  }
  heartbeat_task_->cancel();
  reconnect_task_->cancel();
  if (close_task) close_task->cancel();
  if (health_) health_->stop();
}

// ---------------------------------------------------------------- transport events

SubchannelListener* Subchannel::batch_listener() {
  if (!batch_listener_) batch_listener_ = listener_.lock();
  return batch_listener_.get();
}

void Subchannel::on_transport_reply(IncomingReply& reply, TimePoint received) {
  if (HealthWatch::is_watch_id(reply.id) && health_) [[unlikely]]
    return health_->on_open_answer(reply);  // the answer to its health watch's OPEN
  if (auto* listener = batch_listener()) listener->on_reply(*this, reply, received);
}

void Subchannel::on_batch_end() {
  // Released last: it may be the core's last reference, and the transport
  // holds this subchannel until its delivery returns.
  auto listener = std::move(batch_listener_);
}

bool Subchannel::watched(std::vector<WatchedChannel>& out) {
  // On the timer's worker: atomics and a pointer copy; the reconnect only posts.
  if (listener_.expired()) return false;
  // A provider that left is not reconnected, but while its channel drains it
  // heartbeats as before: calls still in flight on it need the peer to keep
  // it open (no idle close) and a dead peer found (the read idle timeout).
  const bool draining = retired_.load(std::memory_order_acquire);
  if (!wanted_.load(std::memory_order_acquire) && !draining) return true;
  WatchedChannel w;
  const State s = state_mirror_.load(std::memory_order_acquire);
  if (s == State::ready || s == State::handshaking) {
    // Handshaking: a peer that accepts and says nothing gets connect_timeout,
    // then the connection is closed and retried.
    w.channel = watched_channel_.load();
    w.heartbeat = std::chrono::milliseconds(s == State::ready ? heartbeat_ms_.load(std::memory_order_relaxed) : 0);
    w.idle_timeout = std::chrono::milliseconds(idle_timeout_ms_.load(std::memory_order_relaxed));
    if (s == State::ready && w.channel && w.channel->keepalive_paused()) {  // gRPC without calls: no PINGs
      w.heartbeat = std::chrono::milliseconds(0);
      w.idle_timeout = std::chrono::milliseconds(0);
    }
  }
  if (s == State::idle && !draining) {
    w.reconnect = [self = shared_from_this()](TimePoint) {
      if (self->listener_.expired()) return;
      asio::post(self->ctx_->ex, [self] { self->maybe_reconnect(self->ctx_->now()); });
    };
  }
  out.push_back(std::move(w));
  return true;
}

}  // namespace wheelrpc::rpc::detail
