#include "client/call_driver.h"

#include <algorithm>
#include <cassert>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/deadline.h>

#include "client/call_host.h"
#include "client/call_timeouts.h"
#include "client/client_context.h"
#include "client/client_interception.h"
#include "base/log.h"
#include "base/metadata_split.h"
#include "client/provider_pool.h"
#include "client/subchannel.h"
#include "client/timeline.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using Phase = Call::Phase;
using CallLock = common::LockGuard<common::SpinLock>;
using BooksLock = common::UniqueLock<common::Mutex>;

namespace {

// What a call installs in its completion handler's cancellation slot
// (start): any cancellation type cancels the call with operation_aborted,
// on the thread that emits it.
struct CallCancelHandler {
  explicit CallCancelHandler(CallPtr c) noexcept : call(std::move(c)) {}
  void operator()(asio::cancellation_type) {
    std::shared_ptr<CallHost> host;
    {
      CallPin pin(*call);
      if (!pin.alive()) return;
      host = call->host->share_host();
    }
    host->driver().cancel(call, asio::error::operation_aborted, "call to '" + call->method + "' cancelled",
                          Origin::cancel_slot);
  }
  CallPtr call;
};

}  // namespace

CallDriver::CallDriver(ClientContext& ctx, ProviderPool& pool, CallTimeouts& timeouts)
    : ctx_(ctx),
      pool_(pool),
      timeouts_(timeouts),
      budget_(ctx.options.retry.budget_ratio, ctx.options.retry.budget_min_per_second, ctx.options.retry.budget_window),
      rng_(reinterpret_cast<std::uintptr_t>(this) ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {}

CallDriver::~CallDriver() = default;

std::uint64_t CallDriver::random() noexcept {
  std::uint64_t z = rng_.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string CallDriver::describe(const Call& call, std::string_view what, const Subchannel* provider) const {
  if (!provider) provider = call.latest;
  if (provider) return detail::describe(what, ms_between(call.start, ctx_.now()), call.method, provider->peer());
  return detail::describe(what, ms_between(call.start, ctx_.now()), call.method, pool_.current()->peers);
}

std::string CallDriver::attempt_timed_out(const Call& call, const Call::Attempt& a, bool server_too) const {
  return describe(call,
                  fmt::format("timeout (sent, attempt {} got no reply within its {} ms{})", a.number,
                              ms_between(a.sent, a.expires).count(), server_too ? "; the server timed out too" : ""),
                  a.conn.get());
}

// ---------------------------------------------------------------- starting and dispatching

void CallDriver::start(CallPtr ptr, std::string payload, transport::Attachments attachments,
                       asio::any_completion_handler<Client::Signature> handler) {
  Call& c = *ptr;
  // The per-call interceptors first, on this thread, before the call's lock:
  // most go on inline, and the call then goes out as one without them.
  std::shared_ptr<ClientInterception> chain;
  if (ctx_.interceptors && !ctx_.closed.load(std::memory_order_acquire)) [[unlikely]] {
    chain = gate_.run_call_chain(c, attachments);
  }
  Completion done;
  done.spare = std::move(ptr);  // for the first attempt's table entry
  {
    CallLock lock(c.mu);
    c.payload = std::move(payload);
    c.attachments = std::move(attachments);
    // Not `c.handler = std::move(handler)`: Boost 1.81's move assignment of
    // any_completion_handler wraps the handler in itself until the stack runs out.
    c.handler.swap(handler);
    if (ctx_.closed.load(std::memory_order_acquire)) {
      if (chain) [[unlikely]]
        c.interception = std::move(chain);  // their on_complete, with the call's end
      complete_closed(c, done);
    } else {
      auto slot = asio::get_associated_cancellation_slot(c.handler);
      if (slot.is_connected()) slot.template emplace<CallCancelHandler>(share_with_pinner(c));
      budget_.on_call(c.start);
      // Sent at once, the call's deadline rides in its table entry; else
      // (waiting, failed to send, interceptors at work) it goes on the wheel now.
      if (chain) [[unlikely]] {
        gate_.intercepted(c, std::move(chain), done);
      } else {
        dispatch(c, done);
      }
      if (!timeouts_.cover_deadline(c, c.start)) {
        complete(c, errc::unavailable, Response{{}, {}, "cannot schedule the deadline of '" + c.method + "'"},
                 Origin::other, done);
      }
    }
  }
  deliver(done, ctx_);
}

std::optional<std::size_t> CallDriver::pick(const Call& call, const ProviderSet& set, bool avoid_live) {
  const auto& conns = set.conns;
  const std::size_t cap = ctx_.options.max_active_per_provider;
  const bool routed = set.tagged || !call.tag.empty();      // tag routing: docs/governance.md
  if (conns.size() == 1 && call.live.empty() && !routed) {  // one provider, no attempt in flight: nothing to balance
    return conns[0]->has_slot(cap) ? std::optional<std::size_t>(0) : std::nullopt;
  }
  boost::container::small_vector<ProviderSnapshot, 8> snapshots;
  snapshots.reserve(conns.size());
  bool outliers = false;
  for (std::size_t i = 0; i < conns.size(); ++i) {
    snapshots.push_back(conns[i]->snapshot(cap));
    auto& s = snapshots.back();
    s.weight = set.weights[i];
    outliers |= s.ejected | s.probing;
  }
  if (set.load_aware) [[unlikely]] {
    // Load-aware: each weight scaled by the provider's load factor (per
    // mille, from its reports and latency); a weight > 0 stays > 0.
    for (std::size_t i = 0; i < conns.size(); ++i) {
      auto& s = snapshots[i];
      if (s.weight != 0) s.weight = std::max<std::uint32_t>(1, s.weight * conns[i]->outlier().load_factor() / 1000);
    }
  }
  // The call knows its providers by identity; the policy by index in this set.
  const auto index_of = [&](const Subchannel* c) -> std::optional<std::size_t> {
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
  if (routed) [[unlikely]] {
    const auto route = set.route(call.tag.view());
    using Kind = ProviderSet::Route::Kind;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (route.kind == Kind::none || (route.kind == Kind::only && set.tags[i] != route.only)) {
        live.push_back(i);  // never there
      }
    }
  }
  if (outliers) [[unlikely]]
    set_aside_outliers({snapshots.data(), snapshots.size()}, {live.data(), live.size()});
  PickPreference pref;
  pref.tried = {tried.data(), tried.size()};
  pref.last_failed = call.last_failed ? index_of(call.last_failed) : std::nullopt;
  pref.exclude = {live.data(), live.size()};
  // The set's own balancer: a policy switched by a rule comes with a new set.
  return set.balancer->choose({snapshots.data(), snapshots.size()}, pref);
}

void CallDriver::dispatch(Call& call, Completion& done) {
  call.mu.assert_held();
  call.phase = Phase::idle;
  // A provider seen ready may go down before the attempt is sent, and one may
  // become ready while this call decides to wait: a few rounds settle both.
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    const ProviderPool::SetPin set(pool_);
    // A tag whose rule forbids the fallback, with no provider of its own:
    // no pick can place it (decided under the books' lock below).
    const bool routable = !set->unroutable(call.tag.view());
    for (std::size_t tries = 0; routable && tries < set->conns.size(); ++tries) {
      const auto index = pick(call, *set, false);
      if (!index) break;
      if (send_attempt(call, set->conns[*index], done)) return;
    }
    // Starts the connects that are due before a call that does not wait for
    // ready looks at the providers below: a provider being connected is worth
    // waiting for, one in backoff after a failure is not.
    if (!call.wait_for_ready && routable) pool_.wake_all(ctx_.now());
    BooksLock books(books_mu_);
    if (ctx_.closed.load(std::memory_order_acquire)) {
      books.unlock();
      complete_closed(call, done);
      return;
    }
    // A subchannel marks itself ready before it drains the list under this
    // lock: seeing none ready here means the drain comes after the push. The
    // set is read again here for the same reason (a provider that joined
    // meanwhile is published before it can be ready). A failed connect
    // likewise marks its provider in backoff before it looks for calls to
    // fail fast (fail_fast_waiting). Providers that keep flapping between
    // ready and not get a few rounds, then the call waits like any other.
    // A set that gives the call's tag a provider, or lets it fall back, is
    // published before the drain (dispatch_waiting) takes this lock: one
    // seen unroutable here is either the latest or followed by a drain.
    const auto now_set = pool_.current();
    const bool unroutable = now_set->unroutable(call.tag.view());
    if (unroutable || !any_slot(*now_set) || round == kRounds - 1) {
      if (!call.wait_for_ready && (unroutable || nothing_to_wait_for(*now_set))) {
        books.unlock();
        if (unroutable) [[unlikely]] {
          fail_unroutable(call, *now_set, done);
        } else {
          fail_unavailable(call, *now_set, done);
        }
        return;
      }
      call.phase = Phase::waiting;
      call.waited = true;
      waiting_.emplace_back(&call);
      break;
    }
  }
  if (call.wait_for_ready) pool_.wake_all(ctx_.now());  // the others did, above
}

bool CallDriver::try_extra_attempt(TimePoint t) {
  if (budget_.try_retry(t)) return true;
  ClientMetrics::count(ctx_.metrics.refusals);
  return false;
}

// ---------------------------------------------------------------- attempts

bool CallDriver::send_attempt(Call& call, const std::shared_ptr<Subchannel>& sub_ptr, Completion& done,
                              std::shared_ptr<ClientInterception>* cleared) {
  if (ctx_.attempt_interceptors && !cleared) [[unlikely]]
    return gate_.intercept_attempt(call, sub_ptr, done);
  Subchannel& sub = *sub_ptr;
  // A first attempt sent at once is sent at the call's start (one clock
  // reading fewer on the hot path).
  const auto t = call.attempts == 0 && !call.waited ? call.start : ctx_.now();
  Call::Attempt a;
  a.sent = t;
  a.number = call.attempts + 1;
  // For the timeline, should the call time out: one store per attempt.
  (call.first_sent == TimePoint{} ? call.first_sent : call.last_sent) = t;
  const AttemptBudget budget = attempt_budget(call.plan, a.number, call.waited, t);
  a.expires = budget.expires;
  Subchannel::Placed placed;
  const bool sweep = call.plan.has_deadline && call.cover == Call::Cover::none;
  if (!sub.place(call, done.spare, sweep, call.plan.deadline, t, ctx_.options.max_active_per_provider, placed)) {
    return false;
  }
  a.id = placed.id;
  a.swept = placed.swept;
  if (a.swept) call.cover = Call::Cover::swept;
  ++call.attempts;
  const auto expires = a.expires;
  a.conn = sub_ptr;
  transport::Attachments* metadata = nullptr;  // the attempt's, sent instead of the call's
  if (cleared) [[unlikely]] {
    metadata = &(*cleared)->call().metadata();
    a.interception = std::move(*cleared);
  }
  call.live.push_back(std::move(a));
  call.phase = Phase::sent;
  call.latest = &sub;
  if (std::find(call.tried.begin(), call.tried.end(), &sub) == call.tried.end()) call.tried.push_back(&sub);
  ctx_.metrics.count_attempt();
  call.hedge_at = next_hedge(call.plan, call.attempts, t);
  if (expires != kNever || call.hedge_at != kNever || call.aux_at != kNever) timeouts_.rearm_aux(call, t);
  if (before_send_hook) before_send_hook(call.method, call.attempts);

  std::size_t body = 0;
  std::uint32_t limit = 0;
  if (metadata) call.attachments.swap(*metadata);  // lent to the request while it is encoded
  const auto result = sub.send(placed, call, budget.wire, body, limit);
  if (metadata) call.attachments.swap(*metadata);
  if (result == Subchannel::SendResult::sent) return true;
  if (result == Subchannel::SendResult::unsupported) [[unlikely]] {
    const auto ec = make_error_code(StatusCode::unimplemented);  // a stream's OPEN, and the server has none
    drop_attempt(call, call.live.size() - 1, true, done, ec);
    complete(call, ec, Response{{}, {}, describe(call, "the server speaks no streams", &sub)}, Origin::other, done);
    return true;
  }

  drop_attempt(call, call.live.size() - 1, true, done,
               result == Subchannel::SendResult::too_big      ? make_error_code(errc::bad_request)
               : result == Subchannel::SendResult::queue_full ? make_error_code(errc::too_many_pending)
                                                              : make_error_code(errc::connection_lost));
  if (result == Subchannel::SendResult::too_big) {
    complete(call, errc::bad_request,
             Response{{},
                      {},
                      describe(call, fmt::format("request body of {} bytes exceeds {} of {} bytes, not sent", body,
                                                 limit < ctx_.options.channel.max_body
                                                     ? "the server's limit (max_body from its HELLO)"
                                                     : "the limit (ChannelOptions::max_body)",
                                                 limit))},
             Origin::other, done);
  } else {
    const bool full = result == Subchannel::SendResult::queue_full;
    attempt_failed(call, &sub, full ? Failure::write_queue_full : Failure::not_sent,
                   full ? errc::too_many_pending : errc::connection_lost,
                   describe(call, full ? "write queue full, not sent" : "connection closed, not sent"), done);
  }
  return true;
}

void CallDriver::drop_attempt(Call& call, std::size_t index, bool failed, Completion& done, error_code why) {
  Call::Attempt a = std::move(call.live[index]);
  call.live.erase(call.live.begin() + static_cast<std::ptrdiff_t>(index));
  if (a.interception) [[unlikely]] {
    if (!why) why = failed ? make_error_code(errc::connection_lost) : make_error_code(asio::error::operation_aborted);
    done.attempt_ends.push_back({std::move(a.interception), why, {}, false});
  }
  Subchannel& sub = *a.conn;
  const bool keep_latest = a.conn.get() == call.latest;
  CallPtr entry = sub.take(a.id);  // released after the subchannel's lock
  if (failed) sub.count_failure();
  // Kept for the next attempt, or released after the call's lock: it may be
  // the call's last reference (start gave its own to the entry).
  if (entry && !done.spare) done.spare = std::move(entry);
  if (keep_latest) call.latest_hold = std::move(a.conn);
  if (a.swept) {
    // Its deadline left with the entry: on the wheel for the rest of the call
    // (a stopped timer leaves it to close(), which ends every call).
    call.cover = Call::Cover::none;
    if (!call.done.load(std::memory_order_relaxed)) timeouts_.cover_deadline(call, ctx_.now());
  }
}

void CallDriver::attempt_failed(Call& call, const Subchannel* provider, Failure failure, error_code ec,
                                std::string message, Completion& done) {
  if (call.done.load(std::memory_order_relaxed)) return;
  call.last_ec = ec;
  call.last_error = message;
  call.last_failed = provider;
  if (!call.live.empty()) return;  // a hedge is still running: the call waits for it
  if (call.attempt_interception) [[unlikely]] {
    // A hedge's interceptors are at work: the call waits for them (they send it or reject the call).
    if (call.phase != Phase::intercepting) gate_.wait(call, done);
    return;
  }
  const auto t = ctx_.now();
  const auto delay = retry_delay(ctx_.options.retry.backoff, call.attempts, random());
  auto verdict = decide_retry(call.plan, failure, call.attempts, t, delay);
  if (verdict == RetryVerdict::retry && !try_extra_attempt(t)) verdict = RetryVerdict::budget_refused;
  if (verdict != RetryVerdict::retry) {
    complete(call, ec,
             Response{{},
                      {},
                      final_message(message, verdict, call.attempts, call.plan.max_attempts, delay,
                                    ms_between(t, call.plan.deadline))},
             Origin::other, done);
    return;
  }
  ClientMetrics::count(ctx_.metrics.retries);
  logger()->debug("retrying '{}' in {} ms after attempt {}: {} trace={}", call.method, delay.count(), call.attempts,
                  message, call.trace.trace_id_hex());
  if (delay.count() <= 0) {
    dispatch(call, done);
    return;
  }
  {
    common::LockGuard books(books_mu_);
    if (ctx_.closed.load(std::memory_order_acquire)) {
      complete_closed(call, done);
      return;
    }
    backoff_.emplace(&call, CallPtr(&call));
  }
  call.phase = Phase::backoff;
  call.retry_at = t + delay;
  timeouts_.rearm_aux(call, t);
}

// ---------------------------------------------------------------- replies and losses

void CallDriver::on_reply(Subchannel& sub, IncomingReply& reply, TimePoint received) {
  CallPtr ptr = sub.take(reply);
  if (!ptr) {
    ClientMetrics::count(ctx_.metrics.late);
    return;
  }
  Call& call = *ptr;
  Completion done;
  {
    CallLock lock(call.mu);
    // Ids are unique per subchannel only: match both.
    auto it = std::find_if(call.live.begin(), call.live.end(),
                           [&](const Call::Attempt& x) { return x.id == reply.id && x.conn.get() == &sub; });
    if (it == call.live.end()) {  // completed meanwhile (the entry was taken just before)
      ClientMetrics::count(ctx_.metrics.late);
      return;
    }
    Call::Attempt a = std::move(*it);
    call.live.erase(it);
    if (a.conn.get() == call.latest) call.latest_hold = std::move(a.conn);  // messages below name it
    if (a.swept) call.cover = Call::Cover::none;                            // covered again below if the call goes on
    const Status status = reply.status;
    error_code ec = status_error(status);
    if (a.interception) [[unlikely]] {
      // The winner sees the call's response; a failed one its error.
      done.attempt_ends.push_back(
          {std::move(a.interception), ec, ec ? describe(call, ec.message(), &sub) + ": " + reply.payload : "", !ec});
    }
    if (ec) {
      sub.count_failure(/*provider_fault=*/false);  // note_reply judges the status
    } else {
      sub.count_ok();
    }
    if (ctx_.review) [[unlikely]]
      sub.note_reply(status, received - a.sent, reply.attachments, received);
    const auto t = ec ? ctx_.now() : TimePoint{};  // only errors look at the time
    Response r;
    if (status == Status::server_timeout && a.expires != kNever && t >= a.expires && t < call.plan.deadline) {
      // The attempt's own timeout (which the server was given as its budget):
      // the outcome the wheel was about to report for it.
      ClientMetrics::count(ctx_.metrics.attempt_timeouts);
      attempt_failed(call, &sub, Failure::attempt_timeout, errc::timeout,
                     attempt_timed_out(call, a, /*server_too=*/true), done);
    } else if (status == Status::server_timeout && call.plan.has_deadline && t >= call.plan.deadline) {
      // Our deadline passed too (the server counts the same budget from a
      // little later): to the caller this is its own timeout.
      r.error_message = describe(call, "timeout (sent, waiting for the reply; the server timed out too)") +
                        attempt_note(call.attempts, call.plan.max_attempts, false);
      call.timeout_phase = TimeoutPhase::sent_waiting;
      complete(call, errc::timeout, std::move(r), Origin::reply, done);
    } else if (ec) {
      // Said by the server: the prefix says so where the code alone is vague
      // (the same codes also come from the client's own checks).
      const char* what = ec == errc::unavailable   ? "unavailable (refused by the server)"
                         : ec == errc::bad_request ? "bad request (rejected by the server)"
                                                   : nullptr;
      std::string message =
          describe(call, what ? std::string_view(what) : std::string_view(ec.message()), &sub) + ": " + reply.payload;
      const Failure failure = failure_of(status);
      if (may_retry(failure, call.plan.idempotent)) {
        attempt_failed(call, &sub, failure, ec, std::move(message), done);
      } else {
        r.error_message = std::move(message) + attempt_note(call.attempts, call.plan.max_attempts, false);
        // The metadata the handler failed with (Responder::fail), split at the trailers' marker.
        r.attachments = std::move(reply.attachments);
        split_trailers(r.attachments, r.trailers);
        complete(call, ec, std::move(r), Origin::reply, done);
      }
    } else if (received >= call.plan.deadline) [[unlikely]] {  // kNever without a deadline
      // The reply came after the deadline, before the deadline's timer ran
      // (the timer's worker or this executor was short of CPU). The deadline
      // is the contract: a success never completes after it. The call ends
      // as its timer would have ended it, and the reply counts as late.
      ClientMetrics::count(ctx_.metrics.late);
      call.late_reply = received;
      call.timeout_phase = TimeoutPhase::sent_waiting;
      r.error_message = describe(call, "timeout (sent; the reply arrived after the deadline)", &sub) +
                        attempt_note(call.attempts, call.plan.max_attempts, false);
      complete(call, errc::timeout, std::move(r), Origin::reply, done, received);
    } else {
      take_reply(reply.payload, reply.attachments, reply.compressed, r);  // split at the trailers' marker
      if (!complete(call, ec, std::move(r), Origin::reply, done, received)) ClientMetrics::count(ctx_.metrics.late);
    }
    if (a.swept && !call.done.load(std::memory_order_relaxed)) {
      timeouts_.cover_deadline(call, ctx_.now());  // it goes on
    }
  }
  deliver(done, ctx_);
}

void CallDriver::on_lost(Subchannel& sub, LostAttempts& lost, const std::string& what) {
  for (auto& entry : lost) {
    Call& call = *entry.first;
    const std::uint64_t id = entry.second;  // not a structured binding: clang 14 cannot capture those
    Completion done;
    {
      CallLock lock(call.mu);
      auto it = std::find_if(call.live.begin(), call.live.end(),
                             [&](const Call::Attempt& a) { return a.id == id && a.conn.get() == &sub; });
      if (it == call.live.end()) continue;  // answered or abandoned meanwhile
      drop_attempt(call, static_cast<std::size_t>(it - call.live.begin()), true, done);
      attempt_failed(call, &sub, Failure::connection_lost, errc::connection_lost, describe(call, what, &sub), done);
    }
    deliver(done, ctx_);
  }
}

// ---------------------------------------------------------------- completion

bool CallDriver::complete(Call& call, error_code ec, Response response, Origin origin, Completion& done, TimePoint at) {
  call.mu.assert_held();
  if (!mark_done(call)) return false;
  if (ec) [[unlikely]] {
    completed_with_error(call, ec, response, at);
  } else if (call.cells) {
    call.cells->completed(CallCode::ok, (at == TimePoint{} ? ctx_.now() : std::max(at, call.start)) - call.start);
  }
  // Out of every book. Attempts still in flight when another won or the
  // caller cancelled are told to their servers, which drop the reply.
  const bool tell = origin == Origin::reply || origin == Origin::cancel_slot;
  while (!call.live.empty()) {
    const Call::Attempt& a = call.live.back();
    if (tell) {
      if (auto t = a.conn->transport()) done.abandoned.emplace_back(std::move(t), a.id);
    }
    // At the deadline on_deadline() counted them failed already.
    if (origin != Origin::timer) a.conn->count_cancelled();
    drop_attempt(call, call.live.size() - 1, false, done);
    ClientMetrics::count(ctx_.metrics.cancelled_attempts);
  }
  if (call.phase == Phase::backoff || call.phase == Phase::intercepting) leave_backoff(call);
  if (call.attempt_interception) [[unlikely]] {  // its next attempt's interceptors were at work
    done.attempt_ends.push_back({std::move(call.attempt_interception),
                                 origin == Origin::reply ? make_error_code(asio::error::operation_aborted) : ec,
                                 response.error_message, false});
  }
  if (call.interception) [[unlikely]]
    done.interception = std::move(call.interception);
  // A waiting call stays in waiting_; whoever drains that list drops it.
  timeouts_.cancel_timeouts(call, origin == Origin::timer);
  ctx_.metrics.pending.fetch_sub(1, std::memory_order_relaxed);
  if (ec) {
    ctx_.metrics.count_failed(ec);
  } else {
    ctx_.metrics.count_ok();
  }
  done.armed = true;
  done.handler.swap(call.handler);
  done.ec = ec;
  done.response = std::move(response);
  done.may_run_inline = origin == Origin::reply;
  done.context = call.context;
  done.trace = call.trace_context;
  done.tag = call.tag_context;
  return true;
}

void CallDriver::completed_with_error(Call& call, error_code ec, Response& response, TimePoint at) {
  const auto t = at == TimePoint{} ? ctx_.now() : std::max(at, call.start);
  std::string timeline;
  if (ec == errc::timeout) {
    // Where the time went, told with the error (built only for timeouts).
    timeline = call_timeline(call, t, ctx_.clock == nullptr);
    // Who set the timeout, unless the caller did (its /timeouts record says so).
    if (call.plan.has_deadline && !call.inherited && call.timeout_layer != Layer::call) {
      response.error_message += "; " + timeout_source(call);
    }
    response.error_message += "; " + timeline;
  }
  if (call.cells) {
    const auto code = call_code(ec);
    call.cells->completed(code, t - call.start);
    if (code == CallCode::timeout || code == CallCode::server_timeout) {
      const auto set = pool_.current();
      const bool connecting =
          std::any_of(set->conns.begin(), set->conns.end(), [](const auto& c) { return c->connecting(); });
      ctx_.metrics.record_timeout(call, call.latest ? std::string_view(call.latest->peer()) : std::string_view(), code,
                                  t, std::move(timeline), connecting);
    }
  }
}

void CallDriver::complete_closed(Call& call, Completion& done) {
  complete(call, errc::cancelled, Response{{}, {}, describe(call, "client closed")}, Origin::other, done);
}

void CallDriver::cancel(const CallPtr& ptr, error_code ec, std::string message, Origin origin) {
  Completion done;
  {
    Call& call = *ptr;
    CallLock lock(call.mu);
    complete(call, ec, Response{{}, {}, std::move(message)}, origin, done);
  }
  deliver(done, ctx_);
}

}  // namespace wheelrpc::rpc::detail
