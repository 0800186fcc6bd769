#pragma once
/// Internal to the typed services (not an API): where a coroutine handler
/// runs. scoped_executor() is the handler's executor with its call's
/// deadline and trace in force at every step; launch_here() starts a
/// coroutine on it the way co_spawn does once it has dispatched, without
/// what a handler that answers a call does not need: co_spawn's two work
/// guards (an atomic each way, and, for any executor that does not fit
/// any_io_executor's small buffer, a heap copy each), its dispatch to where
/// it already is, and its final post (one more trip through the queue per
/// call for a handler that finishes without waiting). What that saves is
/// measured in docs/benchmarks.md, "Typed calls".

#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/version.hpp>

#include <wheelrpc/rpc/detail/call_scope_executor.h>

// launch_here() drives Asio's own machinery for a thread of awaitables
// (awaitable_thread, the entry point co_spawn uses), which is Asio's detail:
// checked for the Boost that Debian 12 ships. Another Boost fails here, on
// purpose, rather than at run time; see co_spawn's initiate_co_spawn in
// boost/asio/impl/co_spawn.hpp for what to compare.
#if BOOST_VERSION / 100 != 1081
#error "wheelrpc's typed coroutine handlers are checked against Boost 1.81's Asio internals (awaitable_thread)"
#endif

namespace wheelrpc::rpc::detail {

/// `inner` with `scope` in force around everything it runs. Over an
/// io_context's executor (the server's I/O threads, the usual handler
/// executor) the result is two pointers and fits any_io_executor's small
/// buffer, so the copies Asio makes at every co_await allocate nothing;
/// over any other executor it wraps the type-erased one (copies allocate).
inline boost::asio::any_io_executor scoped_executor(const boost::asio::any_io_executor& inner, CallScopeRef scope) {
  if (const auto* io = inner.target<boost::asio::io_context::executor_type>()) {
    return CallScopeExecutor<boost::asio::io_context::executor_type>(*io, std::move(scope));
  }
  return CallScopeExecutor<boost::asio::any_io_executor>(inner, std::move(scope));
}
static_assert(sizeof(CallScopeExecutor<boost::asio::io_context::executor_type>) <= 3 * sizeof(void*),
              "fits any_io_executor's small buffer (a shared_ptr and a pointer)");

/// What a coroutine handler's entry point returns: the bottom frame of a
/// thread of awaitables (as co_spawn's own entry point).
using EntryAwaitable =
    boost::asio::awaitable<boost::asio::detail::awaitable_thread_entry_point, boost::asio::any_io_executor>;

/// Runs `entry` on this thread now, as a new thread of awaitables whose
/// executor is `ex`: until its first suspension, or to its end. The caller
/// must be running on `ex` (or be where `ex` may run it: its deadline and
/// trace already in force). No cancellation slot (as co_spawn with
/// `detached`). An exception that leaves `entry` propagates from here.
inline void launch_here(EntryAwaitable entry, const boost::asio::any_io_executor& ex) {
  boost::asio::cancellation_slot slot;
  boost::asio::cancellation_state state(slot);
  boost::asio::detail::awaitable_handler<boost::asio::any_io_executor, void>(std::move(entry), ex, slot, state)
      .launch();
}

/// Starts `entry_of()`'s coroutine on `ex`: here and now when this thread
/// runs `inner` (an io_context's executor: the server's I/O thread that
/// received the call), else dispatched to `ex` (inline when it may, as
/// co_spawn does).
template <class EntryOf>
void start_on(const boost::asio::any_io_executor& inner, const boost::asio::any_io_executor& ex, EntryOf entry_of) {
  const auto* io = inner.target<boost::asio::io_context::executor_type>();
  if (io && io->running_in_this_thread()) {
    launch_here(entry_of(), ex);
    return;
  }
  boost::asio::dispatch(ex, [ex, entry_of = std::move(entry_of)]() mutable { launch_here(entry_of(), ex); });
}

}  // namespace wheelrpc::rpc::detail
