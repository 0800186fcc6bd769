#pragma once
/// Internal to the typed services: an executor that puts a request's
/// deadline and trace in force (DeadlineScope, TraceScope) around every
/// function it runs, so a coroutine handler's nested calls inherit them after
/// each co_await too, not only before its first. Not an API.

#include <chrono>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <boost/asio/execution.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/require.hpp>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/rpc/trace.h>

namespace wheelrpc::rpc::detail {

/// What CallScopeExecutor puts in force: one request's.
struct CallScope {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::optional<TraceContext> trace;
};

template <class Inner>
class CallScopeExecutor {
 public:
  CallScopeExecutor(Inner inner, std::shared_ptr<const CallScope> scope) noexcept
      : inner_(std::move(inner)), scope_(std::move(scope)) {}

  template <class F>
  void execute(F&& f) const {
    inner_.execute(Scoped<std::decay_t<F>>{std::forward<F>(f), scope_});
  }

  template <class P>
  requires boost::asio::can_query<const Inner&, const P&>::value decltype(auto) query(const P& p) const {
    return boost::asio::query(inner_, p);
  }
  template <class P>
  requires boost::asio::can_require<const Inner&, const P&>::value auto require(const P& p) const {
    using Next = std::decay_t<decltype(boost::asio::require(inner_, p))>;
    return CallScopeExecutor<Next>(boost::asio::require(inner_, p), scope_);
  }
  template <class P>
  requires boost::asio::can_prefer<const Inner&, const P&>::value auto prefer(const P& p) const {
    using Next = std::decay_t<decltype(boost::asio::prefer(inner_, p))>;
    return CallScopeExecutor<Next>(boost::asio::prefer(inner_, p), scope_);
  }

  friend bool operator==(const CallScopeExecutor& a, const CallScopeExecutor& b) noexcept {
    return a.inner_ == b.inner_ && a.scope_ == b.scope_;
  }
  friend bool operator!=(const CallScopeExecutor& a, const CallScopeExecutor& b) noexcept { return !(a == b); }

 private:
  template <class F>
  struct Scoped {
    F f;
    std::shared_ptr<const CallScope> scope;
    void operator()() {
      DeadlineScope deadline(scope->deadline);
      TraceScope trace(scope->trace);
      std::move(f)();
    }
  };

  Inner inner_;
  std::shared_ptr<const CallScope> scope_;
};

}  // namespace wheelrpc::rpc::detail
