#include "client_core.h"

#include <algorithm>
#include <cassert>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "control_frames.h"
#include "idle_limit.h"
#include "log.h"
#include "timeline.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using Phase = Call::Phase;

namespace {

std::chrono::milliseconds ms_between(TimePoint from, TimePoint to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from);
}

// A timer task owning one reference to its call: stored in the timeout
// record itself (no allocation), released when the timeout runs, is
// cancelled or is dropped. On the timer's worker it only pins the call and,
// if the call is still running, posts `Member` to the client's executor.
template <void (ClientCore::*Member)(const CallPtr&, TimePoint)>
struct CallTimeoutTask {
  using wheelrpc_relocatable = void;
  CallPtr call;
  void operator()() const {
    CallPin pin(*call);
    if (!pin.alive()) return;  // completed: its core may be gone
    auto core = call->core->shared_from_this();
    // When the worker ran it, for the timeline: how late the timer was,
    // apart from how long the executor then took to run the posted work.
    const TimePoint fired = core->now();
    asio::post(core->executor(), [core, c = call, fired] { ((*core).*Member)(c, fired); });
  }
};

// Installed in the handler's cancellation slot.
struct CancelHandler {
  explicit CancelHandler(CallPtr c) noexcept : call(std::move(c)) {}
  void operator()(asio::cancellation_type) {
    std::shared_ptr<ClientCore> core;
    {
      CallPin pin(*call);
      if (!pin.alive()) return;
      core = call->core->shared_from_this();
    }
    core->cancel(call, asio::error::operation_aborted, "call to '" + call->method + "' cancelled",
                 ClientCore::Origin::cancel_slot);
  }
  CallPtr call;
};

}  // namespace

// ---------------------------------------------------------------- construction

ClientCore::ClientCore(asio::any_io_executor ex, timer::Timer& timer, ClientOptions options)
    : ex_(std::move(ex)),
      io_ex_(ex_.target<asio::io_context::executor_type>()),
      timer_(timer),
      options_(std::move(options)),
      clock_(options_.clock),
      balancer_(make_load_balancer(options_.load_balance)),
      budget_(options_.retry.budget_ratio, options_.retry.budget_min_per_second, options_.retry.budget_window),
      rng_(reinterpret_cast<std::uintptr_t>(this) ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())),
      work_(asio::make_work_guard(ex_)) {
  if (options_.tls.enabled) tls_ = transport::TlsContext::make(options_.tls, transport::TlsRole::client);
  set_.store(std::make_shared<ProviderSet>());
}

ClientCore::~ClientCore() = default;

std::uint64_t ClientCore::random() noexcept {
  std::uint64_t z = rng_.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::chrono::milliseconds ClientCore::idle_timeout_for(std::chrono::milliseconds heartbeat) const {
  return idle_limit(options_.idle_timeout, heartbeat);
}

std::string ClientCore::describe(const Call& call, std::string_view what, const ClientConnection* provider) const {
  if (!provider) provider = call.latest;
  if (provider) return detail::describe(what, ms_between(call.start, now()), call.method, provider->peer());
  return detail::describe(what, ms_between(call.start, now()), call.method, current_set()->peers);
}

std::string ClientCore::attempt_timed_out(const Call& call, const Call::Attempt& a, bool server_too) const {
  return describe(call,
                  fmt::format("timeout (sent, attempt {} got no reply within its {} ms{})", a.number,
                              ms_between(a.sent, a.expires).count(),
                              server_too ? "; the server timed out too" : ""),
                  a.conn.get());
}

// ---------------------------------------------------------------- starting a call

bool ClientCore::fits_with_traceparent(std::string& method, std::string& payload,
                                       transport::Attachments& attachments) const {
  // Bytes a traceparent attachment adds to a body (55 characters of value).
  static const std::size_t cost = [] {
    transport::Frame with, without;
    with.method = without.method = "m";
    with.lent_key = kTraceparentKey;
    const std::string value(TraceContext::kTraceparentSize, '0');
    with.lent_value = value;
    return transport::encoded_size(with) - transport::encoded_size(without);
  }();
  if (payload.size() + cost < options_.channel.max_body / 2) return true;  // the common case: far below
  transport::Frame probe;  // lent the call's strings to measure the body, then given back
  probe.method.swap(method);
  probe.payload.swap(payload);
  probe.attachments.swap(attachments);
  const std::size_t body = transport::encoded_size(probe) - transport::kHeaderSize;
  probe.method.swap(method);
  probe.payload.swap(payload);
  probe.attachments.swap(attachments);
  return body + cost <= options_.channel.max_body;
}

void ClientCore::start_call(std::string method, std::string payload, CallOptions options,
                            asio::any_completion_handler<Client::Signature> handler) {
  // Every call ends counted ok (hot_) or failed (failed_), and is in pending_ meanwhile:
  // stats() derives the number of calls from those (one atomic fewer here).
  MethodCells* cells = options_.metrics ? &methods_.get(method) : nullptr;
  if (cells) cells->started();
  auto fail_now = [&](error_code ec, std::string message) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (ec == errc::timeout) timeouts_.fetch_add(1, std::memory_order_relaxed);
    if (cells) {
      cells->completed(call_code(ec), std::chrono::nanoseconds(0));
      if (ec == errc::timeout) {
        TimeoutRecord r;
        r.time = std::chrono::system_clock::now();
        r.method = method;
        r.phase = TimeoutPhase::waiting_to_send;
        timeout_log_.add(std::move(r));
      }
    }
    Completion done;
    done.armed = true;
    done.handler.swap(handler);
    done.ec = ec;
    done.response.error_message = std::move(message);
    done.context = current_deadline();
    deliver(done);
  };
  if (auto problem = validate(options)) {
    fail_now(errc::bad_request, *problem + ": call to '" + method + "' not sent");
    return;
  }
  bool has_deadline = options.timeout != CallOptions::kNoDeadline;
  if (options.timeout.count() <= 0) {
    fail_now(errc::timeout, fmt::format("timeout: the deadline of the call to '{}' had already passed ({} ms), "
                                        "not sent",
                                        method, options.timeout.count()));
    return;
  }
  const auto start = now();
  auto deadline = has_deadline ? start + options.timeout : kNever;
  auto budget = options.timeout;
  bool inherited = false;
  const auto context = current_deadline();
  if (options.inherit_deadline && context) {
    if (*context <= start) {
      fail_now(errc::timeout, fmt::format("timeout: the deadline inherited from the request being served passed "
                                          "{} ms ago: call to '{}' not sent",
                                          ms_between(*context, start).count(), method));
      return;
    }
    if (*context < deadline) {
      deadline = *context;
      budget = std::chrono::ceil<std::chrono::milliseconds>(*context - start);
      has_deadline = true;
      inherited = true;
    }
  }
  // Checked without a lock: close() checks again below (under the call's
  // lock), and the limit may be overshot by calls racing in at one instant.
  if (closed_.load(std::memory_order_acquire)) {
    fail_now(errc::cancelled, "client closed: call to '" + method + "' not sent");
    return;
  }
  if (pending_.fetch_add(1, std::memory_order_relaxed) >= options_.max_pending_calls) {
    pending_.fetch_sub(1, std::memory_order_relaxed);
    fail_now(errc::too_many_pending, fmt::format("{} calls already pending (max_pending_calls): call to '{}' not sent",
                                                 options_.max_pending_calls, method));
    return;
  }

  // The trace: the caller's own traceparent, else the trace of the request
  // being served continued, else a new one.
  auto trace_context = current_trace();
  std::optional<TraceContext> trace;
  for (const auto& [key, value] : options.attachments) {
    if (key == kTraceparentKey) {
      trace = TraceContext::parse(value);
      if (!trace) trace = TraceContext::make_root();  // theirs is kept on the wire; ours names it locally
      break;
    }
  }
  bool send_trace = false;
  if (!trace) {
    trace = trace_context ? trace_context->child() : TraceContext::make_root();
    // Sent unless it alone would push the body over the limit (a payload
    // right at the limit still goes, without a traceparent on the wire).
    send_trace = fits_with_traceparent(method, payload, options.attachments);
  }

  CallPtr call;
  {
    Call* fresh = new Call;
    call = share_unpublished(*fresh);  // the count's first reference, without a locked add
  }
  Call& c = *call;
  c.core = this;
  c.cells = cells;
  c.trace = *trace;
  c.send_trace = send_trace;
  if (send_trace) c.trace.write_traceparent(c.traceparent.data());
  c.trace_context = trace_context;
  c.method = std::move(method);
  c.start = start;
  c.inherited = inherited;
  c.context = context;
  c.wait_for_ready = options.wait_for_ready;
  c.plan.has_deadline = has_deadline;
  c.plan.idempotent = options.idempotent;
  c.plan.max_attempts = options.retries + 1;
  c.plan.attempt_timeout = options.attempt_timeout;
  c.plan.hedge_delay = options.hedge_delay;
  c.plan.budget = budget;
  c.plan.deadline = deadline;

  Completion done;
  done.spare = std::move(call);  // for the first attempt's table entry
  {
    CallLock lock(c.mu);
    c.payload = std::move(payload);
    c.attachments = std::move(options.attachments);
    // Not `c.handler = std::move(handler)`: Boost 1.81's move assignment of
    // any_completion_handler wraps the handler in itself until the stack runs out.
    c.handler.swap(handler);
    if (closed_.load(std::memory_order_acquire)) {
      complete_closed(lock, c, done);
    } else {
      auto slot = asio::get_associated_cancellation_slot(c.handler);
      if (slot.is_connected()) slot.template emplace<CancelHandler>(share_with_pinner(c));
      budget_.on_call(start);
      // Sent at once, the call's deadline rides in its table entry; else
      // (waiting, failed to send) it goes on the wheel now.
      dispatch(lock, c, done);
      if (!cover_deadline(lock, c, start)) {
        complete(lock, c, errc::unavailable, Response{{}, {}, "cannot schedule the deadline of '" + c.method + "'"},
                 Origin::other, done);
      }
    }
  }
  deliver(done);
}

