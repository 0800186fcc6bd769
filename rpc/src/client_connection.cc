// A provider's connection: connecting, the HELLO exchange, losing it, and the
// lock-free view its timer tasks watch. The core's side of each event is
// here too, so one file tells a connection's life.

#include "client_connection.h"

#include <cassert>

#include <boost/asio/post.hpp>

#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "client_core.h"
#include "control_frames.h"
#include "log.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using State = ClientConnection::State;

ClientConnection::ClientConnection(std::weak_ptr<ClientCore> core, asio::ip::tcp::endpoint endpoint, std::string peer,
                                   const BackoffOptions& backoff_options, std::uint64_t seed)
    : backoff(backoff_options, seed), core_(std::move(core)), endpoint_(endpoint), peer_(std::move(peer)) {}

void ClientConnection::set_state(State s) noexcept {
  assert(mu.held());
  state = s;
  state_mirror.store(s, std::memory_order_release);
  ready.store(s == State::ready, std::memory_order_release);
}

void ClientConnection::on_sweep_due(TimePoint due) {
  auto core = core_.lock();
  if (!core) return;
  common::WorkGate::Scope in(core->sweep_work());
  if (!in) return;  // the client closed: it ended every call
  const auto ex = core->executor();
  const auto fired = core->now();  // when the worker ran it, for the timeline
  asio::post(ex, [core, self = shared_from_this(), due, fired] { core->sweep(*self, due, fired); });
}

ClientCore* ClientConnection::batch_core() {
  if (!batch_core_) batch_core_ = core_.lock();
  return batch_core_.get();
}

void ClientConnection::on_frame(transport::Channel& ch, transport::Frame& frame) {
  assert(ch.strand().running_in_this_thread());
  if (frame.header.is_event()) {
    if (frame.header.is_request()) {
      if (is_heartbeat(frame)) ch.send(make_heartbeat_reply(frame.header.request_id));
      return;
    }
    if (frame.attachments.empty()) return;  // a heartbeat reply: it refreshed last-read
    if (auto* core = batch_core()) core->on_hello(*this, frame);
    return;
  }
  if (frame.header.is_request()) {
    ch.close(transport::make_error_code(transport::errc::protocol_error), "the server sent a request");
    return;
  }
  if (auto* core = batch_core()) core->on_reply(*this, frame, core->receipt_time(ch));
}

void ClientConnection::on_frames_delivered(transport::Channel& ch) {
  assert(ch.strand().running_in_this_thread());
  (void)ch;
  // Released last: it may be the core's last reference, and the channel
  // holds this connection until its delivery returns.
  auto core = std::move(batch_core_);
}

void ClientConnection::on_close(transport::Channel& ch, const error_code& ec, const std::string& reason) {
  assert(ch.strand().running_in_this_thread());
  (void)ch;
  // Not batch_core(): a close may come outside a delivery (an I/O error),
  // where no on_frames_delivered would let go of it.
  if (auto core = core_.lock()) core->on_closed(*this, ec, reason);
}

bool ClientConnection::watched(std::vector<WatchedChannel>& out) {
  // On the timer's worker: atomics and a pointer copy; the reconnect only posts.
  auto core = core_.lock();
  if (!core) return false;
  // A provider that left is not reconnected, but while its channel drains it
  // heartbeats as before: calls still in flight on it need the peer to keep
  // it open (no idle close) and a dead peer found (the read idle timeout).
  const bool draining = retired.load(std::memory_order_acquire);
  if (!wanted.load(std::memory_order_acquire) && !draining) return true;
  WatchedChannel w;
  const State s = state_mirror.load(std::memory_order_acquire);
  if (s == State::ready || s == State::handshaking) {
    // Handshaking: a peer that accepts and says nothing gets connect_timeout,
    // then the connection is closed and retried.
    w.channel = watched_channel.load();
    w.heartbeat = std::chrono::milliseconds(s == State::ready ? heartbeat_ms.load(std::memory_order_relaxed) : 0);
    w.idle_timeout = std::chrono::milliseconds(idle_timeout_ms.load(std::memory_order_relaxed));
  }
  if (s == State::idle && !draining) {
    w.reconnect = [weak = std::weak_ptr<ClientCore>(core), self = shared_from_this()](TimePoint) {
      if (auto c = weak.lock()) {
        asio::post(c->executor(), [c, self] { c->maybe_reconnect(*self, c->now()); });
      }
    };
  }
  out.push_back(std::move(w));
  return true;
}

// ---------------------------------------------------------------- the core's side

