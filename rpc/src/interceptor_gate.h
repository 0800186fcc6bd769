#pragma once
// InterceptorGate: where a client call meets its interceptors
// (client_interception.h). The per-call chain runs before the call's first
// dispatch; the attempt chain before each attempt is sent; while one works,
// the call waits in the driver's books (Phase::intercepting, so close() ends
// it) and its deadline stays on the wheel. Part of the CallDriver, whose
// books and attempt path it uses; its functions run under the call's lock
// except after(), which takes it.

#include <memory>
#include <string>

#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/rpc/status_code.h>

#include "call.h"
#include "completion.h"

namespace wheelrpc::rpc::detail {

class CallDriver;
class ClientInterception;
class Subchannel;

class InterceptorGate {
 public:
  explicit InterceptorGate(CallDriver& driver) noexcept : d_(driver) {}

  /// Starts the per-call interceptors of a new call (instead of dispatch).
  void intercept_call(Call& call, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// Starts the attempt interceptors for an attempt on `sub`; true (the
  /// attempt is on its way).
  bool intercept_attempt(Call& call, const std::shared_ptr<Subchannel>& sub, Completion& done)
      WHEELRPC_REQUIRES(call.mu);
  /// The call waits for interceptors with no attempt in flight: phase
  /// intercepting, in the books (so close() ends it). False, and the call
  /// completed, when the client closed.
  bool wait(Call& call, Completion& done) WHEELRPC_REQUIRES(call.mu);
  /// Interceptors went on (`proceed`) or rejected the call with `code` and
  /// `message`: on the thread running the chain, or the client's executor. A
  /// chain that is no longer the call's (the call ended, or the attempt was
  /// superseded) changes nothing.
  void after(const CallPtr& call, const std::shared_ptr<ClientInterception>& chain, bool proceed, StatusCode code,
             std::string message);

 private:
  CallDriver& d_;
};

}  // namespace wheelrpc::rpc::detail
