#include "client_core.h"

#include <algorithm>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <fmt/format.h>

#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "hello.h"
#include "log.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// Installed in the handler's cancellation slot; holds a reference to the call.
struct CancelHandler {
  explicit CancelHandler(Call* c) noexcept : call(c) {}
  CancelHandler(const CancelHandler&) = delete;
  CancelHandler& operator=(const CancelHandler&) = delete;
  ~CancelHandler() { release(call); }
  void operator()(asio::cancellation_type) {
    call->core->complete(call, asio::error::operation_aborted,
                         Response{{}, {}, "call to '" + call->method + "' cancelled"},
                         ClientCore::Origin::cancel_slot);
  }
  Call* call;
};

long long elapsed_ms(const Call* c) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Call::Clock::now() - c->start).count();
}

// Invokes the handler on its associated executor: inline when the completion
// comes from a reply (already on an I/O thread), posted otherwise (the timer's
// worker must never run user code; a cancellation handler must not clear its
// own slot while it runs).
void invoke(asio::any_completion_handler<Client::Signature> handler, const asio::any_io_executor& fallback,
            error_code ec, Response response, bool may_run_inline) {
  // Asking for the handler's executor with our executor as the fallback would
  // wrap ours in an any_completion_executor (a heap-allocated, refcounted
  // target) on every call; ask without one and fall back ourselves.
  auto associated = asio::get_associated_executor(handler);
  const bool has_own = associated.target<asio::system_executor>() == nullptr;
  auto fn = [h = std::move(handler), ec, r = std::move(response)]() mutable {
    asio::get_associated_cancellation_slot(h).clear();
    std::move(h)(ec, std::move(r));
  };
  if (!has_own) {
    if (may_run_inline) {
      asio::dispatch(fallback, std::move(fn));
    } else {
      asio::post(fallback, std::move(fn));
    }
  } else if (may_run_inline) {
    asio::dispatch(associated, std::move(fn));
  } else {
    // Through our executor (which can promise never to block), then on the
    // handler's own.
    asio::post(fallback, asio::bind_executor(associated, std::move(fn)));
  }
}

}  // namespace

// ---------------------------------------------------------------- connection

void ClientConnection::on_frame(transport::Channel& ch, transport::Frame& frame) {
  if (frame.header.is_event()) {
    if (frame.header.is_request()) {
      if (is_heartbeat(frame)) ch.send(make_heartbeat_reply(frame.header.request_id));
      return;
    }
    if (!frame.attachments.empty()) core_->on_hello(this, frame);  // heartbeat replies carry nothing
    return;
  }
  if (frame.header.is_request()) {
    ch.close(transport::make_error_code(transport::errc::protocol_error), "the server sent a request");
    return;
  }
  core_->on_reply(this, frame);
}

void ClientConnection::on_close(transport::Channel&, const error_code& ec, const std::string& reason) {
  core_->on_closed(this, ec, reason);
}

// ---------------------------------------------------------------- core

ClientCore::ClientCore(asio::any_io_executor ex, timer::Timer& timer, ClientOptions options)
    : ex_(std::move(ex)), timer_(timer), options_(std::move(options)), work_(asio::make_work_guard(ex_)) {}

void ClientCore::init(const std::vector<asio::ip::tcp::endpoint>& servers) {
  for (const auto& ep : servers) {
    std::string peer = transport::endpoint_text(ep);
    all_peers_ += (all_peers_.empty() ? "" : ",") + peer;
    conns_.push_back(std::make_shared<ClientConnection>(shared_from_this(), ep, std::move(peer),
                                                        options_.reconnect, conns_.size() + 1));
  }
  // Heartbeats and reconnects, every heartbeat / 3 (Dubbo's check tick). The
  // tasks see the client through a weak reference and stop once it is gone.
  const auto tick = std::max(options_.heartbeat / 3, std::chrono::milliseconds(1));
  auto provider = [weak = weak_from_this()]() -> std::optional<std::vector<WatchedChannel>> {
    auto self = weak.lock();
    if (!self) return std::nullopt;
    return self->watched();
  };
  heartbeat_task_ = std::make_shared<HeartbeatTimerTask>(provider, tick);
  reconnect_task_ = std::make_shared<ReconnectTimerTask>(provider, tick);
  heartbeat_task_->start(timer_);
  reconnect_task_->start(timer_);
}

std::string ClientCore::describe(const Call* call, const char* what) const {
  // A call not sent yet names every server it could have gone to.
  const std::string& peer = call->conn ? call->conn->peer() : all_peers_;
  return fmt::format("{} after {} ms calling '{}' on {}", what, elapsed_ms(call), call->method, peer);
}

