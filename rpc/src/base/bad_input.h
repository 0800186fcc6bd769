#pragma once
/// BadInputLog: the server's account of connections it closed because the
/// peer broke the protocol (garbage, a bad magic or version, a frame over the
/// body limit, a malformed body, no HELLO first or in time): counted by
/// reason and logged at warning level with the peer, at most one line a second.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <boost/system/error_code.hpp>

namespace wheelrpc::rpc::detail {

/// Why a connection was closed for bad input.
enum class BadInput : std::uint8_t {
  bad_magic,        ///< a frame without the protocol's magic (garbage on the port, another protocol)
  bad_version,      ///< a protocol version this build does not speak
  oversize_frame,   ///< a frame header announcing a body over ChannelOptions::max_body
  malformed_frame,  ///< a body whose lengths overrun it
  no_hello,         ///< a first frame that was not a HELLO (a request before HELLO)
  hello_timeout,    ///< no complete HELLO within ServerOptions::keepalive.hello_timeout
  http2,            ///< HTTP/2 the gRPC wire could not take (a flood, a broken session)
};
inline constexpr std::size_t kBadInputKinds = 7;

/// The reason's name, as /metrics labels it ("bad_magic", ...).
const char* bad_input_name(BadInput kind) noexcept;

/// The bad-input reason a channel's close error stands for: the frame
/// decoder's errors (transport::errc::bad_magic, ...); nullopt for others.
std::optional<BadInput> bad_input_of(const boost::system::error_code& ec) noexcept;

/// Counts and logs. Thread-safe; lock-free.
class BadInputLog {
 public:
  /// Counts a connection closed for `kind` and logs "conn=ID peer=PEER closed
  /// for bad input: REASON (N so far ...)" at warning level, unless a line
  /// was logged less than a second ago (the count goes on either way).
  void note(BadInput kind, std::uint64_t conn, std::string_view peer, std::string_view reason);
  std::uint64_t count(BadInput kind) const noexcept {
    return counts_[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed);
  }
  /// Every reason together.
  std::uint64_t total() const noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, kBadInputKinds> counts_{};
  std::atomic<std::int64_t> last_log_ns_{0};  // steady clock; 0: never
};

}  // namespace wheelrpc::rpc::detail
