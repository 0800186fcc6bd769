#include "client/call_timeout_events.h"

#include <algorithm>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/deadline.h>

#include "client/call_driver.h"
#include "client/call_timeouts.h"
#include "client/client_context.h"
#include "base/log.h"
#include "client/provider_pool.h"
#include "client/subchannel.h"

namespace wheelrpc::rpc::detail {
using Phase = Call::Phase;
using CallLock = common::LockGuard<common::SpinLock>;

void CallTimeoutEvents::on_deadlines_due(std::vector<CallPtr>& due, TimePoint fired) {
  for (const auto& c : due) on_deadline(c, fired);
}

void CallTimeoutEvents::on_aux(const CallPtr& ptr, TimePoint fired) {
  Call& call = *ptr;
  Completion done;
  {
    CallLock lock(call.mu);
    if (call.done.load(std::memory_order_relaxed)) return;
    // The timeout that posted this ran; a newer one may be pending already.
    if (call.aux.state() != timer::TimeoutState::pending) call.aux_at = kNever;
    const auto t = ctx_.now();
    // Posted, it may run late: past the deadline, the deadline's own work
    // (posted too) ends the call; no hedge or retry starts now.
    if (call.plan.has_deadline && t >= call.plan.deadline) return;
    if (call.phase == Phase::backoff) {
      if (t < call.retry_at) {
        timeouts_.rearm_aux(call, t);
      } else {
        driver_.leave_backoff(call);
        call.retry_at = kNever;
        driver_.dispatch(call, done);
      }
    } else if (call.phase == Phase::sent) {
      // Attempts past their own timeout are abandoned (a late reply is
      // dropped); the server was given the same budget and gave up too.
      const Subchannel* timed_out = nullptr;  // identity only
      std::string message;
      for (std::size_t i = 0; i < call.live.size();) {
        if (call.live[i].expires <= t) {
          timed_out = call.live[i].conn.get();
          message = driver_.attempt_timed_out(call, call.live[i], /*server_too=*/false);
          driver_.drop_attempt(call, i, true, done, make_error_code(errc::timeout));
          ClientMetrics::count(ctx_.metrics.attempt_timeouts);
        } else {
          ++i;
        }
      }
      if (timed_out) {
        timeouts_.rearm_aux(call, t);
        // Its timer, for the timeline if this ends the call.
        call.fired = fired;
        driver_.attempt_failed(call, timed_out, Failure::attempt_timeout, errc::timeout, std::move(message), done);
        if (!call.done.load(std::memory_order_relaxed)) call.fired = TimePoint{};
      } else if (t >= call.hedge_at && !call.live.empty() && call.attempts < call.plan.max_attempts) {
        // Hedge on a provider the call is not already waiting on.
        call.hedge_at = kNever;
        bool sent = false;
        const auto set = pool_.current();
        const auto target = driver_.pick(call, *set, /*avoid_live=*/true);
        if (!target) {
          call.hedge_at = t + call.plan.hedge_delay;  // none free now; look again later
        } else if (driver_.try_extra_attempt(t)) {
          ClientMetrics::count(ctx_.metrics.hedges);
          logger()->debug("hedging '{}' on {} after {} ms", call.method, set->conns[*target]->peer(),
                          ms_between(call.start, t).count());
          sent = driver_.send_attempt(call, set->conns[*target], done);  // rearms the aux timeout
          if (!sent) call.hedge_at = t + call.plan.hedge_delay;          // it went down meanwhile
        }
        // else: the budget refused it (counted); no more hedges for this call
        if (!sent) timeouts_.rearm_aux(call, t);
      } else {
        timeouts_.rearm_aux(call, t);
      }
    }
  }
  deliver(done, ctx_);
}

void CallTimeoutEvents::on_deadline(const CallPtr& ptr, TimePoint fired) {
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
    f.elapsed = ms_between(call.start, ctx_.now());
    f.method = call.method;
    const auto set = pool_.current();
    f.peer = call.latest ? std::string_view(call.latest->peer()) : std::string_view(set->peers);
    for (const auto& a : call.live) a.conn->count_failure();
    const std::size_t cap = ctx_.options.max_active_per_provider;
    if (!f.sent && cap != 0 && !driver_.any_slot(*set) &&
        std::any_of(set->conns.begin(), set->conns.end(), [](const auto& c) { return c->ready(); })) {
      f.every_ready_at_limit = cap;
    }
    if (!f.sent && set->unroutable(call.tag.view())) [[unlikely]]
      f.no_route = set->no_route_why(call.tag.view());
    if (!f.sent) {
      f.every_provider_failed = !set->conns.empty();
      for (const auto& c : set->conns) {
        auto error = c->last_error();
        if (error.empty()) {
          f.every_provider_failed = false;
        } else {
          f.last_connect_error = std::move(error);
        }
      }
    }
    Outcome out = deadline_outcome(f);
    if (call.phase == Phase::intercepting && !call.last_ec) [[unlikely]] {
      out.ec = make_error_code(errc::timeout);
      out.message = driver_.describe(call, "timeout (not sent: its interceptors were still at work)");
    }
    driver_.complete(call, out.ec, Response{{}, {}, std::move(out.message)}, Origin::timer, done);
  }
  deliver(done, ctx_);
}

}  // namespace wheelrpc::rpc::detail
