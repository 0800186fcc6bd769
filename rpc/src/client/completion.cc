#include "client/completion.h"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <wheelrpc/rpc/deadline.h>

#include "client/client_context.h"
#include "client/client_interception.h"
#include "wire/client_transport.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

// A call started while a request was being served completes with that
// request's deadline in force, so the caller's next nested call inherits it too.
namespace {

void deliver_handler(Completion& done, const ClientContext& ctx) {
  if (!done.armed) return;
  done.armed = false;
  // Asking for the handler's executor with ours as the fallback would wrap
  // ours in an any_completion_executor (heap-allocated) on every call; ask
  // without one and fall back ourselves.
  auto associated = asio::get_associated_executor(done.handler);
  const bool has_own = associated.target<asio::system_executor>() == nullptr;
  // Runs the handler with the call's deadline and trace in force (none, for
  // a call started outside any request).
  auto run = [](asio::any_completion_handler<Client::Signature>& h, error_code ec, Response r,
                std::optional<TimePoint> deadline, std::optional<TraceContext> trace, RoutingTag tag) {
    asio::get_associated_cancellation_slot(h).clear();
    DeadlineScope scope(deadline);
    TraceScope trace_scope(trace);
    RoutingTagScope tag_scope(tag);
    auto handler = std::move(h);
    std::move(handler)(ec, std::move(r));
  };
  if (!has_own && done.may_run_inline && ctx.io_ex && ctx.io_ex->running_in_this_thread()) {
    // A reply on a thread of our own io_context: the handler runs here and
    // now, which is what dispatch would do, without wrapping it first.
    run(done.handler, done.ec, std::move(done.response), done.context, done.trace, done.tag);
    return;
  }
  auto fn = [run, h = std::move(done.handler), ec = done.ec, r = std::move(done.response), deadline = done.context,
             trace = done.trace, tag = done.tag]() mutable { run(h, ec, std::move(r), deadline, trace, tag); };
  if (!has_own) {
    if (done.may_run_inline) {
      asio::dispatch(ctx.ex, std::move(fn));
    } else {
      asio::post(ctx.ex, std::move(fn));
    }
  } else if (done.may_run_inline) {
    asio::dispatch(associated, std::move(fn));
  } else {
    // Through our executor (which can promise never to block), then on the
    // handler's own.
    asio::post(ctx.ex, asio::bind_executor(associated, std::move(fn)));
  }
}

// Interceptors: the attempts' on_complete, then the call's, then the
// handler; then the chain that was to start.
void deliver_intercepted(Completion& done, const ClientContext& ctx) {
  for (auto& end : done.attempt_ends) {
    if (end.winner) {
      end.chain->finish(end.ec, done.response);
    } else {
      end.chain->finish(end.ec, Response{{}, {}, std::move(end.message)});
    }
  }
  done.attempt_ends.clear();
  if (auto chain = std::move(done.interception)) chain->finish(done.ec, done.response);
  auto start = std::move(done.run_chain);
  deliver_handler(done, ctx);
  if (start) start->run();
}

}  // namespace

void deliver(Completion& done, const ClientContext& ctx) {
  for (auto& [transport, id] : done.abandoned) transport->cancel_request(id);
  // Without interceptors these are empty: one branch.
  if (!done.attempt_ends.empty() || done.interception || done.run_chain) [[unlikely]] {
    deliver_intercepted(done, ctx);
    return;
  }
  deliver_handler(done, ctx);
}

}  // namespace wheelrpc::rpc::detail