bool ClientCore::cover_deadline(CallLock& lock, Call& call, TimePoint t) {
  assert(lock.owns_lock() && call.mu.held());
  (void)lock;
  if (!call.plan.has_deadline || call.cover != Call::Cover::none || call.done.load(std::memory_order_relaxed)) {
    return true;
  }
  std::error_code tec;
  call.deadline_timeout = timer_.new_timeout(CallTimeoutTask<&ClientCore::on_deadline>{share_with_pinner(call)},
                                             std::max(call.plan.deadline - t, TimePoint::duration::zero()), tec);
  if (tec) return false;
  call.cover = Call::Cover::own;
  return true;
}

bool ClientCore::arm_sweep(ClientConnection& conn, TimePoint deadline, TimePoint t) {
  assert(conn.mu.held());
  if (deadline >= conn.sweep_at) return true;  // the sweep armed runs first and looks again
  conn.sweep_timeout.cancel();  // at most one armed per connection
  std::error_code tec;
  struct SweepTask {
    std::weak_ptr<ClientConnection> conn;
    TimePoint due;
    void operator()() const {
      if (auto c = conn.lock()) c->on_sweep_due(due);
    }
  };
  conn.sweep_timeout = timer_.new_timeout(SweepTask{conn.weak_from_this(), deadline},
                                          std::max(deadline - t, TimePoint::duration::zero()), tec);
  conn.sweep_at = tec ? kNever : deadline;
  return !tec;
}

void ClientCore::sweep(ClientConnection& conn, TimePoint reached, TimePoint fired) {
  boost::container::small_vector<CallPtr, 8> due;
  {
    std::lock_guard conn_lock(conn.mu);
    // The wheel said `reached` has come: what is due by then is due, even if
    // this clock reads a hair earlier (as a call's own timeout would end it).
    const auto t = std::max(now(), reached);
    const auto next = conn.table.sweep(t, [&](std::uint64_t, const CallPtr& c) { due.push_back(c); });
    if (conn.sweep_at <= t) conn.sweep_at = kNever;  // the one that ran (a later one stays armed)
    if (next != kNever && !conn.closed) arm_sweep(conn, next, t);
  }
  // Each takes its call's lock (never under a connection's) and completes it
  // as its own deadline would; taking its attempts out of the table.
  for (const auto& c : due) on_deadline(c, fired);
}

// ---------------------------------------------------------------- attempts

