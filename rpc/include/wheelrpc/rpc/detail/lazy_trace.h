#pragma once
/// Internal (the server's request slots and the typed services' call scope;
/// not an API): a request's traceparent as it came, parsed only when
/// something asks for the trace: a nested call the handler makes, a timeout
/// record, a log line. Most requests never ask, and parsing 48 hex digits was
/// a tenth of a small request's server CPU.

#include <array>
#include <cstring>
#include <optional>
#include <string_view>

#include <wheelrpc/rpc/routing_tag.h>
#include <wheelrpc/rpc/trace.h>

namespace wheelrpc::rpc::detail {

/// @par Thread Safety
/// Written once before the request is shared; then read-only (`get()` parses
/// each time it is asked, and caches nothing).
class LazyTrace {
 public:
  /// The value of a request's traceparent attachment (any length: one that
  /// is not 55 characters long is no trace).
  void set_raw(std::string_view traceparent) noexcept {
    if (traceparent.size() != raw_.size()) {
      state_ = State::none;
      return;
    }
    std::memcpy(raw_.data(), traceparent.data(), raw_.size());
    state_ = State::raw;
  }
  void set(const TraceContext& trace) noexcept {
    trace.write_traceparent(raw_.data());
    state_ = State::raw;
  }
  bool present() const noexcept { return state_ == State::raw; }
  /// The 55 characters; only when present().
  std::string_view raw() const noexcept { return {raw_.data(), raw_.size()}; }
  /// The parsed trace, std::nullopt when absent or malformed.
  std::optional<TraceContext> get() const noexcept { return present() ? TraceContext::parse(raw()) : std::nullopt; }
  /// The routing tag the request carried (its baggage), put in force with the trace.
  void set_tag(RoutingTag tag) noexcept { tag_ = tag; }
  const RoutingTag& tag() const noexcept { return tag_; }

 private:
  enum class State : unsigned char { none, raw };
  std::array<char, TraceContext::kTraceparentSize> raw_;
  State state_ = State::none;
  RoutingTag tag_;
};

/// Puts a request's trace and routing tag in force on this thread for the
/// scope (as TraceScope and RoutingTagScope do), parsed only if
/// current_trace() asks. The characters are
/// copied: the request may be gone before the scope ends. The trace in force
/// before is kept as it was, parsed or not: nesting scopes (a typed
/// coroutine resumed inside a handler's scope) parses nothing.
class LazyTraceScope {
 public:
  explicit LazyTraceScope(const LazyTrace& trace) noexcept;
  ~LazyTraceScope();
  LazyTraceScope(const LazyTraceScope&) = delete;
  LazyTraceScope& operator=(const LazyTraceScope&) = delete;

 private:
  std::optional<TraceContext> previous_;                           // when !previous_pending_
  std::array<char, TraceContext::kTraceparentSize> previous_raw_;  // when previous_pending_
  bool previous_pending_ = false;
  RoutingTag previous_tag_;
};

}  // namespace wheelrpc::rpc::detail