void ClientCore::attempt_connect(std::unique_lock<common::SpinLock>& conn_lock, ClientConnection& conn, TimePoint t) {
  assert(conn_lock.owns_lock() && conn.mu.held());
  (void)conn_lock;
  if (conn.closed || conn.retired.load(std::memory_order_relaxed) || conn.state != State::idle ||
      t < conn.next_attempt) {
    return;
  }
  // The backoff's delays are "before attempt 1, 2, 3...". Attempt 1 (after a
  // loss, or ever) waits `first`, which next_attempt = {} already granted;
  // consume it, then set the earliest start of attempt 2. Delays count from
  // the start of each attempt, as gRPC's do.
  if (conn.backoff.attempts() == 0) conn.backoff.next();
  conn.next_attempt = t + conn.backoff.next();
  conn.set_state(State::connecting);
  conn.connect_attempts.fetch_add(1, std::memory_order_relaxed);
  conn.wanted.store(true, std::memory_order_release);
  transport::async_connect(ex_, timer_, conn.endpoint(), options_.connect_timeout,
                           [self = shared_from_this(), keep = conn.shared_from_this()](error_code ec,
                                                                                      asio::ip::tcp::socket s) {
                             self->on_connected(*keep, ec, std::move(s));
                           });
}

void ClientCore::maybe_reconnect(ClientConnection& conn, TimePoint t) {
  if (closed_.load(std::memory_order_acquire)) return;
  std::unique_lock conn_lock(conn.mu);
  attempt_connect(conn_lock, conn, t);
}

void ClientCore::wake_all(TimePoint t) {
  started_.store(true, std::memory_order_release);
  const auto set = current_set();
  for (auto& c : set->conns) {
    std::unique_lock conn_lock(c->mu);
    c->wanted.store(true, std::memory_order_release);
    attempt_connect(conn_lock, *c, t);
  }
}

void ClientCore::connect_all() {
  if (!closed_.load(std::memory_order_acquire)) wake_all(now());
}

void ClientCore::on_connected(ClientConnection& conn, error_code ec, asio::ip::tcp::socket socket) {
  std::unique_lock conn_lock(conn.mu);
  if (conn.closed) return;
  if (conn.retired.load(std::memory_order_relaxed)) {
    // It left the set while connecting: the socket is dropped unused.
    conn.set_state(State::idle);
    conn_lock.unlock();
    forget_retired(conn);
    return;
  }
  if (ec) {
    // The ReconnectTimerTask retries under the connection's backoff. Calls
    // waiting for ready go on waiting (until their deadlines); the others
    // fail now if no provider is left to wait for.
    conn.failing.store(true, std::memory_order_release);
    conn.set_state(State::idle);
    conn.last_error = "cannot connect to " + conn.peer() + ": " + ec.message();
    connect_failures_.fetch_add(1, std::memory_order_relaxed);
    logger()->warn("connect to {} failed: {}", conn.peer(), ec.message());
    auto task = conn.reconnect_task;
    const auto delay = conn.next_attempt - now();
    conn_lock.unlock();
    if (task) task->check_within(delay);  // the next attempt when its backoff ends, not at a later tick
    if (source_) source_->connect_failed(conn.endpoint());  // a name may resolve elsewhere now
    fail_fast_waiting();
    return;
  }
  auto channel = transport::Channel::create(std::move(socket), conn.shared_from_this(), options_.channel,
                                            tls_ ? &*tls_ : nullptr, options_.tls.server_name);
  conn.channel = channel;
  conn.watched_channel.store(channel);
  conn.idle_timeout_ms.store(options_.connect_timeout.count(), std::memory_order_relaxed);
  conn.set_state(State::handshaking);
  auto task = conn.reconnect_task;
  conn_lock.unlock();
  if (task) task->check_within(options_.connect_timeout);  // a HELLO that never comes
  channel->start();
  channel->send(make_hello(next_event_id_.fetch_add(1, std::memory_order_relaxed), options_.heartbeat, true,
                           options_.channel.max_body));
}

void ClientCore::on_hello(ClientConnection& conn, const transport::Frame& frame) {
  std::shared_ptr<ReconnectTimerTask> task;
  std::chrono::milliseconds idle{0};
  {
    std::unique_lock conn_lock(conn.mu);
    if (conn.closed || conn.state != State::handshaking) return;
    const auto heartbeat = std::max(hello_heartbeat(frame).value_or(options_.heartbeat), options_.heartbeat);
    conn.heartbeat_ms.store(heartbeat.count(), std::memory_order_relaxed);
    conn.peer_max_body.store(hello_max_body(frame), std::memory_order_relaxed);
    idle = idle_timeout_for(heartbeat);
    conn.idle_timeout_ms.store(idle.count(), std::memory_order_relaxed);
    task = conn.reconnect_task;
    conn.failing.store(false, std::memory_order_release);
    conn.set_state(State::ready);
    conn.backoff.reset();
    conn.next_attempt = {};  // the first attempt after a loss is immediate
    conn.last_error.clear();
    logger()->debug("conn={} peer={} ready, heartbeat {} ms", conn.channel ? conn.channel->id() : 0, conn.peer(),
                    heartbeat.count());
  }
  // The reconnect task sleeps until the idle deadline it last saw, the
  // handshake's (connect_timeout from its start): the agreed one may be sooner.
  if (task) task->check_within(idle);
  connects_.fetch_add(1, std::memory_order_relaxed);
  dispatch_waiting();
}

