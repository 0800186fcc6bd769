#pragma once
/// Compression of payloads: zstd, lz4, gzip and deflate, with decoding
/// bounded by the receiver's limits (docs/compression.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

namespace wheelrpc::transport {

/// A payload's compression; the values are the wire's (frame header byte 6,
/// docs/protocol.md).
enum class Compression : std::uint8_t { identity = 0, zstd = 1, lz4 = 2, gzip = 3, deflate = 4 };
inline constexpr int kCompressionCount = 5;

/// "identity", "zstd", "lz4", "gzip", "deflate".
std::string_view to_string(Compression c) noexcept;
/// The names above (lower case exactly); std::nullopt otherwise.
std::optional<Compression> parse_compression(std::string_view name) noexcept;
/// "ALG" or "ALG:LEVEL" (LEVEL an integer, possibly negative; "none" is
/// identity): false when it names no algorithm or the level is not a number.
bool parse_compression_spec(std::string_view text, Compression& c, int& level) noexcept;

/// A set of algorithms (bit 1 << value); identity is always implied.
class CompressionSet {
 public:
  constexpr CompressionSet() noexcept = default;
  static constexpr CompressionSet all() noexcept { return from_bits(0x1e); }
  constexpr bool contains(Compression c) const noexcept {
    return c == Compression::identity || (bits_ >> static_cast<int>(c)) & 1u;
  }
  constexpr CompressionSet& insert(Compression c) noexcept {
    if (c != Compression::identity) bits_ = static_cast<std::uint8_t>(bits_ | (1u << static_cast<int>(c)));
    return *this;
  }
  constexpr CompressionSet& erase(Compression c) noexcept {
    bits_ = static_cast<std::uint8_t>(bits_ & ~(1u << static_cast<int>(c)));
    return *this;
  }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr std::uint8_t bits() const noexcept { return bits_; }
  /// Unknown bits (and identity's) dropped.
  static constexpr CompressionSet from_bits(std::uint8_t bits) noexcept {
    CompressionSet s;
    s.bits_ = static_cast<std::uint8_t>(bits & 0x1e);
    return s;
  }
  /// "zstd,lz4,gzip,deflate" in value order; "" when empty.
  std::string to_string() const;
  /// A comma-separated list; unknown names and "identity" skipped.
  static CompressionSet parse(std::string_view list) noexcept;
  friend constexpr bool operator==(CompressionSet, CompressionSet) noexcept = default;

 private:
  std::uint8_t bits_ = 0;
};

/// Appends `in` compressed with `c` at `level` (0: the algorithm's default)
/// to `out`. Any thread.
void compress(Compression c, std::string_view in, int level, std::string& out);

/// Bounds on one decompression.
struct DecompressLimits {
  std::size_t max_output = 8u << 20;
  std::uint32_t max_ratio = 1024;
  std::size_t ratio_floor = 1u << 20;
};

/// Decompresses `in` into `out` (replaced) within `limits`. Any thread.
boost::system::error_code decompress(Compression c, std::string_view in, const DecompressLimits& limits,
                                     std::string& out, std::string* why = nullptr);

}  // namespace wheelrpc::transport
