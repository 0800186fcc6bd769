#pragma once
// What a call's timeouts do when they fire (call_timeouts.h schedules
// them): at its deadline the call ends (its outcome told by
// deadline_outcome); at its aux timeout attempts past their own timeout
// are abandoned and may be retried, a hedge goes out, or a retry backoff
// ends. Runs on the client's executor, posted by the timer's worker through
// the call's host, or by a subchannel's sweep.

#include <vector>

#include "client/attempt_policy.h"
#include "client/call.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class CallDriver;
class CallTimeouts;
class ProviderPool;

class CallTimeoutEvents {
 public:
  /// Every part outlives it (the parts of one ClientCore).
  CallTimeoutEvents(ClientContext& ctx, ProviderPool& pool, CallDriver& driver, CallTimeouts& timeouts) noexcept
      : ctx_(ctx), pool_(pool), driver_(driver), timeouts_(timeouts) {}

  // `fired`: when the timer's worker ran the timeout (on the client's
  // clock), for the timeline. The executor; no lock held.
  void on_deadline(const CallPtr& call, TimePoint fired);
  void on_aux(const CallPtr& call, TimePoint fired);
  /// Calls a subchannel's sweep found past their deadline.
  void on_deadlines_due(std::vector<CallPtr>& due, TimePoint fired);

 private:
  ClientContext& ctx_;
  ProviderPool& pool_;
  CallDriver& driver_;
  CallTimeouts& timeouts_;
};

}  // namespace wheelrpc::rpc::detail
