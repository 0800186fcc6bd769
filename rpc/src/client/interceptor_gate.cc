// InterceptorGate (call_driver.h): where a client call meets its interceptors.
#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/rpc/errc.h>

#include "client/call_driver.h"
#include "client/call_timeouts.h"
#include "client/client_context.h"
#include "client/client_interception.h"

namespace wheelrpc::rpc::detail {
using Phase = Call::Phase;
using CallLock = common::LockGuard<common::SpinLock>;

bool InterceptorGate::wait(Call& call, Completion& done) {
  bool closed = false;
  {
    common::LockGuard books(d_.books_mu_);
    closed = d_.ctx_.closed.load(std::memory_order_acquire);
    if (!closed) d_.backoff_.emplace(&call, CallPtr(&call));
  }
  if (closed) {
    d_.complete_closed(call, done);
    return false;
  }
  call.phase = Phase::intercepting;
  return true;
}

std::shared_ptr<ClientInterception> InterceptorGate::run_call_chain(Call& call, transport::Attachments& attachments) {
  // No other thread sees the call yet: its pin mark needs no lock.
  auto chain = std::make_shared<ClientInterception>(d_.ctx_.interceptors, share_with_pinner(call), d_.ctx_, call.start,
                                                    nullptr, 0);
  chain->call().metadata() = std::move(attachments);
  chain->run_inline();
  return chain;
}

void InterceptorGate::intercepted(Call& call, std::shared_ptr<ClientInterception> chain, Completion& done) {
  call.interception = chain;  // its on_complete run with the call's end (CallDriver::complete)
  switch (chain->outcome()) {
    case ClientInterception::Outcome::proceeded:
      call.attachments = chain->call().metadata();  // what every attempt sends
      d_.dispatch(call, done);
      return;
    case ClientInterception::Outcome::rejected:
      // Not retried: an application's answer, like a server's error status.
      d_.complete(call, make_error_code(chain->code()), Response{{}, {}, std::move(chain->message())}, Origin::other,
                  done);
      return;
    case ClientInterception::Outcome::pending:
      // One works on: the call waits in the books, its deadline on the
      // wheel (CallDriver::start covers it), until after() takes it up.
      if (wait(call, done)) chain->set_registered();
      return;
  }
}

bool InterceptorGate::intercept_attempt(Call& call, const std::shared_ptr<Subchannel>& sub, Completion& done) {
  if (call.attempt_interception) return true;  // one at a time: that one sends the next attempt
  if (call.live.empty() && !wait(call, done)) return true;
  const auto t = d_.ctx_.now();
  auto chain = std::make_shared<ClientInterception>(d_.ctx_.attempt_interceptors, share_with_pinner(call), d_.ctx_, t,
                                                    sub, call.attempts + 1);
  chain->call().metadata() = call.attachments;  // this attempt's own copy
  call.attempt_interception = chain;
  call.hedge_at = kNever;  // no hedge while they work (next_hedge runs again once it is sent)
  if (!call.live.empty()) d_.timeouts_.rearm_aux(call, t);  // the live attempts' own timeouts stay covered
  // No table entry carries the deadline while they work.
  if (!d_.timeouts_.cover_deadline(call, t)) {
    d_.complete(call, errc::unavailable, Response{{}, {}, "cannot schedule the deadline of '" + call.method + "'"},
                Origin::other, done);
    return true;
  }
  done.run_chain = std::move(chain);
  return true;
}

void InterceptorGate::after(const CallPtr& ptr, const std::shared_ptr<ClientInterception>& chain, bool proceed,
                            StatusCode code, std::string message) {
  Call& call = *ptr;
  Completion done;
  {
    CallLock lock(call.mu);
    if (call.done.load(std::memory_order_relaxed)) return;
    if (!chain->registered()) {
      // Decided after run_inline() returned, before the call waits for it:
      // intercepted() takes it up, under this lock.
      chain->keep(proceed, code, std::move(message));
      return;
    }
    const bool per_attempt = chain->per_attempt();
    if (per_attempt) {
      if (call.attempt_interception != chain) return;  // superseded
      call.attempt_interception.reset();
    } else if (call.interception != chain || call.phase != Phase::intercepting) {
      return;
    }
    if (call.phase == Phase::intercepting) {  // else a hedge's: the call goes on with its attempts in flight
      d_.leave_backoff(call);
      call.phase = Phase::idle;
    }
    if (!proceed) {
      // Not retried: an application's answer, like a server's error status.
      if (per_attempt) done.attempt_ends.push_back({chain, make_error_code(code), message, false});
      d_.complete(call, make_error_code(code), Response{{}, {}, std::move(message)}, Origin::other, done);
    } else if (!per_attempt) {
      call.attachments = chain->call().metadata();  // what every attempt sends
      d_.dispatch(call, done);
    } else {
      auto cleared = chain;
      if (!d_.send_attempt(call, chain->subchannel(), done, &cleared)) {
        // The provider went away while they worked: the attempt ends there,
        // and the next pick runs them again.
        done.attempt_ends.push_back({chain, make_error_code(errc::unavailable), "provider no longer ready", false});
        if (call.live.empty()) {
          d_.dispatch(call, done);
        } else {
          d_.timeouts_.rearm_aux(call, d_.ctx_.now());
        }
      }
    }
  }
  deliver(done, d_.ctx_);
}

}  // namespace wheelrpc::rpc::detail