std::chrono::milliseconds ClientCore::idle_timeout_for(const ClientConnection& conn) const {
  if (options_.idle_timeout.count() > 0) return std::max(options_.idle_timeout, 2 * conn.heartbeat);
  return 3 * conn.heartbeat;
}

std::optional<std::vector<WatchedChannel>> ClientCore::watched() {
  std::lock_guard lock(mu_);
  if (closed_) return std::nullopt;
  std::vector<WatchedChannel> out;
  out.reserve(conns_.size());
  for (auto& c : conns_) {
    if (!c->wanted) continue;
    WatchedChannel w;
    if (c->state == ClientConnection::State::ready) {
      w.channel = c->channel;
      w.heartbeat = c->heartbeat;
      w.idle_timeout = idle_timeout_for(*c);
    } else if (c->state == ClientConnection::State::handshaking) {
      // Connected, HELLO sent, no answer yet: a peer that accepts and says
      // nothing gets connect_timeout, then the connection is closed and retried.
      w.channel = c->channel;
      w.idle_timeout = options_.connect_timeout;
    }
    w.reconnect = [weak = weak_from_this(), conn = c.get()](Clock::time_point now) {
      if (auto self = weak.lock()) self->maybe_reconnect(conn, now);
    };
    out.push_back(std::move(w));
  }
  return out;
}

void ClientCore::maybe_reconnect(ClientConnection* conn, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (closed_) return;
  for (auto& c : conns_) {
    if (c.get() == conn) attempt(conn, now);  // still one of ours
  }
}

void ClientCore::attempt(ClientConnection* conn, Clock::time_point now) {
  if (conn->state != ClientConnection::State::idle || now < conn->next_attempt) return;
  // The backoff's delays are "before attempt 1, 2, 3...". Attempt 1 (after a
  // loss, or ever) waits `first`, which next_attempt = {} already granted;
  // consume it, then set the earliest start of attempt 2. Delays count from
  // the start of each attempt, as gRPC's do.
  if (conn->backoff.attempts() == 0) conn->backoff.next();
  conn->next_attempt = now + conn->backoff.next();
  connect(conn);
}

void ClientCore::start_call(std::string method, std::string payload, CallOptions options,
                            asio::any_completion_handler<Client::Signature> handler) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  auto fail_now = [&](error_code ec, std::string message) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (ec == errc::timeout) timeouts_.fetch_add(1, std::memory_order_relaxed);
    invoke(std::move(handler), ex_, ec, Response{{}, {}, std::move(message)}, false);
  };
  const bool has_deadline = options.timeout != CallOptions::kNoDeadline;
  if (options.timeout.count() <= 0) {
    fail_now(errc::timeout,
             fmt::format("timeout: the deadline of the call to '{}' had already passed ({} ms), "
                         "not sent",
                         method, options.timeout.count()));
    return;
  }
  // Checked without the lock: close() is re-checked under it below, and the
  // limit may be overshot by the calls racing in at the same instant.
  if (closed_flag_.load(std::memory_order_acquire)) {
    fail_now(errc::cancelled, "client closed: call to '" + method + "' not sent");
    return;
  }
  if (pending_.fetch_add(1, std::memory_order_relaxed) >= options_.max_pending_calls) {
    pending_.fetch_sub(1, std::memory_order_relaxed);
    fail_now(errc::too_many_pending,
             fmt::format("{} calls already pending (max_pending_calls): call to '{}' not sent",
                         options_.max_pending_calls, method));
    return;
  }

  Call* call = std::make_unique<Call>().release();  // freed by the last release()
  call->core = shared_from_this();
  call->method = std::move(method);
  call->payload = std::move(payload);
  call->attachments = std::move(options.attachments);
  call->start = Clock::now();
  call->has_deadline = has_deadline;
  call->budget = options.timeout;
  call->deadline = has_deadline ? call->start + options.timeout : Clock::time_point::max();
  // Not `call->handler = std::move(handler)`: Boost 1.81's move assignment of
  // any_completion_handler wraps the handler in itself until the stack runs out.
  call->handler.swap(handler);

  // The deadline, on the shared wheel. The task captures only the call (8 bytes:
  // stored inline, no allocation) and holds a reference until it runs or is
  // cancelled.
  std::error_code tec;
  if (has_deadline) {
    add_ref(call);
    call->timeout = timer_.new_timeout([call] { call->core->on_deadline(call); }, options.timeout, tec);
  }
  if (tec) {
    release(call);
    complete(call, errc::unavailable,
             Response{{}, {}, "cannot schedule the deadline of '" + call->method + "': " + tec.message()},
             Origin::other);
    release(call);
    return;
  }
  auto slot = asio::get_associated_cancellation_slot(call->handler);
  if (slot.is_connected()) {
    add_ref(call);
    slot.template emplace<CancelHandler>(call);
  }

  std::unique_lock lock(mu_);
  if (call->done.load(std::memory_order_acquire)) {  // completed already (deadline, cancel)
    lock.unlock();
    release(call);
    return;
  }
  if (closed_) {
    lock.unlock();
    complete(call, errc::cancelled, Response{{}, {}, describe(call, "client closed")}, Origin::other);
    release(call);
    return;
  }
  if (ClientConnection* conn = pick_ready()) {
    send_now(lock, conn, call);
    return;
  }
  if (!options.wait_for_ready) {
    std::string why = "unavailable (no connection ready, wait_for_ready off";
    for (const auto& c : conns_) {
      if (!c->last_error.empty()) why += "; " + c->last_error;
    }
    why += ")";
    for (auto& c : conns_) {
      c->wanted = true;
      attempt(c.get(), Clock::now());
    }
    lock.unlock();
    complete(call, errc::unavailable, Response{{}, {}, describe(call, why.c_str())}, Origin::other);
    release(call);
    return;
  }
  call->waiting = true;
  call->waited = true;
  waiting_.push_back(call);
  const auto now = Clock::now();
  for (auto& c : conns_) {
    c->wanted = true;
    attempt(c.get(), now);
  }
}