void ClientCore::dispatch_waiting() {
  // Send every call that waited for a connection.
  std::vector<CallPtr> batch;
  {
    std::lock_guard books(books_mu_);
    batch.swap(waiting_);
  }
  for (auto& ptr : batch) {
    Completion done;
    {
      CallLock lock(ptr->mu);
      if (!ptr->done.load(std::memory_order_relaxed) && ptr->phase == Call::Phase::waiting) dispatch(lock, *ptr, done);
    }
    deliver(done);
  }
}

void ClientCore::on_closed(ClientConnection& conn, const error_code& ec, const std::string& reason) {
  std::vector<std::pair<CallPtr, std::uint64_t>> lost;  // the calls, and the ids of their attempts here
  bool was_ready = false, client_closed = false, retired = false;
  std::shared_ptr<ReconnectTimerTask> task;
  std::chrono::nanoseconds reconnect_in{0};
  // Closed by this client because the provider left the set: not the
  // provider's failure, even before it was ready (it may have come back
  // before this close landed: then it reconnects as usual, not in backoff).
  const bool ours = ec == transport::errc::closed;
  // A connection lost before it was ready, by the peer's doing: a failed connect.
  bool failed_connect = false;
  {
    std::unique_lock conn_lock(conn.mu);
    was_ready = conn.state == State::ready;
    client_closed = conn.closed;
    retired = conn.retired.load(std::memory_order_relaxed);
    failed_connect = !was_ready && !ours;
    if (was_ready || failed_connect) conn.failing.store(failed_connect, std::memory_order_release);
    conn.set_state(State::idle);
    conn.channel.reset();
    conn.watched_channel.store(nullptr);
    if (was_ready) conn.next_attempt = now() + options_.reconnect.first;  // the first attempt's delay
    if (failed_connect) conn.last_error = "the connection to " + conn.peer() + " closed before it was ready: " + reason;
    if (failed_connect && !conn.closed &&
        (ec == transport::errc::tls_handshake_failed || ec == transport::errc::tls_not_spoken ||
         ec == transport::errc::tls_required)) {
      connect_failures_.fetch_add(1, std::memory_order_relaxed);  // a failed handshake: as a refused connect
      logger()->warn("connect to {} failed: {}", conn.peer(), reason);
    }
    task = conn.reconnect_task;
    reconnect_in = conn.next_attempt - now();
    conn.table.for_each([&](std::uint64_t id, const CallPtr& c) { lost.emplace_back(c, id); });
  }
  if (client_closed) return;  // close() fails the calls itself
  if (retired) {
    // A provider that left the set, closed once drained or after its grace:
    // no reconnect; calls still on it are retried elsewhere.
    logger()->debug("peer={} removed provider closed ({}): {} calls in flight", conn.peer(), reason, lost.size());
    forget_retired(conn);
  } else {
    // The next connect attempt when the backoff allows it (at once after a
    // loss, by default), whether or not calls are waiting.
    if (task) task->check_within(reconnect_in);
    if (was_ready || !lost.empty()) {
      logger()->info("peer={} connection lost ({}): {} calls in flight", conn.peer(), reason, lost.size());
    }
    // Reconnect at once if calls are waiting (the ReconnectTimerTask would, at
    // its next check); the backoff decides whether an attempt is due.
    bool waiting = false;
    {
      std::lock_guard books(books_mu_);
      waiting = !waiting_.empty();
    }
    if (waiting) maybe_reconnect(conn, now());
    if (failed_connect) fail_fast_waiting();  // a failed handshake is a failed connect
  }
  const std::string what = "connection lost (" + reason + (ec ? ": " + ec.message() : "") + ")";
  for (auto& entry : lost) {
    Call& call = *entry.first;
    const std::uint64_t id = entry.second;  // not a structured binding: clang 14 cannot capture those
    Completion done;
    {
      CallLock lock(call.mu);
      auto it = std::find_if(call.live.begin(), call.live.end(),
                             [&](const Call::Attempt& a) { return a.id == id && a.conn.get() == &conn; });
      if (it == call.live.end()) continue;  // answered or abandoned meanwhile
      drop_attempt(lock, call, static_cast<std::size_t>(it - call.live.begin()), true, done);
      attempt_failed(lock, call, &conn, Failure::connection_lost, errc::connection_lost,
                     describe(call, what, &conn), done);
    }
    deliver(done);
  }
}

}  // namespace wheelrpc::rpc::detail
