#include "client/client_interception.h"

#include <boost/asio/post.hpp>

#include "client/call_host.h"
#include "client/client_context.h"
#include "client/subchannel.h"

namespace wheelrpc::rpc::detail {

ClientInterception::ClientInterception(std::shared_ptr<const ClientInterceptors> list, CallPtr call,
                                       const ClientContext& ctx, TimePoint start, std::shared_ptr<Subchannel> sub,
                                       int attempt)
    : list_(std::move(list)), call_(std::move(call)), sub_(std::move(sub)) {
  info_.method_ = call_->method;
  info_.deadline_ = call_->plan.has_deadline ? call_->plan.deadline : TimePoint::max();
  info_.start_ = start;
  if (sub_) info_.provider_ = sub_->peer();
  info_.attempt_ = attempt;
  info_.executor_ = ctx.ex;
  info_.clock_ = ctx.clock;
}

void ClientInterception::intercept(std::size_t index, InterceptorNext next) {
  (*list_)[index]->intercept(info_, std::move(next));
}

void ClientInterception::complete(std::size_t index) { (*list_)[index]->on_complete(info_, ec_, *response_); }

void ClientInterception::keep_outcome() {
  kept_ = *response_;
  response_ = &kept_;
}

void ClientInterception::finish(boost::system::error_code ec, const Response& response) {
  ec_ = ec;
  response_ = &response;
  end();
}

namespace {
// The per-call chain run_inline() runs on this thread: its decision, taken
// on this thread, stays in it (InterceptorGate::intercepted takes it up).
thread_local const ClientInterception* t_inline = nullptr;
}  // namespace

void ClientInterception::run_inline() {
  registered_ = false;
  const ClientInterception* const outer = t_inline;  // an interceptor's own call runs its chain inside
  t_inline = this;
  run();
  t_inline = outer;
}

void ClientInterception::keep(bool proceed, StatusCode code, std::string message) {
  outcome_ = proceed ? Outcome::proceeded : Outcome::rejected;
  code_ = code;
  message_ = std::move(message);
}

void ClientInterception::proceeded() {
  if (t_inline == this) [[likely]] {
    outcome_ = Outcome::proceeded;
    return;
  }
  resume(true, StatusCode::ok, {});
}

void ClientInterception::rejected(StatusCode code, std::string message) {
  if (t_inline == this) {
    keep(false, code, std::move(message));
    return;
  }
  resume(false, code, std::move(message));
}

void ClientInterception::resume(bool proceed, StatusCode code, std::string message) {
  std::shared_ptr<CallHost> host;
  {
    CallPin pin(*call_);
    if (!pin.alive()) return;  // ended meanwhile: its host may be gone
    host = call_->host->share_host();
  }
  host->resume_intercepted(call_, std::static_pointer_cast<ClientInterception>(shared_from_this()), proceed, code,
                           std::move(message));
}

void ClientInterception::resume_later(std::function<void()> fn) { boost::asio::post(info_.executor_, std::move(fn)); }

}  // namespace wheelrpc::rpc::detail