ClientConnection* ClientCore::pick_ready() {
  const std::size_t n = conns_.size();
  for (std::size_t i = 0; i < n; ++i) {
    ClientConnection* c = conns_[(next_conn_ + i) % n].get();
    if (c->state == ClientConnection::State::ready) {
      next_conn_ = (next_conn_ + i + 1) % n;
      return c;
    }
  }
  return nullptr;
}

bool ClientCore::any_connecting() const {
  return std::any_of(conns_.begin(), conns_.end(), [](const auto& c) {
    return c->state == ClientConnection::State::connecting ||
           c->state == ClientConnection::State::handshaking;
  });
}

// Registers the call as sent on `conn` and writes it; the lock is released
// before touching the socket.
void ClientCore::send_now(std::unique_lock<std::mutex>& lock, ClientConnection* conn, Call* call) {
  call->waiting = false;
  call->conn = conn;
  table_insert(call);
  const std::uint64_t id = call->id;
  auto channel = conn->channel;
  add_ref(call);  // for the use below, outside the lock
  lock.unlock();

  transport::Frame f;
  f.header.flags = transport::kFlagRequest | transport::kFlagTwoWay;
  f.header.request_id = id;
  if (call->has_deadline) {
    // A call sent as it starts carries its whole budget (microseconds have
    // passed, and the server counts from its own later receipt anyway); one
    // that waited for a connection carries what is left.
    const auto left = call->waited ? std::chrono::ceil<std::chrono::milliseconds>(call->deadline - Clock::now())
                                   : call->budget;
    f.header.deadline_ms = static_cast<std::uint32_t>(std::clamp<long long>(left.count(), 1, 0xffffffffLL));
  }
  f.method = call->method;
  f.attachments = std::move(call->attachments);
  f.payload = std::move(call->payload);
  const std::size_t body = transport::encoded_size(f) - transport::kHeaderSize;
  if (body > options_.channel.max_body) {
    // The peer would close the connection on it (and fail every call on it).
    complete(call, errc::bad_request,
             Response{{}, {}, describe(call, fmt::format("request body of {} bytes exceeds the limit of {} "
                                                         "bytes, not sent", body, options_.channel.max_body).c_str())},
             Origin::other);
    release(call);
    return;
  }
  const error_code ec = channel ? channel->send(f) : make_error_code(transport::errc::closed);
  if (ec) {
    const bool full = ec == transport::errc::write_queue_full;
    complete(call, full ? errc::too_many_pending : errc::connection_lost,
             Response{{}, {}, describe(call, full ? "write queue full, not sent" : "connection closed, not sent")},
             Origin::other);
  }
  release(call);
}