std::optional<std::size_t> ClientCore::pick(CallLock& lock, const Call& call, const ProviderSet& set,
                                            bool avoid_live) {
  assert(lock.owns_lock() && call.mu.held());
  (void)lock;
  const auto& conns = set.conns;
  const std::size_t cap = options_.max_active_per_provider;
  if (conns.size() == 1 && call.live.empty()) {  // one provider, no attempt in flight: nothing to balance
    return conns[0]->has_slot(cap) ? std::optional<std::size_t>(0) : std::nullopt;
  }
  boost::container::small_vector<ProviderSnapshot, 8> snapshots;
  snapshots.reserve(conns.size());
  for (const auto& conn : conns) snapshots.push_back(conn->snapshot(cap));
  // The call knows its providers by identity; the policy by index in this set.
  const auto index_of = [&](const ClientConnection* c) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (conns[i].get() == c) return i;
    }
    return std::nullopt;
  };
  boost::container::small_vector<std::size_t, 2> tried, live;
  for (const auto* c : call.tried) {
    if (auto i = index_of(c)) tried.push_back(*i);
  }
  if (avoid_live) {
    for (const auto& a : call.live) {
      if (auto i = index_of(a.conn.get())) live.push_back(*i);
    }
  }
  PickPreference pref;
  pref.tried = {tried.data(), tried.size()};
  pref.last_failed = call.last_failed ? index_of(call.last_failed) : std::nullopt;
  pref.exclude = {live.data(), live.size()};
  return balancer_->choose({snapshots.data(), snapshots.size()}, pref);
}

ClientCore::SetPin::SetPin(const ClientCore& core) {
  const std::size_t slot = common::thread_slot();
  if (slot != common::kSharedSlot) {
    Line& line = core.set_cache_[slot];
    const std::uint64_t version = core.set_.version();
    if (line.version != version && line.pins == 0) {  // changed, and no outer pin holds the old one
      line.set = core.set_.load();
      line.version = version;
    }
    if (line.version == version) {
      ++line.pins;
      line_ = &line;
      set_ = line.set.get();
      return;
    }
  }
  held_ = core.set_.load();
  set_ = held_.get();
}

void ClientCore::dispatch(CallLock& lock, Call& call, Completion& done) {
  assert(lock.owns_lock() && call.mu.held());
  call.phase = Phase::idle;
  // A provider seen ready may go down before the attempt is sent, and one may
  // become ready while this call decides to wait: a few rounds settle both.
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    const SetPin set(*this);
    for (std::size_t tries = 0; tries < set->conns.size(); ++tries) {
      const auto index = pick(lock, call, *set, false);
      if (!index) break;
      if (send_attempt(lock, call, set->conns[*index], done)) return;
    }
    // Starts the connects that are due before a call that does not wait for
    // ready looks at the providers below: a provider being connected is worth
    // waiting for, one in backoff after a failure is not.
    if (!call.wait_for_ready) wake_all(now());
    std::unique_lock books(books_mu_);
    if (closed_.load(std::memory_order_acquire)) {
      books.unlock();
      complete_closed(lock, call, done);
      return;
    }
    // on_hello marks a provider ready before it drains the list under this
    // lock: seeing none ready here means the drain comes after the push. The
    // set is read again here for the same reason (a provider that joined
    // meanwhile is published before it can be ready). A failed connect
    // likewise marks its provider in backoff before it looks for calls to
    // fail fast (fail_fast_waiting). Providers that keep flapping between
    // ready and not get a few rounds, then the call waits like any other.
    const auto now_set = current_set();
    if (!any_slot(*now_set) || round == kRounds - 1) {
      if (!call.wait_for_ready && nothing_to_wait_for(*now_set)) {
        books.unlock();
        fail_unavailable(lock, call, *now_set, done);
        return;
      }
      call.phase = Phase::waiting;
      call.waited = true;
      waiting_.emplace_back(&call);
      break;
    }
  }
  if (call.wait_for_ready) wake_all(now());  // the others did, above
}

bool ClientCore::any_slot(const ProviderSet& set) const noexcept {
  const std::size_t cap = options_.max_active_per_provider;
  return std::any_of(set.conns.begin(), set.conns.end(), [cap](const auto& c) { return c->has_slot(cap); });
}

bool ClientCore::nothing_to_wait_for(const ProviderSet& set) noexcept {
  if (set.conns.empty()) return set.known || !set.source_error.empty();
  return std::all_of(set.conns.begin(), set.conns.end(), [](const auto& c) { return c->in_backoff(); });
}

void ClientCore::fail_unavailable(CallLock& lock, Call& call, const ProviderSet& set, Completion& done) {
  assert(lock.owns_lock() && call.mu.held());
  std::string why;
  if (set.conns.empty() && !set.known) {
    why = "unavailable (no provider yet: " + set.source_error + ")";
  } else if (set.conns.empty()) {
    why = "unavailable (no provider: " + (set.empty_why.empty() ? set.peers + " has none" : set.empty_why) + ")";
  } else {
    why = "unavailable (every provider is in backoff after a failed connect";
    for (const auto& c : set.conns) {
      std::lock_guard conn_lock(c->mu);
      if (!c->last_error.empty()) why += "; " + c->last_error;
    }
    why += ")";
  }
  call.phase = Phase::idle;
  ++call.attempts;
  hot_.add(kAttemptsCounter);
  attempts_unplaced_.fetch_add(1, std::memory_order_relaxed);  // an attempt on no provider
  attempt_failed(lock, call, nullptr, Failure::unavailable, errc::unavailable, describe(call, why), done);
}

void ClientCore::fail_fast_waiting() {
  if (closed_.load(std::memory_order_acquire) || !nothing_to_wait_for(*current_set())) return;
  std::vector<CallPtr> batch;
  {
    std::lock_guard books(books_mu_);
    // wait_for_ready is fixed when a call starts: read without its lock.
    auto keep = std::partition(waiting_.begin(), waiting_.end(), [](const CallPtr& c) { return c->wait_for_ready; });
    batch.assign(std::make_move_iterator(keep), std::make_move_iterator(waiting_.end()));
    waiting_.erase(keep, waiting_.end());
  }
  for (auto& ptr : batch) {
    Completion done;
    {
      CallLock lock(ptr->mu);
      if (!ptr->done.load(std::memory_order_relaxed) && ptr->phase == Call::Phase::waiting) {
        fail_unavailable(lock, *ptr, *current_set(), done);
      }
    }
    deliver(done);
  }
}

