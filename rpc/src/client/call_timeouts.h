#pragma once
// A call's timeouts on the shared wheel: its deadline (covered by its sent
// attempt's table entry, which the subchannel's sweep finds, or by a timeout
// of its own), and at most one "aux" timeout for the nearest of an attempt's
// own timeout, the next hedge and the end of a retry backoff. The timer's
// worker only pins the call and posts to the call's host (call_host.h); the
// work runs on the client's executor (CallTimeoutEvents).

#include <wheelrpc/common/thread_annotations.h>

#include "client/attempt_policy.h"
#include "client/call.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;

class CallTimeouts {
 public:
  /// `ctx` outlives it.
  explicit CallTimeouts(ClientContext& ctx) noexcept : ctx_(ctx) {}

  /// Makes sure something ends a running call with a deadline at its
  /// deadline: if nothing does (it never had an attempt swept, or that
  /// attempt is gone), its own timeout goes on the wheel, due
  /// `plan.deadline - t`. False if the timer refused it (stopped).
  bool cover_deadline(Call& call, TimePoint t) WHEELRPC_REQUIRES(call.mu);
  /// Schedules the aux timeout for the call's nearest event (or none).
  void rearm_aux(Call& call, TimePoint t) WHEELRPC_REQUIRES(call.mu);
  /// The call completed: its timeouts are cancelled (its own deadline's
  /// unless a timer completed it).
  void cancel_timeouts(Call& call, bool by_timer) WHEELRPC_REQUIRES(call.mu);

 private:
  ClientContext& ctx_;
};

}  // namespace wheelrpc::rpc::detail