void ClientCore::connect(ClientConnection* conn) {
  conn->state = ClientConnection::State::connecting;
  conn->wanted = true;
  std::shared_ptr<ClientConnection> keep;
  for (auto& c : conns_) {
    if (c.get() == conn) keep = c;
  }
  transport::async_connect(ex_, timer_, conn->endpoint(), options_.connect_timeout,
                           [self = shared_from_this(), keep](error_code ec, asio::ip::tcp::socket s) {
                             self->on_connected(keep.get(), ec, std::move(s));
                           });
}

void ClientCore::on_connected(ClientConnection* conn, error_code ec, asio::ip::tcp::socket socket) {
  std::unique_lock lock(mu_);
  if (closed_) return;
  if (ec) {
    // Calls waiting for a connection go on waiting (until their deadlines); the
    // ReconnectTimerTask retries under the connection's backoff.
    conn->state = ClientConnection::State::idle;
    conn->last_error = "cannot connect: " + ec.message();
    connect_failures_.fetch_add(1, std::memory_order_relaxed);
    logger()->warn("connect to {} failed: {}", conn->peer(), ec.message());
    return;
  }
  std::shared_ptr<ClientConnection> handler;
  for (auto& c : conns_) {
    if (c.get() == conn) handler = c;
  }
  auto channel = transport::Channel::create(std::move(socket), handler, options_.channel);
  conn->channel = channel;
  conn->state = ClientConnection::State::handshaking;
  const std::uint64_t hello_id = next_event_id_++;
  lock.unlock();
  channel->start();
  channel->send(make_hello(hello_id, options_.heartbeat, true));
}

void ClientCore::on_hello(ClientConnection* conn, const transport::Frame& frame) {
  std::unique_lock lock(mu_);
  if (closed_ || conn->state != ClientConnection::State::handshaking) return;
  conn->state = ClientConnection::State::ready;
  conn->heartbeat = std::max(hello_heartbeat(frame).value_or(options_.heartbeat), options_.heartbeat);
  conn->backoff.reset();
  conn->next_attempt = {};  // the first attempt after a loss is immediate
  conn->last_error.clear();
  connects_.fetch_add(1, std::memory_order_relaxed);
  logger()->debug("conn={} peer={} ready, heartbeat {} ms", conn->channel ? conn->channel->id() : 0,
                  conn->peer(), conn->heartbeat.count());
  // Send every call that waited for a connection.
  std::vector<Call*> batch;
  batch.swap(waiting_);
  for (Call* c : batch) {
    if (c->done.load(std::memory_order_acquire)) {
      c->waiting = false;
      lock.unlock();
      release(c);  // completed while waiting: drop the books' reference
      lock.lock();
      continue;
    }
    ClientConnection* target = pick_ready();
    if (!target) target = conn;
    send_now(lock, target, c);
    lock.lock();
  }
}

void ClientCore::on_reply(ClientConnection*, transport::Frame& frame) {
  Call* call;
  {
    std::lock_guard lock(mu_);
    call = table_take(frame.header.request_id);
  }
  if (!call) {
    late_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const auto status = static_cast<transport::Status>(frame.header.status);
  error_code ec = status_error(status);
  Response r;
  if (status == transport::Status::server_timeout && call->has_deadline && Clock::now() >= call->deadline) {
    // Our deadline passed too (the server counts the same budget from a little
    // later): to the caller this is its own timeout, which the wheel was about
    // to report.
    ec = errc::timeout;
    r.error_message = describe(call, "timeout (sent, waiting for the reply; the server timed out too)");
  } else if (ec) {
    r.error_message = describe(call, ec.message().c_str()) + ": " + frame.payload;
  } else {
    r.payload = std::move(frame.payload);
    r.attachments = std::move(frame.attachments);
  }
  if (!complete(call, ec, std::move(r), Origin::reply)) late_.fetch_add(1, std::memory_order_relaxed);
  release(call);  // the books' reference, taken out of the table above
}

void ClientCore::on_closed(ClientConnection* conn, const error_code& ec, const std::string& reason) {
  std::vector<Call*> lost;
  std::unique_lock lock(mu_);
  const bool was_ready = conn->state == ClientConnection::State::ready;
  conn->state = ClientConnection::State::idle;
  conn->channel.reset();
  if (was_ready) conn->next_attempt = Clock::now() + options_.reconnect.first;  // the first attempt's delay
  table_.for_each([&](std::uint64_t, Call* c) {
    if (c->conn == conn) lost.push_back(c);
  });
  for (Call* c : lost) table_take(c->id);
  if (!was_ready) conn->last_error = "the connection closed before it was ready: " + reason;
  // Reconnect at once if calls are waiting (the ReconnectTimerTask would, at
  // its next check); the backoff decides whether an attempt is due.
  if (!closed_ && !waiting_.empty()) attempt(conn, Clock::now());
  lock.unlock();
  if (!closed_ && (was_ready || !lost.empty())) {
    logger()->info("peer={} connection lost ({}): {} calls in flight", conn->peer(), reason, lost.size());
  }
  for (Call* c : lost) {
    const std::string what = "connection lost (" + reason + (ec ? ": " + ec.message() : "") + ")";
    complete(c, errc::connection_lost, Response{{}, {}, describe(c, what.c_str())}, Origin::other);
    release(c);
  }
}

bool ClientCore::complete(Call* call, error_code ec, Response response, Origin origin) {
  if (call->done.exchange(true, std::memory_order_acq_rel)) return false;
  bool release_books = false;
  if (origin != Origin::reply) {  // a reply was taken out of the table already
    std::lock_guard lock(mu_);
    if (call->id != 0) {
      table_take(call->id);
      release_books = true;
    }
    // A waiting call stays in waiting_; whoever drains that list drops it.
  }
  pending_.fetch_sub(1, std::memory_order_relaxed);
  if (ec) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (ec == errc::timeout) timeouts_.fetch_add(1, std::memory_order_relaxed);
  } else {
    ok_.fetch_add(1, std::memory_order_relaxed);
  }
  if (origin != Origin::timer && call->timeout.cancel()) release(call);  // the timer's reference
  invoke(std::move(call->handler), ex_, ec, std::move(response), origin == Origin::reply);
  if (release_books) release(call);
  return true;
}

