#pragma once
// A call's timeouts on the shared wheel: its deadline (covered by its sent
// attempt's table entry, which the subchannel's sweep finds, or by a timeout
// of its own), and at most one "aux" timeout for the nearest of an attempt's
// own timeout, the next hedge and the end of a retry backoff. The timer's
// worker only pins the call and posts; the work runs on the client's
// executor (on_deadline, on_aux).

#include <vector>

#include <wheelrpc/common/thread_annotations.h>

#include "attempt_policy.h"
#include "call.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class CallDriver;
class ProviderPool;

class CallTimeouts {
 public:
  CallTimeouts(ClientContext& ctx, ProviderPool& pool, CallDriver& driver) : ctx_(ctx), pool_(pool), driver_(driver) {}

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

  // Posted from the call's timeouts (the executor); `fired`: when the
  // timer's worker ran the timeout (on the client's clock), for the timeline.
  void on_deadline(const CallPtr& call, TimePoint fired);
  void on_aux(const CallPtr& call, TimePoint fired);
  /// Calls a subchannel's sweep found past their deadline (the executor).
  void on_deadlines_due(std::vector<CallPtr>& due, TimePoint fired);

 private:
  ClientContext& ctx_;
  ProviderPool& pool_;
  CallDriver& driver_;
};

}  // namespace wheelrpc::rpc::detail
