#pragma once
/// Internal to the typed services: an executor that puts a request's
/// deadline and trace in force (DeadlineScope, LazyTraceScope) around every
/// function it runs, so a coroutine handler's nested calls inherit them after
/// each co_await too, not only before its first. Not an API.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/asio/execution.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/require.hpp>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/rpc/detail/lazy_trace.h>
#include <wheelrpc/rpc/trace.h>

namespace wheelrpc::rpc::detail {

/// What CallScopeExecutor puts in force: one request's deadline and trace
/// (its traceparent as it came, parsed only if something asks). Counted by
/// the executors that carry it (intrusively, so an executor over an
/// io_context's is two pointers and fits any_io_executor's small buffer: a
/// copy allocates nothing); the last one deletes it. A typed call derives
/// from it to keep its context in the same allocation.
///
/// @par Thread Safety
/// The count is atomic; the scope is written before it is shared and only
/// read after.
class CallScope {
 public:
  CallScope() = default;
  CallScope(std::optional<std::chrono::steady_clock::time_point> deadline,
            const std::optional<TraceContext>& trace) noexcept
      : deadline_(deadline) {
    if (trace) trace_.set(*trace);
  }
  virtual ~CallScope() = default;
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  /// The request's deadline, its traceparent (any string: one that is no
  /// traceparent is no trace) and its baggage (its routing tag). Before the
  /// scope is shared.
  void set(std::optional<std::chrono::steady_clock::time_point> deadline, const std::string* traceparent,
           const std::string* baggage = nullptr) noexcept {
    deadline_ = deadline;
    if (traceparent) trace_.set_raw(*traceparent);
    if (baggage) trace_.set_tag(RoutingTag::from_baggage(*baggage));
  }
  const std::optional<std::chrono::steady_clock::time_point>& deadline() const noexcept { return deadline_; }
  const LazyTrace& trace() const noexcept { return trace_; }

  void add_ref() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  /// For boost::intrusive_ptr (a typed call's own references).
  friend void intrusive_ptr_add_ref(const CallScope* s) noexcept { s->add_ref(); }
  friend void intrusive_ptr_release(const CallScope* s) noexcept { s->release(); }

 private:
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  LazyTrace trace_;
  mutable std::atomic<std::uint32_t> refs_{0};
};

/// A counted reference to a CallScope whose copies cannot throw (as an
/// executor's must; boost::intrusive_ptr's are not noexcept).
class CallScopeRef {
 public:
  CallScopeRef() noexcept = default;
  explicit CallScopeRef(const CallScope* scope) noexcept : scope_(scope) {
    if (scope_) scope_->add_ref();
  }
  CallScopeRef(const CallScopeRef& other) noexcept : CallScopeRef(other.scope_) {}
  CallScopeRef(CallScopeRef&& other) noexcept : scope_(std::exchange(other.scope_, nullptr)) {}
  CallScopeRef& operator=(CallScopeRef other) noexcept {
    std::swap(scope_, other.scope_);
    return *this;
  }
  ~CallScopeRef() {
    if (scope_) scope_->release();
  }
  const CallScope* operator->() const noexcept { return scope_; }
  friend bool operator==(const CallScopeRef& a, const CallScopeRef& b) noexcept { return a.scope_ == b.scope_; }

 private:
  const CallScope* scope_ = nullptr;
};

template <class Inner>
class CallScopeExecutor {
 public:
  CallScopeExecutor(Inner inner, CallScopeRef scope) noexcept : inner_(std::move(inner)), scope_(std::move(scope)) {}

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
    CallScopeRef scope;
    void operator()() {
      DeadlineScope deadline(scope->deadline());
      LazyTraceScope trace(scope->trace());
      std::move(f)();
    }
  };

  Inner inner_;
  CallScopeRef scope_;
};

}  // namespace wheelrpc::rpc::detail
