#pragma once
/// RoutingTag: the tag a call carries for tag routing (docs/governance.md,
/// "Tag routing"), as the W3C baggage entry `wheelrpc-tag=NAME`. A server
/// puts the tag of the request it serves in force while its handler runs
/// (like the trace and the deadline), and a call made there carries it on:
/// A -> B -> C keeps the tag without code in B.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace wheelrpc::rpc {

/// The attachment (metadata, HTTP/2 header) that carries it: W3C baggage.
inline constexpr std::string_view kBaggageKey = "baggage";
/// The baggage entry's name.
inline constexpr std::string_view kTagBaggageName = "wheelrpc-tag";

/// A routing tag: 1..64 bytes of [A-Za-z0-9._-], or none (empty). No
/// allocation; copying one copies only its characters (none, for no tag: a
/// call pays nothing for tags it does not use).
class RoutingTag {
 public:
  static constexpr std::size_t kMaxSize = 64;
  /// None.
  constexpr RoutingTag() noexcept {}  // NOLINT: the characters past size_ are never read
  RoutingTag(const RoutingTag& other) noexcept : size_(other.size_) {
    if (size_ != 0) [[unlikely]]
      std::memcpy(chars_, other.chars_, size_);
  }
  RoutingTag& operator=(const RoutingTag& other) noexcept {
    size_ = other.size_;
    if (size_ != 0 && this != &other) [[unlikely]]
      std::memcpy(chars_, other.chars_, size_);
    return *this;
  }
  /// `name` if it is a valid tag (empty: none); std::nullopt otherwise.
  static std::optional<RoutingTag> make(std::string_view name) noexcept;
  /// The tag of a W3C baggage value ("k1=v1, wheelrpc-tag=canary;p=1"): its
  /// wheelrpc-tag entry; none when it has no such entry or it is not valid.
  static RoutingTag from_baggage(std::string_view baggage) noexcept;

  std::string_view view() const noexcept { return {chars_, size_}; }
  bool empty() const noexcept { return size_ == 0; }
  friend bool operator==(const RoutingTag& a, const RoutingTag& b) noexcept { return a.view() == b.view(); }

 private:
  std::uint8_t size_ = 0;
  char chars_[kMaxSize];
};

/// The routing tag in force on this thread: the one the request being served
/// carried, or a RoutingTagScope's; none otherwise.
const RoutingTag& current_routing_tag() noexcept;

/// Puts `tag` in force on this thread for the scope (calls made inside carry
/// it, unless they carry a baggage attachment of their own); restores the
/// previous one when it ends.
class RoutingTagScope {
 public:
  explicit RoutingTagScope(RoutingTag tag) noexcept;
  ~RoutingTagScope();
  RoutingTagScope(const RoutingTagScope&) = delete;
  RoutingTagScope& operator=(const RoutingTagScope&) = delete;

 private:
  RoutingTag previous_;
};

}  // namespace wheelrpc::rpc
