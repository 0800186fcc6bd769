#pragma once
// CallHost: what the parts of the call engine reach of the client that runs
// them (ClientCore implements it), without its header: so the include graph
// points one way. A call knows its host (Call::host); code that holds only
// the call (a timeout on the timer's worker, the caller's cancellation
// slot, an interceptor resuming) pins the call, takes share_host() while the
// pin says it is not done, and then calls in.
//
// The parts are read through plain references (no virtual call); the
// virtual functions are entries used off the per-call path (timers,
// cancellation, interceptors). Thread-safety: every member may be called
// from any thread; the host outlives every call that is not done.

#include <memory>
#include <string>

#include <wheelrpc/rpc/status_code.h>

#include "client/call.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class CallDriver;
class ClientInterception;

class CallHost {
 public:
  CallHost(const CallHost&) = delete;
  CallHost& operator=(const CallHost&) = delete;

  /// The client's shared parts (options, executor, clock, counters).
  ClientContext& context() const noexcept { return ctx_; }
  /// The call driver (call_driver.h).
  CallDriver& driver() const noexcept { return driver_; }

  /// A strong reference to the host, for work posted on behalf of a pinned
  /// call that is not done.
  virtual std::shared_ptr<CallHost> share_host() = 0;
  /// The call's own deadline timeout ran on the timer's worker at `fired`
  /// (the client's clock): on the client's executor.
  virtual void on_call_deadline(const CallPtr& call, TimePoint fired) = 0;
  /// Its aux timeout (an attempt's own timeout, a hedge, the end of a retry
  /// backoff) ran at `fired`: on the client's executor.
  virtual void on_call_aux(const CallPtr& call, TimePoint fired) = 0;
  /// Interceptors of `chain` went on (`proceed`) or rejected the call with
  /// `code` and `message` (InterceptorGate::after): on the thread running
  /// the chain, or the client's executor.
  virtual void resume_intercepted(const CallPtr& call, const std::shared_ptr<ClientInterception>& chain, bool proceed,
                                  StatusCode code, std::string message) = 0;

 protected:
  /// `ctx` and `driver` must outlive the host (they may still be under
  /// construction: they are only stored here).
  CallHost(ClientContext& ctx, CallDriver& driver) noexcept : ctx_(ctx), driver_(driver) {}
  ~CallHost() = default;

 private:
  ClientContext& ctx_;
  CallDriver& driver_;
};

}  // namespace wheelrpc::rpc::detail