bool ClientCore::send_attempt(CallLock& lock, Call& call, const std::shared_ptr<ClientConnection>& conn_ptr,
                              Completion& done) {
  assert(lock.owns_lock() && call.mu.held());
  ClientConnection& conn = *conn_ptr;
  // A first attempt sent at once is sent at the call's start (one clock
  // reading fewer on the hot path).
  const auto t = call.attempts == 0 && !call.waited ? call.start : now();
  Call::Attempt a;
  a.sent = t;
  a.number = call.attempts + 1;
  // For the timeline, should the call time out: one store per attempt.
  (call.first_sent == TimePoint{} ? call.first_sent : call.last_sent) = t;
  const AttemptBudget budget = attempt_budget(call.plan, a.number, call.waited, t);
  a.expires = budget.expires;
  // The channel, held for the send; not counted when the call is made from
  // inside that channel's own delivery (a call started by a reply's
  // handler), which keeps it alive meanwhile.
  std::shared_ptr<transport::Channel> held;
  transport::Channel* channel = nullptr;
  {
    std::lock_guard conn_lock(conn.mu);
    if (conn.closed || conn.retired.load(std::memory_order_relaxed) ||
        conn.state != ClientConnection::State::ready || !conn.channel) {
      return false;
    }
    // Two calls may have picked its last slot at once: one gets it.
    const std::size_t cap = options_.max_active_per_provider;
    if (cap != 0 && conn.active.load(std::memory_order_relaxed) >= cap) return false;
    channel = conn.channel.get();
    if (!channel->delivering_here()) held = conn.channel;
    // A call with nothing yet to end it at its deadline has it swept from
    // this entry: no timeout of its own on the wheel.
    a.swept = call.plan.has_deadline && call.cover == Call::Cover::none && arm_sweep(conn, call.plan.deadline, t);
    assert(!done.spare || done.spare.get() == &call);
    a.id = conn.table.insert(done.spare ? std::move(done.spare) : CallPtr(&call),
                             a.swept ? call.plan.deadline : kNever);
    if (a.swept) call.cover = Call::Cover::swept;
    // Counted before the lock drops: a retire (under this lock) that sees
    // no attempt active closes the channel, which then fails this one.
    conn.active.store(conn.active.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // Only ever written under this lock: a plain add.
    conn.attempts.store(conn.attempts.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  ++call.attempts;
  const auto id = a.id;
  const auto expires = a.expires;
  a.conn = conn_ptr;
  call.live.push_back(std::move(a));
  call.phase = Phase::sent;
  call.latest = &conn;
  if (std::find(call.tried.begin(), call.tried.end(), &conn) == call.tried.end()) call.tried.push_back(&conn);
  hot_.add(kAttemptsCounter);
  call.hedge_at = next_hedge(call.plan, call.attempts, t);
  if (expires != kNever || call.hedge_at != kNever || call.aux_at != kNever) rearm_aux(lock, call, t);
  if (before_send_hook) before_send_hook(call.method, call.attempts);

  // The payload and attachments are lent to the frame for the encoding and
  // given back: a retry or hedge may need them again.
  transport::Frame f;
  f.header.flags = transport::kFlagRequest | transport::kFlagTwoWay;
  f.header.request_id = id;
  if (budget.wire.count() > 0) {
    f.header.deadline_ms = static_cast<std::uint32_t>(std::clamp<long long>(budget.wire.count(), 1, 0xffffffffLL));
  }
  f.method = call.method;
  f.attachments = std::move(call.attachments);
  f.payload = std::move(call.payload);
  if (call.send_trace) {
    f.lent_key = kTraceparentKey;
    f.lent_value = std::string_view(call.traceparent.data(), call.traceparent.size());
  }
  // Over our own limit, or the server's (from its HELLO): the server would
  // close the connection on it, failing every call there.
  const std::uint32_t server_limit = conn.peer_max_body.load(std::memory_order_relaxed);
  const std::uint32_t limit = std::min(options_.channel.max_body, server_limit);
  // A bound on the body without walking it: the method's length byte, the
  // attachment count and the lent attachment's framing fit in 16 bytes.
  const std::size_t bound = f.payload.size() + f.method.size() + f.lent_key.size() + f.lent_value.size() + 16;
  const std::size_t body = bound > limit || !f.attachments.empty()
                               ? transport::encoded_size(f) - transport::kHeaderSize
                               : 0;  // the common case: below either limit
  const bool too_big = body > limit;
  const error_code ec = too_big ? error_code{} : channel->send(f);
  call.payload = std::move(f.payload);
  call.attachments = std::move(f.attachments);
  if (!too_big && !ec) return true;

  drop_attempt(lock, call, call.live.size() - 1, true, done);
  if (too_big) {
    complete(lock, call, errc::bad_request,
             Response{{}, {}, describe(call, fmt::format("request body of {} bytes exceeds {} of {} bytes, not sent",
                                                         body,
                                                         limit < options_.channel.max_body
                                                             ? "the server's limit (max_body from its HELLO)"
                                                             : "the limit (ChannelOptions::max_body)",
                                                         limit))},
             Origin::other, done);
  } else {
    const bool full = ec == transport::errc::write_queue_full;
    attempt_failed(lock, call, &conn, full ? Failure::write_queue_full : Failure::not_sent,
                   full ? errc::too_many_pending : errc::connection_lost,
                   describe(call, full ? "write queue full, not sent" : "connection closed, not sent"), done);
  }
  return true;
}

void ClientCore::drop_attempt(CallLock& lock, Call& call, std::size_t index, bool failed, Completion& done) {
  assert(lock.owns_lock() && call.mu.held());
  (void)lock;
  Call::Attempt a = std::move(call.live[index]);
  call.live.erase(call.live.begin() + static_cast<std::ptrdiff_t>(index));
  ClientConnection& conn = *a.conn;
  const bool keep_latest = a.conn.get() == call.latest;
  CallPtr entry;  // released after the connection's lock
  std::uint64_t active_before = 0;
  {
    std::lock_guard conn_lock(conn.mu);
    entry = conn.table.take(a.id);
    if (entry) active_before = take_active(conn);
  }
  if (failed) conn.failures.fetch_add(1, std::memory_order_relaxed);
  if (entry) attempt_ended(conn, active_before);
  // Kept for the next attempt, or released after the call's lock: it may be
  // the call's last reference (start_call gave its own to the entry).
  if (entry && !done.spare) done.spare = std::move(entry);
  if (keep_latest) call.latest_hold = std::move(a.conn);
  if (a.swept) {
    // Its deadline left with the entry: on the wheel for the rest of the call
    // (a stopped timer leaves it to close(), which ends every call).
    call.cover = Call::Cover::none;
    if (!call.done.load(std::memory_order_relaxed)) cover_deadline(lock, call, now());
  }
}

void ClientCore::attempt_failed(CallLock& lock, Call& call, const ClientConnection* provider, Failure failure,
                                error_code ec, std::string message, Completion& done) {
  assert(lock.owns_lock() && call.mu.held());
  if (call.done.load(std::memory_order_relaxed)) return;
  call.last_ec = ec;
  call.last_error = message;
  call.last_failed = provider;
  if (!call.live.empty()) return;  // a hedge is still running: the call waits for it
  const auto t = now();
  const auto delay = retry_delay(options_.retry.backoff, call.attempts, random());
  auto verdict = decide_retry(call.plan, failure, call.attempts, t, delay);
  if (verdict == RetryVerdict::retry && !budget_.try_retry(t)) {
    refusals_.fetch_add(1, std::memory_order_relaxed);
    verdict = RetryVerdict::budget_refused;
  }
  if (verdict != RetryVerdict::retry) {
    complete(lock, call, ec,
             Response{{}, {}, final_message(message, verdict, call.attempts, call.plan.max_attempts, delay,
                                            ms_between(t, call.plan.deadline))},
             Origin::other, done);
    return;
  }
  retries_.fetch_add(1, std::memory_order_relaxed);
  logger()->debug("retrying '{}' in {} ms after attempt {}: {} trace={}", call.method, delay.count(), call.attempts,
                  message, call.trace.trace_id_hex());
  if (delay.count() <= 0) {
    dispatch(lock, call, done);
    return;
  }
  {
    std::lock_guard books(books_mu_);
    if (closed_.load(std::memory_order_acquire)) {
      complete_closed(lock, call, done);
      return;
    }
    backoff_.emplace(&call, CallPtr(&call));
  }
  call.phase = Phase::backoff;
  call.retry_at = t + delay;
  rearm_aux(lock, call, t);
}

void ClientCore::rearm_aux(CallLock& lock, Call& call, TimePoint t) {
  assert(lock.owns_lock() && call.mu.held());
  (void)lock;
  TimePoint next = kNever;
  if (call.phase == Phase::backoff) {
    next = call.retry_at;
  } else if (call.phase == Phase::sent) {
    next = call.hedge_at;
    for (const auto& a : call.live) next = std::min(next, a.expires);
  }
  if (next >= call.plan.deadline) next = kNever;  // the deadline covers it
  const bool pending = call.aux_at != kNever && call.aux.state() == timer::TimeoutState::pending;
  if (pending && next == call.aux_at) return;
  if (pending) call.aux.cancel();
  call.aux_at = kNever;
  call.aux = {};
  if (next == kNever) return;
  std::error_code tec;
  call.aux = timer_.new_timeout(CallTimeoutTask<&ClientCore::on_aux>{share_with_pinner(call)}, next - t, tec);
  if (!tec) call.aux_at = next;  // else the deadline will end the call
}

void ClientCore::on_aux(const CallPtr& ptr, TimePoint fired) {
  Call& call = *ptr;
  Completion done;
  {
    CallLock lock(call.mu);
    if (call.done.load(std::memory_order_relaxed)) return;
    // The timeout that posted this ran; a newer one may be pending already.
    if (call.aux.state() != timer::TimeoutState::pending) call.aux_at = kNever;
    const auto t = now();
    // Posted, it may run late: past the deadline, the deadline's own work
    // (posted too) ends the call; no hedge or retry starts now.
    if (call.plan.has_deadline && t >= call.plan.deadline) return;
    if (call.phase == Phase::backoff) {
      if (t < call.retry_at) {
        rearm_aux(lock, call, t);
      } else {
        {
          std::lock_guard books(books_mu_);
          backoff_.erase(&call);
        }
        call.retry_at = kNever;
        dispatch(lock, call, done);
      }
    } else if (call.phase == Phase::sent) {
      // Attempts past their own timeout are abandoned (a late reply is
      // dropped); the server was given the same budget and gave up too.
      const ClientConnection* timed_out = nullptr;  // identity only
      std::string message;
      for (std::size_t i = 0; i < call.live.size();) {
        if (call.live[i].expires <= t) {
          timed_out = call.live[i].conn.get();
          message = attempt_timed_out(call, call.live[i], /*server_too=*/false);
          drop_attempt(lock, call, i, true, done);
          attempt_timeouts_.fetch_add(1, std::memory_order_relaxed);
        } else {
          ++i;
        }
      }
      if (timed_out) {
        rearm_aux(lock, call, t);
        // Its timer, for the timeline if this ends the call.
        call.fired = fired;
        attempt_failed(lock, call, timed_out, Failure::attempt_timeout, errc::timeout, std::move(message), done);
        if (!call.done.load(std::memory_order_relaxed)) call.fired = TimePoint{};
      } else if (t >= call.hedge_at && !call.live.empty() && call.attempts < call.plan.max_attempts) {
        // Hedge on a provider the call is not already waiting on.
        call.hedge_at = kNever;
        bool sent = false;
        const auto set = current_set();
        const auto target = pick(lock, call, *set, /*avoid_live=*/true);
        if (!target) {
          call.hedge_at = t + call.plan.hedge_delay;  // none free now; look again later
        } else if (budget_.try_retry(t)) {
          hedges_.fetch_add(1, std::memory_order_relaxed);
          logger()->debug("hedging '{}' on {} after {} ms", call.method, set->conns[*target]->peer(),
                          ms_between(call.start, t).count());
          sent = send_attempt(lock, call, set->conns[*target], done);  // rearms the aux timeout
          if (!sent) call.hedge_at = t + call.plan.hedge_delay;    // it went down meanwhile
        } else {
          refusals_.fetch_add(1, std::memory_order_relaxed);  // no more hedges for this call
        }
        if (!sent) rearm_aux(lock, call, t);
      } else {
        rearm_aux(lock, call, t);
      }
    }
  }
  deliver(done);
}

// ---------------------------------------------------------------- replies

void ClientCore::on_reply(ClientConnection& conn, transport::Frame& frame, TimePoint received) {
  CallPtr ptr;
  std::uint64_t active_before = 0;
  {
    std::lock_guard conn_lock(conn.mu);
    ptr = conn.table.take(frame.header.request_id);
    if (ptr) active_before = take_active(conn);
  }
  if (!ptr) {
    late_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  attempt_ended(conn, active_before);
  Call& call = *ptr;
  Completion done;
  {
    CallLock lock(call.mu);
    // Ids are unique per connection only: match both.
    auto it = std::find_if(call.live.begin(), call.live.end(), [&](const Call::Attempt& x) {
      return x.id == frame.header.request_id && x.conn.get() == &conn;
    });
    if (it == call.live.end()) {  // completed meanwhile (the entry was taken just before)
      late_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Call::Attempt a = std::move(*it);
    call.live.erase(it);
    if (a.conn.get() == call.latest) call.latest_hold = std::move(a.conn);  // messages below name it
    if (a.swept) call.cover = Call::Cover::none;  // covered again below if the call goes on
    const auto status = static_cast<Status>(frame.header.status);
    error_code ec = status_error(status);
    if (ec) {
      conn.failures.fetch_add(1, std::memory_order_relaxed);
    } else {
      // Written only here, on the connection's strand: a plain add.
      conn.oks.store(conn.oks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    const auto t = ec ? now() : TimePoint{};  // only errors look at the time
    Response r;
    if (status == Status::server_timeout && a.expires != kNever && t >= a.expires &&
        t < call.plan.deadline) {
      // The attempt's own timeout (which the server was given as its budget):
      // the outcome the wheel was about to report for it.
      attempt_timeouts_.fetch_add(1, std::memory_order_relaxed);
      attempt_failed(lock, call, &conn, Failure::attempt_timeout, errc::timeout,
                     attempt_timed_out(call, a, /*server_too=*/true), done);
    } else if (status == Status::server_timeout && call.plan.has_deadline && t >= call.plan.deadline) {
      // Our deadline passed too (the server counts the same budget from a
      // little later): to the caller this is its own timeout.
      r.error_message = describe(call, "timeout (sent, waiting for the reply; the server timed out too)") +
                        attempt_note(call.attempts, call.plan.max_attempts, false);
      call.timeout_phase = TimeoutPhase::sent_waiting;
      complete(lock, call, errc::timeout, std::move(r), Origin::reply, done);
    } else if (ec) {
      // Said by the server: the prefix says so where the code alone is vague
      // (the same codes also come from the client's own checks).
      const char* what = ec == errc::unavailable   ? "unavailable (refused by the server)"
                         : ec == errc::bad_request ? "bad request (rejected by the server)"
                                                   : nullptr;
      std::string message = describe(call, what ? std::string_view(what) : std::string_view(ec.message()), &conn) +
                            ": " + frame.payload;
      const Failure failure = failure_of(status);
      if (may_retry(failure, call.plan.idempotent)) {
        attempt_failed(lock, call, &conn, failure, ec, std::move(message), done);
      } else {
        r.error_message = std::move(message) + attempt_note(call.attempts, call.plan.max_attempts, false);
        complete(lock, call, ec, std::move(r), Origin::reply, done);
      }
    } else if (received >= call.plan.deadline) [[unlikely]] {  // kNever without a deadline
      // The reply came after the deadline, before the deadline's timer ran
      // (the timer's worker or this executor was short of CPU). The deadline
      // is the contract: a success never completes after it. The call ends
      // as its timer would have ended it, and the reply counts as late.
      late_.fetch_add(1, std::memory_order_relaxed);
      call.late_reply = received;
      call.timeout_phase = TimeoutPhase::sent_waiting;
      r.error_message = describe(call, "timeout (sent; the reply arrived after the deadline)", &conn) +
                        attempt_note(call.attempts, call.plan.max_attempts, false);
      complete(lock, call, errc::timeout, std::move(r), Origin::reply, done, received);
    } else {
      r.payload = std::move(frame.payload);
      r.attachments = std::move(frame.attachments);
      if (!complete(lock, call, ec, std::move(r), Origin::reply, done, received)) {
        late_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (a.swept && !call.done.load(std::memory_order_relaxed)) cover_deadline(lock, call, now());  // it goes on
  }
  deliver(done);
}

// ---------------------------------------------------------------- completion

bool ClientCore::complete(CallLock& lock, Call& call, error_code ec, Response response, Origin origin,
                          Completion& done, TimePoint at) {
  assert(lock.owns_lock() && call.mu.held());
  if (!mark_done(call)) return false;
  if (ec) [[unlikely]] {
    completed_with_error(call, ec, response, at);
  } else if (call.cells) {
    call.cells->completed(CallCode::ok, (at == TimePoint{} ? now() : std::max(at, call.start)) - call.start);
  }
  // Out of every book. Attempts still in flight when another won or the
  // caller cancelled are told to their servers, which drop the reply.
  const bool tell = origin == Origin::reply || origin == Origin::cancel_slot;
  while (!call.live.empty()) {
    const Call::Attempt& a = call.live.back();
    if (tell) {
      std::lock_guard conn_lock(a.conn->mu);
      if (auto& ch = a.conn->channel) done.abandoned.emplace_back(ch, a.id);
    }
    // At the deadline on_deadline() counted them failed already.
    if (origin != Origin::timer) a.conn->cancelled.fetch_add(1, std::memory_order_relaxed);
    drop_attempt(lock, call, call.live.size() - 1, false, done);
    cancelled_attempts_.fetch_add(1, std::memory_order_relaxed);
  }
  if (call.phase == Phase::backoff) {
    std::lock_guard books(books_mu_);
    backoff_.erase(&call);
  }
  // A waiting call stays in waiting_; whoever drains that list drops it.
  if (call.aux_at != kNever) call.aux.cancel();
  call.aux_at = kNever;
  if (origin != Origin::timer && call.cover == Call::Cover::own) call.deadline_timeout.cancel();
  pending_.fetch_sub(1, std::memory_order_relaxed);
  if (ec) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (ec == errc::timeout) timeouts_.fetch_add(1, std::memory_order_relaxed);
  } else {
    hot_.add(kOkCounter);
  }
  done.armed = true;
  done.handler.swap(call.handler);
  done.ec = ec;
  done.response = std::move(response);
  done.may_run_inline = origin == Origin::reply;
  done.context = call.context;
  done.trace = call.trace_context;
  return true;
}

void ClientCore::completed_with_error(Call& call, error_code ec, Response& response, TimePoint at) {
  const auto t = at == TimePoint{} ? now() : std::max(at, call.start);
  std::string timeline;
  if (ec == errc::timeout) {
    // Where the time went, told with the error (built only for timeouts).
    timeline = timeline_of(call, t);
    response.error_message += "; " + timeline;
  }
  if (call.cells) {
    const auto code = call_code(ec);
    call.cells->completed(code, t - call.start);
    if (code == CallCode::timeout || code == CallCode::server_timeout) record_timeout(call, code, t, std::move(timeline));
  }
}

std::string ClientCore::timeline_of(const Call& call, TimePoint t) const {
  TimelineFacts f;
  f.start = call.start;
  f.first_sent = call.first_sent;
  f.last_sent = call.last_sent;
  f.reply = call.late_reply;
  f.deadline = call.plan.deadline;
  f.fired = call.fired;
  f.completed = t;
  // The socket's last write is on the steady clock: comparable only when the
  // client reads that clock too (not a manual one).
  const TimePoint sent = f.last_sent != TimePoint{} ? f.last_sent : f.first_sent;
  if (!clock_ && call.latest && sent != TimePoint{}) {
    if (const auto ch = call.latest->watched_channel.load()) {
      const auto wrote = ch->last_write();
      if (wrote >= sent && wrote <= t) f.socket_wrote = wrote;
    }
  }
  return timeline_text(f);
}

void ClientCore::record_timeout(const Call& call, CallCode code, TimePoint t, std::string timeline) {
  TimeoutRecord r;
  r.timeline = std::move(timeline);
  r.time = std::chrono::system_clock::now();
  r.method = call.method;
  if (call.latest) r.provider = call.latest->peer();
  r.code = code;
  if (code == CallCode::server_timeout) {
    r.phase = TimeoutPhase::server;
  } else if (call.timeout_phase) {
    r.phase = *call.timeout_phase;
  } else if (!call.live.empty()) {
    r.phase = TimeoutPhase::sent_waiting;
  } else {
    r.phase = TimeoutPhase::waiting_to_send;
    if (call.phase != Phase::backoff) {
      for (const auto& c : current_set()->conns) {
        const auto s = c->state_mirror.load(std::memory_order_relaxed);
        if (s == ClientConnection::State::connecting || s == ClientConnection::State::handshaking) {
          r.phase = TimeoutPhase::connecting;
          break;
        }
      }
    }
  }
  r.budget = call.plan.has_deadline ? std::chrono::duration_cast<std::chrono::microseconds>(call.plan.budget)
                                    : std::chrono::microseconds(0);
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(t - call.start);
  r.attempts = call.attempts;
  r.trace_id = call.trace.trace_id_hex();
  logger()->debug("call '{}' ended {} ({}) after {} us, {} attempt(s), provider {} trace={}", r.method,
                  call_code_name(code), timeout_phase_name(r.phase), r.elapsed.count(), r.attempts,
                  r.provider.empty() ? "-" : r.provider, r.trace_id);
  timeout_log_.add(std::move(r));
}

void ClientCore::complete_closed(CallLock& lock, Call& call, Completion& done) {
  complete(lock, call, errc::cancelled, Response{{}, {}, describe(call, "client closed")}, Origin::other, done);
}

// Invokes the handler on its associated executor: inline when the completion
// comes from a reply (already on an I/O thread), posted otherwise (a
// cancellation handler must not clear its own slot while it runs). A call
// started while a request was being served completes with that request's
// deadline in force, so the caller's next nested call inherits it too.
void ClientCore::deliver(Completion& done) {
  for (auto& [channel, id] : done.abandoned) channel->send(make_cancel(id));
  if (!done.armed) return;
  done.armed = false;
  // Asking for the handler's executor with ours as the fallback would wrap
  // ours in an any_completion_executor (heap-allocated) on every call; ask
  // without one and fall back ourselves.
  auto associated = asio::get_associated_executor(done.handler);
  const bool has_own = associated.target<asio::system_executor>() == nullptr;
  // Runs the handler with the call's deadline and trace in force (none, for
  // a call started outside any request).
  auto run = [](asio::any_completion_handler<Client::Signature>& h, error_code ec, Response r, std::optional<TimePoint> deadline,
                std::optional<TraceContext> trace) {
    asio::get_associated_cancellation_slot(h).clear();
    DeadlineScope scope(deadline);
    TraceScope trace_scope(trace);
    auto handler = std::move(h);
    std::move(handler)(ec, std::move(r));
  };
  if (!has_own && done.may_run_inline && io_ex_ && io_ex_->running_in_this_thread()) {
    // A reply on a thread of our own io_context: the handler runs here and
    // now, which is what dispatch would do, without wrapping it first.
    run(done.handler, done.ec, std::move(done.response), done.context, done.trace);
    return;
  }
  auto fn = [run, h = std::move(done.handler), ec = done.ec, r = std::move(done.response), deadline = done.context,
             trace = done.trace]() mutable { run(h, ec, std::move(r), deadline, trace); };
  if (!has_own) {
    if (done.may_run_inline) {
      asio::dispatch(ex_, std::move(fn));
    } else {
      asio::post(ex_, std::move(fn));
    }
  } else if (done.may_run_inline) {
    asio::dispatch(associated, std::move(fn));
  } else {
    // Through our executor (which can promise never to block), then on the
    // handler's own.
    asio::post(ex_, asio::bind_executor(associated, std::move(fn)));
  }
}

void ClientCore::cancel(const CallPtr& ptr, error_code ec, std::string message, Origin origin) {
  Completion done;
  {
    CallLock lock(ptr->mu);
    complete(lock, *ptr, ec, Response{{}, {}, std::move(message)}, origin, done);
  }
  deliver(done);
}

void ClientCore::on_deadline(const CallPtr& ptr, TimePoint fired) {
  Call& call = *ptr;
  Completion done;
  {
    CallLock lock(call.mu);
    if (call.done.load(std::memory_order_relaxed)) return;
    call.fired = fired;
    DeadlineFacts f;
    f.sent = !call.live.empty();
    f.inherited = call.inherited;
    f.last_ec = call.last_ec;
    f.last_error = call.last_error;
    f.attempts = call.attempts;
    f.max_attempts = call.plan.max_attempts;
    f.elapsed = ms_between(call.start, now());
    f.method = call.method;
    const auto set = current_set();
    f.peer = call.latest ? std::string_view(call.latest->peer()) : std::string_view(set->peers);
    for (const auto& a : call.live) a.conn->failures.fetch_add(1, std::memory_order_relaxed);
    if (!f.sent && options_.max_active_per_provider != 0 && !any_slot(*set) &&
        std::any_of(set->conns.begin(), set->conns.end(),
                    [](const auto& c) { return c->ready.load(std::memory_order_acquire); })) {
      f.every_ready_at_limit = options_.max_active_per_provider;
    }
    if (!f.sent) {
      f.every_provider_failed = !set->conns.empty();
      for (const auto& c : set->conns) {
        std::lock_guard conn_lock(c->mu);
        if (c->last_error.empty()) {
          f.every_provider_failed = false;
        } else {
          f.last_connect_error = c->last_error;
        }
      }
    }
    Outcome out = deadline_outcome(f);
    complete(lock, call, out.ec, Response{{}, {}, std::move(out.message)}, Origin::timer, done);
  }
  deliver(done);
}

// ---------------------------------------------------------------- close and stats

void ClientCore::close() {
  std::lock_guard once(close_mu_);
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  if (source_) source_->stop();
  std::vector<CallPtr> calls;
  std::vector<std::shared_ptr<transport::Channel>> channels;
  std::vector<std::shared_ptr<AbstractTimerTask>> tasks;
  {
    std::lock_guard books(books_mu_);
    for (auto& c : waiting_) calls.push_back(std::move(c));
    waiting_.clear();
    for (auto& [key, c] : backoff_) calls.push_back(c);
  }
  // No set is applied once closed_ is set (apply_set checks it under set_mu_).
  std::vector<std::shared_ptr<ClientConnection>> conns;
  {
    std::lock_guard set_lock(set_mu_);
    conns = current_set()->conns;
    for (auto& [ep, c] : retiring_) conns.push_back(c);
    retiring_.clear();
  }
  for (auto& conn : conns) {
    std::lock_guard conn_lock(conn->mu);
    conn->closed = true;
    conn->table.for_each([&](std::uint64_t, const CallPtr& c) { calls.push_back(c); });
    tasks.push_back(conn->heartbeat_task);
    tasks.push_back(conn->reconnect_task);
    tasks.push_back(conn->close_task);
    conn->sweep_timeout.cancel();
    conn->sweep_at = kNever;
    // Break connection <-> channel: if the executor stops before the close
    // below runs, neither keeps the other alive.
    if (conn->channel) channels.push_back(std::move(conn->channel));
    conn->channel.reset();
    conn->watched_channel.store(nullptr);
    conn->set_state(ClientConnection::State::idle);
  }
  for (auto& t : tasks) {
    if (t) t->cancel();
  }
  sweep_work_.close_and_wait();  // a sweep firing now posts nothing after this
  failback_->close();
  for (auto& c : calls) cancel(c, errc::cancelled, describe(*c, "client closed"), Origin::other);
  for (auto& ch : channels) ch->close(transport::make_error_code(transport::errc::closed), "client closed");
  work_.reset();
}

ClientStats ClientCore::stats() const {
  ClientStats s;
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.ok = hot_.value(kOkCounter);
  s.failed = get(failed_);
  s.pending = get(pending_);
  s.calls = s.ok + s.failed + s.pending;
  s.timeouts = get(timeouts_);
  s.late_replies = get(late_);
  s.connects = get(connects_);
  s.connect_failures = get(connect_failures_);
  s.attempts = hot_.value(kAttemptsCounter);
  s.retries = get(retries_);
  s.hedges = get(hedges_);
  s.budget_refusals = get(refusals_);
  s.attempts_unplaced = get(attempts_unplaced_);
  s.attempts_cancelled = get(cancelled_attempts_);
  s.attempt_timeouts = get(attempt_timeouts_);
  s.failback_pending = failback_->pending();
  s.failback_delivered = failback_->delivered();
  s.failback_retries = failback_->retries();
  s.failback_given_up = failback_->given_up();
  s.failback_dropped = failback_->dropped();
  s.provider_sets = get(provider_sets_);
  s.providers_added = get(providers_added_);
  s.providers_removed = get(providers_removed_);
  s.empty_sets_ignored = get(empty_sets_ignored_);
  s.heartbeats_sent = get(forgotten_heartbeats_);
  s.idle_closes = get(forgotten_idle_closes_);
  for (const auto& c : all_connections()) {
    if (c->heartbeat_task) s.heartbeats_sent += c->heartbeat_task->heartbeats_sent();
    if (c->reconnect_task) s.idle_closes += c->reconnect_task->idle_closes();
  }
  return s;
}

std::vector<std::shared_ptr<ClientConnection>> ClientCore::all_connections() const {
  std::lock_guard set_lock(set_mu_);
  auto conns = current_set()->conns;
  for (const auto& [ep, c] : retiring_) conns.push_back(c);
  return conns;
}

std::vector<ProviderStats> ClientCore::providers() const {
  std::vector<ProviderStats> out;
  const auto conns = all_connections();
  out.reserve(conns.size());
  for (const auto& c : conns) {
    std::lock_guard conn_lock(c->mu);
    out.push_back(ProviderStats{c->peer(), c->state == ClientConnection::State::ready,
                                c->active.load(std::memory_order_relaxed), c->attempts.load(std::memory_order_relaxed),
                                c->failures.load(std::memory_order_relaxed), c->last_error,
                                c->retired.load(std::memory_order_relaxed), c->oks.load(std::memory_order_relaxed),
                                c->cancelled.load(std::memory_order_relaxed),
                                c->connect_attempts.load(std::memory_order_relaxed)});
  }
  std::lock_guard set_lock(set_mu_);
  for (const auto& ep : left_order_) out.push_back(left_.at(ep));
  return out;
}

std::vector<ConnectionInfo> ClientCore::connections() const {
  std::vector<ConnectionInfo> out;
  const auto conns = all_connections();
  const auto t = now();
  out.reserve(conns.size());
  for (const auto& c : conns) {
    ConnectionInfo info;
    std::shared_ptr<transport::Channel> ch;
    {
      std::lock_guard conn_lock(c->mu);
      ch = c->channel;
      switch (c->state) {
        case ClientConnection::State::idle:
          info.state = c->failing.load(std::memory_order_relaxed) ? ConnectionInfo::State::backoff
                                                                  : ConnectionInfo::State::idle;
          if (info.state == ConnectionInfo::State::backoff && c->next_attempt > t) {
            info.next_attempt_in = std::chrono::ceil<std::chrono::milliseconds>(c->next_attempt - t);
          } else if (info.state == ConnectionInfo::State::backoff) {
            info.next_attempt_in = std::chrono::milliseconds(0);
          }
          break;
        case ClientConnection::State::connecting:
        case ClientConnection::State::handshaking: info.state = ConnectionInfo::State::connecting; break;
        case ClientConnection::State::ready: info.state = ConnectionInfo::State::ready; break;
      }
      if (c->retired.load(std::memory_order_relaxed)) info.state = ConnectionInfo::State::closing;
    }
    info.remote = c->peer();
    if (ch) fill_channel_info(info, *ch);
    info.heartbeat = std::chrono::milliseconds(c->heartbeat_ms.load(std::memory_order_relaxed));
    info.reconnect_attempts = c->connect_attempts.load(std::memory_order_relaxed);
    info.in_flight = c->active.load(std::memory_order_relaxed);
    out.push_back(std::move(info));
  }
  return out;
}

// ---------------------------------------------------------------- failback

void ClientCore::send_failback(RetryTimerTask::Delivery delivery) {
  auto method = delivery.method;
  auto payload = delivery.payload;
  auto options = delivery.options;
  start_call(std::move(method), std::move(payload), std::move(options),
             [weak = std::weak_ptr<FailbackQueue>(failback_), d = std::move(delivery)](error_code ec,
                                                                                       Response r) mutable {
               if (auto queue = weak.lock()) queue->on_result(std::move(d), ec, r.error_message);
             });
}

}  // namespace wheelrpc::rpc::detail
