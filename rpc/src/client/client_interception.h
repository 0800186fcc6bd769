#pragma once
// One client interceptor chain at work: per call (ClientOptions::
// interceptors, started by CallDriver::start) or per attempt (ClientOptions::
// attempt_interceptors, started by CallDriver::send_attempt). It holds its
// call; the call holds it (Call::interception, Call::attempt_interception,
// Call::Attempt::interception) until the call or the attempt ends, when it
// moves into the Completion, whose deliver() ends it: so no cycle outlives
// the call. A next that goes on (or rejects) hands the call back to
// InterceptorGate::after (through the call's host, call_host.h), on the
// thread running the chain, or posted to the client's executor; except a
// per-call chain run inline (run_inline(), from CallDriver::start before it
// locks the call): what it decided there it keeps (outcome()) for
// InterceptorGate::intercepted, and what a next decides later, before the
// call waits for it in the books (registered()), after() keeps there too.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/client_call.h>
#include <wheelrpc/rpc/client_interceptor.h>
#include <wheelrpc/rpc/response.h>

#include "client/call.h"
#include "interceptors/interceptor_chain.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class Subchannel;

using ClientInterceptors = std::vector<std::shared_ptr<ClientInterceptor>>;

class ClientInterception final : public InterceptorChain {
 public:
  /// Per call: `sub` null, `attempt` 0. `list`: not empty.
  ClientInterception(std::shared_ptr<const ClientInterceptors> list, CallPtr call, const ClientContext& ctx,
                     TimePoint start, std::shared_ptr<Subchannel> sub, int attempt);

  /// What the chain decided: nothing yet, went on, or rejected (code(), message()).
  enum class Outcome : std::uint8_t { pending, proceeded, rejected };

  ClientCall& call() noexcept { return info_; }
  /// Runs the chain on this thread (before the call is shared: no lock
  /// held); what it decided on this thread is then outcome().
  void run_inline();
  /// Written by run_inline() on its thread, or by InterceptorGate::after
  /// under the call's lock before registered(); read under the call's lock.
  Outcome outcome() const noexcept { return outcome_; }
  StatusCode code() const noexcept { return code_; }
  std::string& message() noexcept { return message_; }
  void keep(bool proceed, StatusCode code, std::string message);
  /// The call waits for this chain in the books (under the call's lock):
  /// after() takes its outcome up from then on. True for attempt chains.
  bool registered() const noexcept { return registered_; }
  void set_registered() noexcept { registered_ = true; }
  bool per_attempt() const noexcept { return info_.attempt() != 0; }
  /// Per attempt: the provider picked for it.
  const std::shared_ptr<Subchannel>& subchannel() const noexcept { return sub_; }
  /// The call (the attempt) ended: the on_complete callbacks run now, or
  /// once the interceptor at work lets go. Any thread but the timer's
  /// worker; no lock held.
  void finish(boost::system::error_code ec, const Response& response);

 private:
  std::size_t size() const noexcept override { return list_->size(); }
  std::string_view name(std::size_t index) const noexcept override { return (*list_)[index]->name(); }
  const char* side() const noexcept override { return per_attempt() ? "client attempt" : "client"; }
  void intercept(std::size_t index, InterceptorNext next) override;
  void complete(std::size_t index) override;
  void keep_outcome() override;
  void proceeded() override;
  void rejected(StatusCode code, std::string message) override;
  void resume_later(std::function<void()> fn) override;
  void resume(bool proceed, StatusCode code, std::string message);

  const std::shared_ptr<const ClientInterceptors> list_;
  const CallPtr call_;
  const std::shared_ptr<Subchannel> sub_;
  ClientCall info_;
  // The outcome on_complete sees: the caller's Response while end() runs
  // them, else a copy kept (keep_outcome).
  boost::system::error_code ec_;
  const Response* response_ = nullptr;
  Response kept_;
  // A per-call chain run inline: what it decided before the call waits for
  // it (see outcome()), and whether it does (under the call's lock).
  Outcome outcome_ = Outcome::pending;
  StatusCode code_ = StatusCode::ok;
  std::string message_;
  bool registered_ = true;
};

}  // namespace wheelrpc::rpc::detail