void ClientCore::on_deadline(Call* call) {
  if (!call->done.load(std::memory_order_acquire)) {
    std::string message;
    error_code ec = errc::timeout;
    {
      std::lock_guard lock(mu_);
      if (call->id != 0) {
        message = describe(call, "timeout (sent, waiting for the reply)");
      } else {
        // Never sent: say why. If every server failed to connect, the call
        // could not have been served at all: unavailable, with the reason.
        std::string last_error;
        bool all_failed = !conns_.empty();
        for (const auto& c : conns_) {
          if (c->last_error.empty()) all_failed = false;
          else last_error = c->last_error;
        }
        if (all_failed) {
          ec = errc::unavailable;
          message = describe(call, ("unavailable (no connection could be made before the deadline; " +
                                    last_error + ")").c_str());
        } else {
          message = describe(call, "timeout (not sent: no connection ready)");
        }
      }
    }
    complete(call, ec, Response{{}, {}, std::move(message)}, Origin::timer);
  }
  release(call);  // the timer's reference
}

void ClientCore::close() {
  std::vector<Call*> sent, waiting;
  std::vector<std::shared_ptr<transport::Channel>> channels;
  std::vector<std::shared_ptr<ClientConnection>> conns;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    closed_flag_.store(true, std::memory_order_release);
    table_.for_each([&](std::uint64_t, Call* c) { sent.push_back(c); });
    for (Call* c : sent) table_take(c->id);
    waiting.swap(waiting_);
    for (auto& c : conns_) {
      // Break channel <-> connection: if the executor stops before the close
      // below runs, neither keeps the other alive.
      if (c->channel) channels.push_back(std::move(c->channel));
      c->channel.reset();
      c->state = ClientConnection::State::idle;
    }
    conns.swap(conns_);  // breaks the core <-> connection cycle
  }
  if (heartbeat_task_) heartbeat_task_->cancel();
  if (reconnect_task_) reconnect_task_->cancel();
  for (Call* c : sent) {
    complete(c, errc::cancelled, Response{{}, {}, describe(c, "client closed")}, Origin::other);
    release(c);
  }
  for (Call* c : waiting) {
    complete(c, errc::cancelled, Response{{}, {}, describe(c, "client closed")}, Origin::other);
    release(c);
  }
  for (auto& ch : channels) ch->close(transport::make_error_code(transport::errc::closed), "client closed");
  work_.reset();
}

ClientStats ClientCore::stats() const {
  ClientStats s;
  s.calls = calls_.load(std::memory_order_relaxed);
  s.ok = ok_.load(std::memory_order_relaxed);
  s.failed = failed_.load(std::memory_order_relaxed);
  s.timeouts = timeouts_.load(std::memory_order_relaxed);
  s.late_replies = late_.load(std::memory_order_relaxed);
  s.connects = connects_.load(std::memory_order_relaxed);
  s.connect_failures = connect_failures_.load(std::memory_order_relaxed);
  s.pending = pending_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace wheelrpc::rpc::detail
