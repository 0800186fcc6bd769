#pragma once
/// W3C Trace Context for calls: every call carries a `traceparent`
/// attachment ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"). A
/// call started while a request is being served continues that request's
/// trace (same trace id, a new parent id), exactly as it inherits the
/// request's deadline; a call started elsewhere begins a new trace, unless
/// the caller put a `traceparent` in CallOptions::attachments itself. Timeout
/// records (`recent_timeouts()`, the admin /timeouts page) and the rpc log
/// lines show the trace id, so one slow request can be followed across
/// services by grepping one id.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wheelrpc::rpc {

/// The attachment key: "traceparent".
inline constexpr std::string_view kTraceparentKey = "traceparent";

struct TraceContext {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> parent_id{};
  std::uint8_t flags = 1;  ///< sampled

  /// A new trace: random ids (never all zero). Cheap (a per-thread generator).
  static TraceContext make_root() noexcept;
  /// The same trace, a new random parent id: what a nested call sends.
  TraceContext child() const noexcept;
  /// Parses a version-00 traceparent; std::nullopt when malformed or all-zero ids.
  static std::optional<TraceContext> parse(std::string_view traceparent) noexcept;
  /// Characters in a version-00 traceparent.
  static constexpr std::size_t kTraceparentSize = 55;
  /// "00-<trace id>-<parent id>-<flags>" (55 characters).
  std::string traceparent() const;
  /// Writes the traceparent's kTraceparentSize characters to `out` (no
  /// terminator): the same text without a string.
  void write_traceparent(char* out) const noexcept;
  /// The 32 lower-case hex digits of the trace id.
  std::string trace_id_hex() const;
};

/// The trace in force on this thread: set while a Server handler runs (to its
/// request's), while the completion of a call runs (to that call's), and
/// under a TraceScope. std::nullopt when there is none.
std::optional<TraceContext> current_trace() noexcept;

/// Puts `trace` in force on this thread for the scope's lifetime, then
/// restores the previous one (like DeadlineScope, for handlers that go on
/// on another thread). Not copyable or movable; scopes nest.
class TraceScope {
 public:
  explicit TraceScope(std::optional<TraceContext> trace) noexcept;
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  std::optional<TraceContext> previous_;
};

}  // namespace wheelrpc::rpc
