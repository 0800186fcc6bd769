#include "client/call_timeouts.h"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "client/call_host.h"
#include "client/client_context.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using Phase = Call::Phase;

namespace {

// A timer task owning one reference to its call: stored in the timeout
// record itself (no allocation), released when the timeout runs, is
// cancelled or is dropped. On the timer's worker it only pins the call and,
// if the call is still running, posts the host's `Entry` to the client's
// executor.
template <void (CallHost::*Entry)(const CallPtr&, TimePoint)>
struct CallTimeoutTask {
  using wheelrpc_relocatable = void;
  CallPtr call;
  void operator()() const {
    CallPin pin(*call);
    if (!pin.alive()) return;  // completed: its host may be gone
    auto host = call->host->share_host();
    // When the worker ran it, for the timeline: how late the timer was,
    // apart from how long the executor then took to run the posted work.
    const ClientContext& ctx = host->context();
    const TimePoint fired = ctx.now();
    asio::post(ctx.ex, [host, c = call, fired] { ((*host).*Entry)(c, fired); });
  }
};

}  // namespace

bool CallTimeouts::cover_deadline(Call& call, TimePoint t) {
  call.mu.assert_held();
  if (!call.plan.has_deadline || call.cover != Call::Cover::none || call.done.load(std::memory_order_relaxed)) {
    return true;
  }
  std::error_code tec;
  call.deadline_timeout = ctx_.timer.new_timeout(CallTimeoutTask<&CallHost::on_call_deadline>{share_with_pinner(call)},
                                                 std::max(call.plan.deadline - t, TimePoint::duration::zero()), tec);
  if (tec) return false;
  call.cover = Call::Cover::own;
  return true;
}

void CallTimeouts::rearm_aux(Call& call, TimePoint t) {
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
  call.aux = ctx_.timer.new_timeout(CallTimeoutTask<&CallHost::on_call_aux>{share_with_pinner(call)}, next - t, tec);
  if (!tec) call.aux_at = next;  // else the deadline will end the call
}

void CallTimeouts::cancel_timeouts(Call& call, bool by_timer) {
  if (call.aux_at != kNever) call.aux.cancel();
  call.aux_at = kNever;
  if (!by_timer && call.cover == Call::Cover::own) call.deadline_timeout.cancel();
}

}  // namespace wheelrpc::rpc::detail
