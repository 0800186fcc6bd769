#include "client_core.h"

#include <algorithm>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "hello.h"
#include "log.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using Phase = Call::Phase;

namespace {

// Installed in the handler's cancellation slot; holds a reference to the call.
struct CancelHandler {
  explicit CancelHandler(Call* c) noexcept : call(c) {}
  CancelHandler(const CancelHandler&) = delete;
  CancelHandler& operator=(const CancelHandler&) = delete;
  ~CancelHandler() { release(call); }
  void operator()(asio::cancellation_type) {
    call->core->cancel(call, asio::error::operation_aborted, "call to '" + call->method + "' cancelled",
                       ClientCore::Origin::cancel_slot);
  }
  Call* call;
};

long long ms_between(Call::Clock::time_point from, Call::Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}
long long elapsed_ms(const Call* c) { return ms_between(c->start, Call::Clock::now()); }

void release_n(Call* call, int n) {
  for (; n > 0; --n) release(call);
}

// Invokes the handler on its associated executor: inline when the completion
// comes from a reply (already on an I/O thread), posted otherwise (the timer's
// worker must never run user code; a cancellation handler must not clear its
// own slot while it runs). A call started while a request was being served
// completes with that request's deadline in force, so the caller's next nested
// call inherits it too.
void invoke(asio::any_completion_handler<Client::Signature> handler, const asio::any_io_executor& fallback,
            error_code ec, Response response, bool may_run_inline,
            std::optional<Call::Clock::time_point> deadline) {
  // Asking for the handler's executor with our executor as the fallback would
  // wrap ours in an any_completion_executor (a heap-allocated, refcounted
  // target) on every call; ask without one and fall back ourselves.
  auto associated = asio::get_associated_executor(handler);
  const bool has_own = associated.target<asio::system_executor>() == nullptr;
  auto fn = [h = std::move(handler), ec, r = std::move(response), deadline]() mutable {
    asio::get_associated_cancellation_slot(h).clear();
    DeadlineScope scope(deadline);  // none, for a call started outside any request
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
    : ex_(std::move(ex)),
      timer_(timer),
      options_(std::move(options)),
      rng_(reinterpret_cast<std::uintptr_t>(this) ^ static_cast<std::uint64_t>(Clock::now().time_since_epoch().count())),
      budget_(options_.retry.budget_ratio, options_.retry.budget_min_per_second, options_.retry.budget_window),
      work_(asio::make_work_guard(ex_)) {}

void ClientCore::init(const std::vector<asio::ip::tcp::endpoint>& servers) {
  for (const auto& ep : servers) {
    std::string peer = transport::endpoint_text(ep);
    all_peers_ += (all_peers_.empty() ? "" : ",") + peer;
    conns_.push_back(std::make_shared<ClientConnection>(shared_from_this(), ep, std::move(peer),
                                                        options_.reconnect, conns_.size() + 1));
  }
  // Each provider's channel has its own HeartbeatTimerTask and
  // ReconnectTimerTask, every heartbeat / 3 (Dubbo's check tick). The tasks
  // see the client through a weak reference and stop once it is gone.
  const auto tick = std::max(options_.heartbeat / 3, std::chrono::milliseconds(1));
  for (auto& c : conns_) {
    auto provider = [weak = weak_from_this(), conn = c.get()]() -> std::optional<std::vector<WatchedChannel>> {
      auto self = weak.lock();
      if (!self) return std::nullopt;
      return self->watched(conn);
    };
    c->heartbeat_task = std::make_shared<HeartbeatTimerTask>(provider, tick);
    c->reconnect_task = std::make_shared<ReconnectTimerTask>(provider, tick);
    c->heartbeat_task->start(timer_);
    c->reconnect_task->start(timer_);
  }
}

std::uint64_t ClientCore::random() noexcept {
  // splitmix64; guarded by the lock like the rest of the picking state.
  std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string ClientCore::describe(const Call* call, std::string_view what, const ClientConnection* on) const {
  // By default the provider of the latest attempt; a call not sent yet names
  // every server it could have gone to.
  if (!on) on = call->conn;
  const std::string& peer = on ? on->peer() : all_peers_;
  return fmt::format("{} after {} ms calling '{}' on {}", what, elapsed_ms(call), call->method, peer);
}

std::string ClientCore::attempt_timed_out(const Call* call, const Call::Attempt& a, bool server_too) const {
  return describe(call,
                  fmt::format("timeout (sent, attempt {} got no reply within its {} ms{})", a.number,
                              ms_between(a.sent, a.expires), server_too ? "; the server timed out too" : ""),
                  a.conn);
}

std::string ClientCore::attempt_note(const Call* call, bool always) const {
  // Only once the call retried (or a retry was wanted and not made): a
  // single attempt that ended the call needs no count.
  if (!always && call->attempts <= 1) return {};
  return fmt::format(" (attempt {} of {})", call->attempts, call->max_attempts);
}

std::chrono::milliseconds ClientCore::idle_timeout_for(const ClientConnection& conn) const {
  if (options_.idle_timeout.count() > 0) return std::max(options_.idle_timeout, 2 * conn.heartbeat);
  return 3 * conn.heartbeat;
}

std::optional<std::vector<WatchedChannel>> ClientCore::watched(ClientConnection* c) {
  std::lock_guard lock(mu_);
  if (closed_) return std::nullopt;  // before touching `c`: close() may free it
  std::vector<WatchedChannel> out;
  if (!c->wanted) return out;
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
  w.reconnect = [weak = weak_from_this(), c](Clock::time_point now) {
    if (auto self = weak.lock()) self->maybe_reconnect(c, now);
  };
  out.push_back(std::move(w));
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

void ClientCore::wake_all(Clock::time_point now) {
  for (auto& c : conns_) {
    c->wanted = true;
    attempt(c.get(), now);
  }
}

void ClientCore::connect_all() {
  std::lock_guard lock(mu_);
  if (!closed_) wake_all(Clock::now());
}

// ---------------------------------------------------------------- starting a call

void ClientCore::start_call(std::string method, std::string payload, CallOptions options,
                            asio::any_completion_handler<Client::Signature> handler) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  auto fail_now = [&](error_code ec, std::string message) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (ec == errc::timeout) timeouts_.fetch_add(1, std::memory_order_relaxed);
    invoke(std::move(handler), ex_, ec, Response{{}, {}, std::move(message)}, false, current_deadline());
  };
  if (options.retries < 0 || options.retries > CallOptions::kMaxRetries) {
    fail_now(errc::bad_request, fmt::format("CallOptions::retries must be 0 .. {}, got {}: call to '{}' not sent",
                                            CallOptions::kMaxRetries, options.retries, method));
    return;
  }
  // The wire carries budgets as 32-bit milliseconds (about 49.7 days); longer
  // ones would also overflow the clock's arithmetic.
  constexpr std::chrono::milliseconds kLongest{0xffffffffLL};
  if (options.attempt_timeout.count() < 0 || options.hedge_delay.count() < 0 ||
      options.attempt_timeout > kLongest || options.hedge_delay > kLongest) {
    fail_now(errc::bad_request, fmt::format("CallOptions::attempt_timeout and hedge_delay must be 0 .. {} ms: "
                                            "call to '{}' not sent", kLongest.count(), method));
    return;
  }
  if (options.timeout > kLongest && options.timeout != CallOptions::kNoDeadline) {
    fail_now(errc::bad_request, fmt::format("CallOptions::timeout must be at most {} ms (or kNoDeadline), got {} ms: "
                                            "call to '{}' not sent", kLongest.count(), options.timeout.count(), method));
    return;
  }
  if (options.hedge_delay.count() > 0 && !options.idempotent) {
    fail_now(errc::bad_request, "CallOptions::hedge_delay needs an idempotent call (a hedge runs it twice): "
                                "call to '" + method + "' not sent");
    return;
  }
  bool has_deadline = options.timeout != CallOptions::kNoDeadline;
  if (options.timeout.count() <= 0) {
    fail_now(errc::timeout,
             fmt::format("timeout: the deadline of the call to '{}' had already passed ({} ms), "
                         "not sent",
                         method, options.timeout.count()));
    return;
  }
  const auto start = Clock::now();
  auto deadline = has_deadline ? start + options.timeout : Clock::time_point::max();
  auto budget = options.timeout;
  bool inherited = false;
  const auto context = current_deadline();
  if (options.inherit_deadline) {
    if (const auto& outer = context) {
      if (*outer <= start) {
        fail_now(errc::timeout,
                 fmt::format("timeout: the deadline inherited from the request being served passed {} ms "
                             "ago: call to '{}' not sent",
                             ms_between(*outer, start), method));
        return;
      }
      if (*outer < deadline) {
        deadline = *outer;
        budget = std::chrono::ceil<std::chrono::milliseconds>(*outer - start);
        has_deadline = true;
        inherited = true;
      }
    }
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
  call->start = start;
  call->has_deadline = has_deadline;
  call->inherited = inherited;
  call->context = context;
  call->budget = budget;
  call->deadline = deadline;
  call->max_attempts = options.retries + 1;
  call->idempotent = options.idempotent;
  call->wait_for_ready = options.wait_for_ready;
  call->attempt_timeout = options.attempt_timeout;
  call->hedge_delay = options.hedge_delay;
  // Not `call->handler = std::move(handler)`: Boost 1.81's move assignment of
  // any_completion_handler wraps the handler in itself until the stack runs out.
  call->handler.swap(handler);

  // The deadline, on the shared wheel. The task captures only the call (8 bytes:
  // stored inline, no allocation) and holds a reference until it runs or is
  // cancelled.
  std::error_code tec;
  if (has_deadline) {
    add_ref(call);
    call->timeout = timer_.new_timeout([call] { call->core->on_deadline(call); }, budget, tec);
    if (tec) release(call);
  }
  Lock lock(mu_);
  if (tec) {
    finish(lock, call,  errc::unavailable,
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
  if (call->done.load(std::memory_order_relaxed)) {  // completed already (deadline, cancel)
    lock.unlock();
    release(call);
    return;
  }
  if (closed_) {
    finish(lock, call, errc::cancelled, Response{{}, {}, describe(call, "client closed")}, Origin::other);
    release(call);
    return;
  }
  budget_.on_call(start);
  dispatch(lock, call);
  release(call);
}

// ---------------------------------------------------------------- attempts

ClientConnection* ClientCore::pick(const Call* call, bool avoid_live) {
  const std::size_t n = conns_.size();
  // Tiers of preference: providers this call has not tried; then any but the
  // one that failed last; then any. Within a tier, the load-balancing policy.
  // A hedge never goes where the call is already waiting (`avoid_live`).
  for (int tier = (call->tried.empty() ? 2 : 0); tier <= 2; ++tier) {
    auto eligible = [&](const ClientConnection* c) {
      if (c->state != ClientConnection::State::ready) return false;
      if (avoid_live && std::any_of(call->live.begin(), call->live.end(),
                                    [c](const Call::Attempt& a) { return a.conn == c; })) {
        return false;
      }
      if (tier == 0) return std::find(call->tried.begin(), call->tried.end(), c) == call->tried.end();
      if (tier == 1) return c != call->last_failed;
      return true;
    };
    switch (options_.load_balance) {
      case LoadBalance::round_robin:
        for (std::size_t i = 0; i < n; ++i) {
          ClientConnection* c = conns_[(next_conn_ + i) % n].get();
          if (eligible(c)) {
            next_conn_ = (next_conn_ + i + 1) % n;
            return c;
          }
        }
        break;
      case LoadBalance::least_active: {
        ClientConnection* best = nullptr;
        std::uint64_t ties = 0;
        for (auto& c : conns_) {
          if (!eligible(c.get())) continue;
          if (!best || c->active < best->active) {
            best = c.get();
            ties = 1;
          } else if (c->active == best->active && random() % ++ties == 0) {
            best = c.get();  // reservoir sampling: each tie equally likely
          }
        }
        if (best) return best;
        break;
      }
      case LoadBalance::power_of_two: {
        boost::container::small_vector<ClientConnection*, 8> ready;
        for (auto& c : conns_) {
          if (eligible(c.get())) ready.push_back(c.get());
        }
        if (ready.size() == 1) return ready[0];
        if (ready.size() > 1) {
          const std::size_t a = random() % ready.size();
          std::size_t b = random() % (ready.size() - 1);
          if (b >= a) ++b;
          return ready[b]->active < ready[a]->active ? ready[b] : ready[a];
        }
        break;
      }
    }
  }
  return nullptr;
}

void ClientCore::dispatch(Lock& lock, Call* call) {
  call->phase = Phase::idle;
  if (ClientConnection* conn = pick(call)) {
    send_attempt(lock, conn, call);
    return;
  }
  const auto now = Clock::now();
  if (!call->wait_for_ready) {
    std::string why = "unavailable (no connection ready, wait_for_ready off";
    for (const auto& c : conns_) {
      if (!c->last_error.empty()) why += "; " + c->last_error;
    }
    why += ")";
    wake_all(now);
    ++call->attempts;
    attempts_.fetch_add(1, std::memory_order_relaxed);
    attempt_failed(lock, call, nullptr, errc::unavailable, describe(call, why), Retry::always);
    return;
  }
  call->phase = Phase::waiting;
  call->waited = true;
  add_ref(call);
  waiting_.push_back(call);
  wake_all(now);
  lock.unlock();
}

void ClientCore::send_attempt(Lock& lock, ClientConnection* conn, Call* call) {
  const auto now = Clock::now();
  Call::Attempt a;
  a.conn = conn;
  a.sent = now;
  a.number = ++call->attempts;
  // This attempt's budget: what is left of the call's, or, for an idempotent
  // call that may still retry, its share of it (see CallOptions::attempt_timeout).
  std::chrono::milliseconds budget{0};
  if (call->has_deadline) {
    budget = call->waited || a.number > 1 ? std::chrono::ceil<std::chrono::milliseconds>(call->deadline - now)
                                          : call->budget;
    const int left = call->max_attempts - a.number + 1;
    if (call->idempotent && call->hedge_delay.count() == 0 && left > 1) {
      const auto share = call->attempt_timeout.count() > 0 ? call->attempt_timeout : budget / left;
      if (share < budget) {
        budget = std::max(share, std::chrono::milliseconds(1));
        a.expires = now + budget;
      }
    }
  } else if (call->idempotent && call->attempt_timeout.count() > 0 && call->hedge_delay.count() == 0 &&
             a.number < call->max_attempts) {
    budget = call->attempt_timeout;
    a.expires = now + budget;
  }
  a.id = table_.insert(call);
  add_ref(call);  // the table entry's
  call->live.push_back(a);
  call->phase = Phase::sent;
  call->conn = conn;
  if (std::find(call->tried.begin(), call->tried.end(), conn) == call->tried.end()) call->tried.push_back(conn);
  ++conn->active;
  ++conn->attempts;
  attempts_.fetch_add(1, std::memory_order_relaxed);
  call->hedge_at = call->hedge_delay.count() > 0 && a.number < call->max_attempts ? now + call->hedge_delay
                                                                                  : Call::kNever;
  int drop = 0;
  if (a.expires != Call::kNever || call->hedge_at != Call::kNever || call->aux_at != Call::kNever) {
    drop = rearm_aux(call, now);
  }
  auto channel = conn->channel;
  add_ref(call);  // for the use below, outside the lock
  lock.unlock();
  release_n(call, drop);

  transport::Frame f;
  f.header.flags = transport::kFlagRequest | transport::kFlagTwoWay;
  f.header.request_id = a.id;
  if (budget.count() > 0) {
    f.header.deadline_ms = static_cast<std::uint32_t>(std::clamp<long long>(budget.count(), 1, 0xffffffffLL));
  }
  error_code ec;
  bool too_big = false;
  std::size_t body = 0;
  {
    // The payload and attachments are lent to the frame for the encoding and
    // given back: a retry or hedge may need them again.
    std::lock_guard send_lock(call->send_mu);
    f.method = call->method;
    f.attachments = std::move(call->attachments);
    f.payload = std::move(call->payload);
    body = transport::encoded_size(f) - transport::kHeaderSize;
    if (body > options_.channel.max_body) {
      too_big = true;  // the peer would close the connection on it (and fail every call on it)
    } else {
      ec = channel ? channel->send(f) : make_error_code(transport::errc::closed);
    }
    call->payload = std::move(f.payload);
    call->attachments = std::move(f.attachments);
  }
  if (too_big || ec) {
    lock.lock();
    auto it = std::find_if(call->live.begin(), call->live.end(), [&](const Call::Attempt& x) { return x.id == a.id; });
    if (it == call->live.end()) {  // the call completed meanwhile
      lock.unlock();
    } else {
      drop_attempt(call, static_cast<std::size_t>(it - call->live.begin()), true);
      release(call);  // the table entry's (not the last: we hold one)
      if (too_big) {
        finish(lock, call, errc::bad_request,
               Response{{}, {}, describe(call, fmt::format("request body of {} bytes exceeds the limit of {} "
                                                           "bytes, not sent", body, options_.channel.max_body))},
               Origin::other);
      } else {
        const bool full = ec == transport::errc::write_queue_full;
        attempt_failed(lock, call, conn, full ? errc::too_many_pending : errc::connection_lost,
                       describe(call, full ? "write queue full, not sent" : "connection closed, not sent"),
                       Retry::always);
      }
    }
  }
  release(call);
}

void ClientCore::drop_attempt(Call* call, std::size_t index, bool failed) {
  Call::Attempt& a = call->live[index];
  table_.take(a.id);
  --a.conn->active;
  if (failed) ++a.conn->failures;
  call->live.erase(call->live.begin() + static_cast<std::ptrdiff_t>(index));
}

std::chrono::milliseconds ClientCore::retry_delay(int retry) {
  Backoff b(options_.retry.backoff, random() | 1);
  std::chrono::milliseconds d{0};
  for (int i = 0; i < retry; ++i) d = b.next();
  return d;
}

void ClientCore::attempt_failed(Lock& lock, Call* call, ClientConnection* conn, error_code ec, std::string message,
                                Retry retry) {
  if (call->done.load(std::memory_order_relaxed)) {
    lock.unlock();
    return;
  }
  call->last_ec = ec;
  call->last_error = message;
  call->last_failed = conn;
  if (!call->live.empty()) {
    // A hedge is still running: the call waits for it (and may hedge again).
    lock.unlock();
    return;
  }
  const bool allowed = retry == Retry::always || (retry == Retry::if_idempotent && call->idempotent);
  if (!allowed) {
    finish(lock, call, ec, Response{{}, {}, message + attempt_note(call)}, Origin::other);
    return;
  }
  if (call->attempts >= call->max_attempts) {
    finish(lock, call, ec, Response{{}, {}, message + attempt_note(call, call->max_attempts > 1)}, Origin::other);
    return;
  }
  const auto now = Clock::now();
  const auto delay = retry_delay(call->attempts);
  if (call->has_deadline && now + delay >= call->deadline) {
    finish(lock, call, ec,
           Response{{}, {}, message + attempt_note(call, true) +
                                fmt::format("; no time left to retry: backoff {} ms, {} ms left before the deadline",
                                            delay.count(), ms_between(now, call->deadline))},
           Origin::other);
    return;
  }
  if (!budget_.try_retry(now)) {
    refusals_.fetch_add(1, std::memory_order_relaxed);
    finish(lock, call, ec,
           Response{{}, {}, message + attempt_note(call, true) + "; retry refused by the client's retry budget"},
           Origin::other);
    return;
  }
  retries_.fetch_add(1, std::memory_order_relaxed);
  logger()->debug("retrying '{}' in {} ms after attempt {}: {}", call->method, delay.count(), call->attempts,
                  message);
  if (delay.count() <= 0) {
    dispatch(lock, call);
    return;
  }
  call->phase = Phase::backoff;
  call->retry_at = now + delay;
  add_ref(call);
  backoff_.insert(call);
  const int drop = rearm_aux(call, now);
  lock.unlock();
  release_n(call, drop);
}

int ClientCore::rearm_aux(Call* call, Clock::time_point now) {
  Clock::time_point next = Call::kNever;
  if (call->phase == Phase::backoff) {
    next = call->retry_at;
  } else if (call->phase == Phase::sent) {
    next = call->hedge_at;
    for (const auto& a : call->live) next = std::min(next, a.expires);
  }
  const bool pending = call->aux_at != Call::kNever && call->aux.state() == timer::TimeoutState::pending;
  if (pending && next == call->aux_at) return 0;
  int drop = 0;
  if (pending && call->aux.cancel()) ++drop;
  call->aux_at = Call::kNever;
  call->aux = {};
  if (next == Call::kNever || next >= call->deadline) return drop;  // the deadline covers it
  add_ref(call);
  std::error_code tec;
  call->aux = timer_.new_timeout([call] { call->core->on_aux(call); }, next - now, tec);
  if (tec) {
    ++drop;  // the deadline will end the call
  } else {
    call->aux_at = next;
  }
  return drop;
}

void ClientCore::on_aux(Call* call) {
  const auto keep = call->core;  // the gate lives in the core
  WorkGate::Scope in(timer_work_);
  if (!in) {  // closed: the call is done
    release(call);
    return;
  }
  int drop = 1;  // the aux timeout's reference
  Lock lock(mu_);
  if (call->done.load(std::memory_order_relaxed) || closed_) {
    lock.unlock();
    release_n(call, drop);
    return;
  }
  const auto now = Clock::now();
  if (call->phase == Phase::backoff && now >= call->retry_at) {
    if (backoff_.erase(call)) ++drop;
    call->retry_at = Call::kNever;
    dispatch(lock, call);
    release_n(call, drop);
    return;
  }
  if (call->phase == Phase::sent) {
    // Attempts past their own timeout are abandoned (a late reply is dropped);
    // the server was given the same budget and has given up too.
    ClientConnection* timed_out = nullptr;
    std::string message;
    for (std::size_t i = 0; i < call->live.size();) {
      const Call::Attempt& a = call->live[i];
      if (a.expires <= now) {
        timed_out = a.conn;
        message = attempt_timed_out(call, a, /*server_too=*/false);
        drop_attempt(call, i, true);
        ++drop;
        attempt_timeouts_.fetch_add(1, std::memory_order_relaxed);
      } else {
        ++i;
      }
    }
    if (timed_out) {
      const int d = rearm_aux(call, now);  // nothing is due now; cancels what is left
      drop += d;
      attempt_failed(lock, call, timed_out, errc::timeout, std::move(message), Retry::if_idempotent);
      release_n(call, drop);
      return;
    }
    if (now >= call->hedge_at && !call->live.empty() && call->attempts < call->max_attempts) {
      // Hedge on a provider this call is not already waiting on.
      call->hedge_at = Call::kNever;
      ClientConnection* target = pick(call, /*avoid_live=*/true);
      if (!target) {
        call->hedge_at = now + call->hedge_delay;  // none free now; look again later
      } else if (budget_.try_retry(now)) {
        hedges_.fetch_add(1, std::memory_order_relaxed);
        logger()->debug("hedging '{}' on {} after {} ms", call->method, target->peer(), elapsed_ms(call));
        send_attempt(lock, target, call);
        release_n(call, drop);
        return;
      } else {
        refusals_.fetch_add(1, std::memory_order_relaxed);  // no more hedges for this call
      }
    }
  }
  drop += rearm_aux(call, now);
  lock.unlock();
  release_n(call, drop);
}

// ---------------------------------------------------------------- connections

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
    conn->last_error = "cannot connect to " + conn->peer() + ": " + ec.message();
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
  Lock lock(mu_);
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
    if (!c->done.load(std::memory_order_relaxed) && c->phase == Phase::waiting) {
      dispatch(lock, c);
    } else {
      lock.unlock();
    }
    release(c);  // the waiting list's reference
    lock.lock();
  }
}

void ClientCore::on_reply(ClientConnection*, transport::Frame& frame) {
  Lock lock(mu_);
  Call* call = table_.take(frame.header.request_id);
  if (!call) {
    lock.unlock();
    late_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // The attempt this reply answers (the table entry's reference is ours now).
  std::size_t index = 0;
  while (index < call->live.size() && call->live[index].id != frame.header.request_id) ++index;
  const Call::Attempt a = call->live[index];
  --a.conn->active;
  call->live.erase(call->live.begin() + static_cast<std::ptrdiff_t>(index));

  const auto status = static_cast<transport::Status>(frame.header.status);
  error_code ec = status_error(status);
  if (ec) ++a.conn->failures;
  Retry retry = Retry::never;
  if (status == transport::Status::server_timeout) retry = Retry::if_idempotent;
  if (status == transport::Status::overloaded || status == transport::Status::shutting_down) retry = Retry::always;
  Response r;
  const auto now = Clock::now();
  if (status == transport::Status::server_timeout && a.expires != Call::kNever && now >= a.expires &&
      now < call->deadline) {
    // The attempt's own timeout (which the server was given as its budget):
    // the same outcome the wheel was about to report for it.
    attempt_timeouts_.fetch_add(1, std::memory_order_relaxed);
    attempt_failed(lock, call, a.conn, errc::timeout, attempt_timed_out(call, a, /*server_too=*/true),
                   Retry::if_idempotent);
    release(call);
    return;
  }
  if (status == transport::Status::server_timeout && call->has_deadline && now >= call->deadline) {
    // Our deadline passed too (the server counts the same budget from a little
    // later): to the caller this is its own timeout, which the wheel was about
    // to report.
    ec = errc::timeout;
    retry = Retry::never;
    r.error_message = describe(call, "timeout (sent, waiting for the reply; the server timed out too)") +
                      attempt_note(call);
  } else if (ec) {
    std::string message = describe(call, ec.message(), a.conn) + ": " + frame.payload;
    if (retry != Retry::never) {
      attempt_failed(lock, call, a.conn, ec, std::move(message), retry);
      release(call);
      return;
    }
    r.error_message = std::move(message) + attempt_note(call);
  } else {
    r.payload = std::move(frame.payload);
    r.attachments = std::move(frame.attachments);
  }
  if (!finish(lock, call, ec, std::move(r), Origin::reply)) late_.fetch_add(1, std::memory_order_relaxed);
  release(call);  // the table entry's
}

void ClientCore::on_closed(ClientConnection* conn, const error_code& ec, const std::string& reason) {
  std::vector<Call*> lost;
  Lock lock(mu_);
  const bool was_ready = conn->state == ClientConnection::State::ready;
  conn->state = ClientConnection::State::idle;
  conn->channel.reset();
  if (was_ready) conn->next_attempt = Clock::now() + options_.reconnect.first;  // the first attempt's delay
  table_.for_each([&](std::uint64_t, Call* c) {
    if (std::find(lost.begin(), lost.end(), c) != lost.end()) return;
    for (const auto& a : c->live) {
      if (a.conn == conn) {
        lost.push_back(c);
        return;
      }
    }
  });
  int lost_attempts = 0;
  std::vector<int> refs(lost.size(), 0);
  for (std::size_t k = 0; k < lost.size(); ++k) {
    Call* c = lost[k];
    for (std::size_t i = 0; i < c->live.size();) {
      if (c->live[i].conn == conn) {
        drop_attempt(c, i, true);
        ++refs[k];  // the table entry's reference, ours now
        ++lost_attempts;
      } else {
        ++i;
      }
    }
  }
  if (!was_ready) conn->last_error = "the connection to " + conn->peer() + " closed before it was ready: " + reason;
  // Reconnect at once if calls are waiting (the ReconnectTimerTask would, at
  // its next check); the backoff decides whether an attempt is due.
  if (!closed_ && !waiting_.empty()) attempt(conn, Clock::now());
  const bool closed = closed_;
  lock.unlock();
  if (!closed && (was_ready || lost_attempts > 0)) {
    logger()->info("peer={} connection lost ({}): {} calls in flight", conn->peer(), reason, lost_attempts);
  }
  const std::string what = "connection lost (" + reason + (ec ? ": " + ec.message() : "") + ")";
  for (std::size_t k = 0; k < lost.size(); ++k) {
    Call* c = lost[k];
    lock.lock();
    attempt_failed(lock, c, conn, errc::connection_lost, describe(c, what, conn), Retry::always);
    release_n(c, refs[k]);
  }
}

// ---------------------------------------------------------------- completion

int ClientCore::unbook(Call* call, Abandoned* abandoned) {
  int drop = 0;
  while (!call->live.empty()) {
    const Call::Attempt& a = call->live.back();
    if (abandoned && a.conn->channel) abandoned->emplace_back(a.conn->channel, a.id);
    drop_attempt(call, call->live.size() - 1, false);
    cancelled_attempts_.fetch_add(1, std::memory_order_relaxed);
    ++drop;
  }
  if (call->phase == Phase::backoff && backoff_.erase(call)) ++drop;
  if (call->aux_at != Call::kNever) {
    if (call->aux.cancel()) ++drop;
    call->aux_at = Call::kNever;
  }
  // A waiting call stays in waiting_; whoever drains that list drops it.
  return drop;
}

bool ClientCore::finish(Lock& lock, Call* call, error_code ec, Response response, Origin origin) {
  if (call->done.load(std::memory_order_relaxed)) {
    lock.unlock();
    return false;
  }
  call->done.store(true, std::memory_order_release);
  // Attempts still in flight when another won or the caller cancelled: tell
  // their servers, which drop the work's reply (and may stop the work).
  Abandoned abandoned;
  const bool tell = origin == Origin::reply || origin == Origin::cancel_slot;
  const int drop = unbook(call, tell ? &abandoned : nullptr);
  lock.unlock();
  for (auto& [channel, id] : abandoned) channel->send(make_cancel(id));
  pending_.fetch_sub(1, std::memory_order_relaxed);
  if (ec) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (ec == errc::timeout) timeouts_.fetch_add(1, std::memory_order_relaxed);
  } else {
    ok_.fetch_add(1, std::memory_order_relaxed);
  }
  if (origin != Origin::timer && call->timeout.cancel()) release(call);  // the timer's reference
  invoke(std::move(call->handler), ex_, ec, std::move(response), origin == Origin::reply,
         call->context);
  release_n(call, drop);
  return true;
}

void ClientCore::cancel(Call* call, error_code ec, std::string message, Origin origin) {
  Lock lock(mu_);
  finish(lock, call, ec, Response{{}, {}, std::move(message)}, origin);
}

void ClientCore::on_deadline(Call* call) {
  const auto keep = call->core;  // the gate lives in the core
  WorkGate::Scope in(timer_work_);
  if (!in) {  // closed: the call is done
    release(call);
    return;
  }
  Lock lock(mu_);
  if (call->done.load(std::memory_order_relaxed)) {
    lock.unlock();
    release(call);  // the timer's reference
    return;
  }
  std::string message;
  error_code ec = errc::timeout;
  const char* inherited = call->inherited ? " (the deadline inherited from the request being served)" : "";
  if (!call->live.empty()) {
    for (const auto& a : call->live) ++a.conn->failures;  // each timed out on its provider
    message = describe(call, "timeout (sent, waiting for the reply)") + attempt_note(call) + inherited;
    if (call->last_ec) message += "; earlier attempt: " + call->last_error;
  } else {
    // Never sent, or waiting to be sent again: say why. If every provider
    // failed to connect, the call could not have been served at all:
    // unavailable, with the reason.
    std::string last_error;
    bool all_failed = !conns_.empty();
    for (const auto& c : conns_) {
      if (c->last_error.empty()) all_failed = false;
      else last_error = c->last_error;
    }
    if (all_failed) {
      ec = errc::unavailable;
      message = describe(call, ("unavailable (no connection could be made before the deadline; " + last_error +
                                ")"));
    } else if (call->last_ec) {
      ec = call->last_ec;
      message = call->last_error + attempt_note(call) + "; no provider was ready for another attempt before the deadline";
    } else {
      message = describe(call, "timeout (not sent: no connection ready)") + std::string(inherited);
    }
  }
  finish(lock, call, ec, Response{{}, {}, std::move(message)}, Origin::timer);
  release(call);  // the timer's reference
}

void ClientCore::close() {
  std::vector<Call*> books, waiting;
  std::vector<std::shared_ptr<transport::Channel>> channels;
  std::vector<std::shared_ptr<ClientConnection>> conns;
  std::vector<timer::Timeout> failback;
  std::vector<std::shared_ptr<AbstractTimerTask>> tasks;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    closed_flag_.store(true, std::memory_order_release);
    table_.for_each([&](std::uint64_t, Call* c) {
      add_ref(c);
      books.push_back(c);
    });
    for (Call* c : backoff_) {
      add_ref(c);
      books.push_back(c);
    }
    waiting.swap(waiting_);
    for (auto& c : conns_) {
      tasks.push_back(c->heartbeat_task);
      tasks.push_back(c->reconnect_task);
      // Break channel <-> connection: if the executor stops before the close
      // below runs, neither keeps the other alive.
      if (c->channel) channels.push_back(std::move(c->channel));
      c->channel.reset();
      c->state = ClientConnection::State::idle;
    }
    for (auto& [task, entry] : failback_) failback.push_back(entry.second);
    failback_.clear();
  }
  for (auto& t : tasks) {
    if (t) t->cancel();
  }
  for (auto& t : failback) t.cancel();
  for (Call* c : books) {
    cancel(c, errc::cancelled, describe(c, "client closed"));
    release(c);
  }
  for (Call* c : waiting) {
    cancel(c, errc::cancelled, describe(c, "client closed"));
    release(c);
  }
  for (auto& ch : channels) ch->close(transport::make_error_code(transport::errc::closed), "client closed");
  {
    std::lock_guard lock(mu_);
    conns.swap(conns_);  // breaks the core <-> connection cycle
  }
  // A deadline or retry callback still running on the timer's worker may be
  // posting to the executor: wait for it, so the executor may be destroyed
  // once close() returns. Later ones see the gate closed and do nothing.
  timer_work_.close_and_wait();
  work_.reset();
}

// ---------------------------------------------------------------- failback

void ClientCore::send_failback(RetryTimerTask::Delivery delivery) {
  auto method = delivery.method;
  auto payload = delivery.payload;
  auto options = delivery.options;
  start_call(std::move(method), std::move(payload), std::move(options),
             [weak = weak_from_this(), d = std::move(delivery)](error_code ec, Response r) mutable {
               if (auto self = weak.lock()) self->failback_result(std::move(d), ec, r);
             });
}

void ClientCore::failback_result(RetryTimerTask::Delivery delivery, error_code ec, const Response& r) {
  if (!ec) {
    fb_delivered_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const bool fixable = ec == errc::unavailable || ec == errc::connection_lost || ec == errc::timeout ||
                       ec == errc::server_timeout || ec == errc::too_many_pending;
  if (ec == errc::cancelled || closed_flag_.load(std::memory_order_acquire)) return;  // the client closed
  if (!fixable) {
    fb_given_up_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("failback '{}': giving up, retrying cannot fix this: {}", delivery.method, r.error_message);
    return;
  }
  if (delivery.tries > options_.failback.retries) {
    fb_given_up_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("failback '{}': giving up after {} tries: {}", delivery.method, delivery.tries, r.error_message);
    return;
  }
  std::lock_guard lock(mu_);
  if (closed_) return;
  if (failback_.size() >= options_.failback.max_pending) {
    fb_dropped_.fetch_add(1, std::memory_order_relaxed);
    logger()->warn("failback '{}': dropped, {} retries already waiting (max_pending): {}", delivery.method,
                   failback_.size(), r.error_message);
    return;
  }
  logger()->info("failback '{}': try {} failed, retrying in {} ms: {}", delivery.method, delivery.tries,
                 options_.failback.interval.count(), r.error_message);
  auto task = std::make_shared<RetryTimerTask>(
      std::move(delivery), [weak = weak_from_this()](std::shared_ptr<RetryTimerTask> t) {
        if (auto self = weak.lock()) self->failback_resend(t);
      });
  RetryTimerTask* key = task.get();
  std::error_code tec;
  auto timeout = timer_.new_timeout(std::shared_ptr<timer::TimerTask>(task), options_.failback.interval, tec);
  if (tec) {
    fb_given_up_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("failback '{}': cannot schedule a retry: {}", key->delivery().method, tec.message());
    return;
  }
  failback_.emplace(key, std::make_pair(std::move(task), timeout));
}

void ClientCore::failback_resend(const std::shared_ptr<RetryTimerTask>& task) {
  WorkGate::Scope in(timer_work_);
  if (!in) return;
  {
    std::lock_guard lock(mu_);
    if (closed_ || failback_.erase(task.get()) == 0) return;
  }
  fb_retries_.fetch_add(1, std::memory_order_relaxed);
  auto delivery = task->take();
  ++delivery.tries;
  // Off the timer's worker: the send may connect and encode.
  asio::post(ex_, [self = shared_from_this(), d = std::move(delivery)]() mutable { self->send_failback(std::move(d)); });
}

// ---------------------------------------------------------------- stats

ClientStats ClientCore::stats() const {
  ClientStats s;
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.calls = get(calls_);
  s.ok = get(ok_);
  s.failed = get(failed_);
  s.timeouts = get(timeouts_);
  s.late_replies = get(late_);
  s.connects = get(connects_);
  s.connect_failures = get(connect_failures_);
  s.pending = get(pending_);
  s.attempts = get(attempts_);
  s.retries = get(retries_);
  s.hedges = get(hedges_);
  s.budget_refusals = get(refusals_);
  s.attempts_cancelled = get(cancelled_attempts_);
  s.attempt_timeouts = get(attempt_timeouts_);
  s.failback_delivered = get(fb_delivered_);
  s.failback_retries = get(fb_retries_);
  s.failback_given_up = get(fb_given_up_);
  s.failback_dropped = get(fb_dropped_);
  std::lock_guard lock(mu_);
  s.failback_pending = failback_.size();
  for (const auto& c : conns_) {
    if (c->heartbeat_task) s.heartbeats_sent += c->heartbeat_task->heartbeats_sent();
    if (c->reconnect_task) s.idle_closes += c->reconnect_task->idle_closes();
  }
  return s;
}

std::vector<ProviderStats> ClientCore::providers() const {
  std::lock_guard lock(mu_);
  std::vector<ProviderStats> out;
  out.reserve(conns_.size());
  for (const auto& c : conns_) {
    out.push_back(ProviderStats{c->peer(), c->state == ClientConnection::State::ready, c->active, c->attempts,
                                c->failures, c->last_error});
  }
  return out;
}

}  // namespace wheelrpc::rpc::detail
