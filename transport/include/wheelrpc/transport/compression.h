#pragma once
/// Payload compression: the algorithms' names and sets (what a HELLO offers),
/// `compress`, and `decompress`, which is bounded against compression bombs.
///
/// @par Formats
/// - identity: the bytes as they are.
/// - zstd: zstd frames (RFC 8878). The encoder writes one frame with its
///   content size and a content checksum. The decoder accepts one or more
///   frames (and skippable frames); frames of the legacy formats (before
///   zstd v0.8) and frames that need a dictionary are refused.
/// - lz4: one LZ4 frame (lz4frame, not the raw block format). The encoder
///   writes the content size, 64 KiB independent blocks and a content
///   checksum. The decoder accepts exactly one frame, with or without a
///   content size, with blocks of any size lz4 defines (64 KiB to 4 MiB: the
///   lz4 command writes 4 MiB blocks by default); see Memory for the bound
///   on a frame of 4 MiB blocks.
/// - gzip: one RFC 1952 member (a multi-member file is refused).
/// - deflate: one RFC 1950 zlib stream (what gRPC and HTTP call "deflate";
///   not raw RFC 1951 data); no preset dictionary.
///
/// @par Memory
/// A decompression holds at most its output (never more than the output cap
/// of DecompressLimits, allocated once at its final size, never grown by
/// doubling) plus fixed buffers: a 64 KiB scratch per thread, and the
/// decoder's context: zstd ~0.2 MiB (plus a 1 MiB window for a frame
/// without its content size, freed after the call), lz4 ~0.1 MiB (~2 MiB
/// during a frame of 1 MiB blocks, freed after the call), zlib ~40 KiB.
/// The exception is an lz4 frame of 4 MiB blocks: lz4 decodes a block
/// through a buffer of a block (4 MiB; 4 MiB + 128 KiB for linked blocks)
/// whenever the output has less room than a block left, and that buffer
/// counts against `max_output`: such a frame may decode to at most
/// `max_output` minus its buffer (4 MiB of the default 8 MiB), so the output
/// and the buffer together stay within `max_output`.
/// A payload that declares its size (zstd's frame content size, lz4's
/// content size, gzip's ISIZE trailer) is refused before anything is
/// decoded when the size passes the cap; a payload that does not is first
/// decoded into the scratch buffer only to count its size, stopping as soon
/// as the count passes the cap, then decoded again into its final buffer.
///
/// @par Thread Safety
/// Every function here is safe to call from any thread at the same time;
/// each thread keeps its own reusable contexts. CompressionSet is a value:
/// distinct objects safe, shared objects unsafe while one is modified.
///
/// @par Example
/// @code
///   std::string wire;
///   compress(Compression::zstd, payload, 0, wire);
///   std::string back, why;
///   if (auto ec = decompress(Compression::zstd, wire, DecompressLimits{}, back, &why)) {
///     // errc::decompressed_too_large or errc::corrupt_compression; `why` names the cause
///   }
/// @endcode

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

namespace wheelrpc::transport {

/// A payload's compression; the values are the wire's (frame header byte 6, docs/protocol.md).
enum class Compression : std::uint8_t { identity = 0, zstd = 1, lz4 = 2, gzip = 3, deflate = 4 };

/// Number of Compression values (identity included).
inline constexpr int kCompressionCount = 5;

/// "identity", "zstd", "lz4", "gzip", "deflate"; "unknown" for a value that
/// is none of them.
std::string_view to_string(Compression c) noexcept;

/// The names above (lower case exactly); std::nullopt otherwise.
std::optional<Compression> parse_compression(std::string_view name) noexcept;

/// Parses "ALG" or "ALG:LEVEL" (a configuration's or a command line's
/// spelling): ALG one of the names above, or "none" for identity; LEVEL a
/// decimal integer, possibly negative (see `compress` for its meaning).
/// "ALG" alone sets `level` to 0 (the algorithm's default). Returns false,
/// leaving `c` and `level` unchanged, for anything else ("zstd:", "zstd:x",
/// "Zstd", " zstd", "zstd:99999999999").
bool parse_compression_spec(std::string_view text, Compression& c, int& level) noexcept;

/// A set of algorithms: bit (1 << value) of `bits()` for each. identity is
/// always implied and never stored.
///
/// @par Thread Safety
/// A value: distinct objects safe; shared objects unsafe while one is modified.
class CompressionSet {
 public:
  /// The empty set (identity alone).
  constexpr CompressionSet() noexcept = default;

  /// zstd, lz4, gzip and deflate.
  static constexpr CompressionSet all() noexcept { return CompressionSet(kAllBits); }

  /// Whether `c` is in the set; identity: always true; false for a value
  /// that is no Compression.
  constexpr bool contains(Compression c) const noexcept { return c == Compression::identity || (bit(c) & bits_) != 0; }

  /// Adds `c` (identity and unknown values: no change).
  constexpr CompressionSet& insert(Compression c) noexcept {
    bits_ = static_cast<std::uint8_t>(bits_ | bit(c));
    return *this;
  }

  /// Removes `c` (identity: no change, it is always implied).
  constexpr CompressionSet& erase(Compression c) noexcept {
    bits_ = static_cast<std::uint8_t>(bits_ & ~bit(c));
    return *this;
  }

  /// True when the set holds no algorithm but identity.
  constexpr bool empty() const noexcept { return bits_ == 0; }

  /// Bit (1 << value) for each algorithm in the set; bit 0 (identity) is never set.
  constexpr std::uint8_t bits() const noexcept { return bits_; }

  /// The set of the bits of `b` that name an algorithm; others (identity's
  /// bit 0, values this build does not know) are dropped.
  static constexpr CompressionSet from_bits(std::uint8_t b) noexcept {
    return CompressionSet(static_cast<std::uint8_t>(b & kAllBits));
  }

  /// "zstd,lz4,gzip,deflate": the names, in value order, comma-separated, no
  /// spaces; "" when empty. The HELLO's `accept_encoding` value.
  std::string to_string() const;

  /// Parses a comma-separated list of names. Unknown names (a newer peer may
  /// name algorithms this build does not know), "identity" and empty items
  /// are skipped; spaces and tabs around names are ignored. Never fails.
  static CompressionSet parse(std::string_view list) noexcept;

  friend constexpr bool operator==(CompressionSet, CompressionSet) noexcept = default;

 private:
  static constexpr std::uint8_t kAllBits = 0b1'1110;

  constexpr explicit CompressionSet(std::uint8_t b) noexcept : bits_(b) {}

  /// The bit of an algorithm; 0 for identity and for values that are no Compression.
  static constexpr std::uint8_t bit(Compression c) noexcept {
    const auto v = static_cast<unsigned>(c);
    return v < 8 ? static_cast<std::uint8_t>((1u << v) & kAllBits) : std::uint8_t{0};
  }

  std::uint8_t bits_ = 0;
};

/// Appends `in` compressed with `c` to `out` (what `out` holds is kept).
///
/// `level`: 0 = the algorithm's own default (zstd's ZSTD_CLEVEL_DEFAULT, 3;
/// lz4's fast mode; zlib's 6). Otherwise clamped to the algorithm's range:
/// zstd ZSTD_minCLevel() (negative: faster, larger) to ZSTD_maxCLevel() (22);
/// lz4 1 to 12, where 1 and 2 are the fast mode and 3 to 12 LZ4HC; zlib 1 to
/// 9 (gzip and deflate). identity ignores it.
///
/// Encodings:
/// - identity: `in` as is.
/// - zstd: one zstd frame with its content size and a content checksum (XXH64).
/// - lz4: one LZ4 frame with its content size, 64 KiB independent blocks
///   (LZ4F_max64KB) and a content checksum.
/// - gzip: one RFC 1952 member (zlib's deflateInit2 with windowBits 15 + 16,
///   memLevel 8, Z_DEFAULT_STRATEGY; no file name, mtime 0).
/// - deflate: one RFC 1950 zlib stream (windowBits 15, memLevel 8, Z_DEFAULT_STRATEGY).
///
/// Any thread. Uses per-thread reusable contexts (a zstd context grown past
/// 8 MiB by a high level on a large input is freed after the call). `out`
/// grows once, by the algorithm's bound for `in`, then shrinks to what was
/// written. Throws std::bad_alloc when memory runs out, std::invalid_argument
/// when `c` is no Compression, std::runtime_error if a library fails
/// otherwise (with a bound-sized buffer, none does); `out` is then as it was.
void compress(Compression c, std::string_view in, int level, std::string& out);

/// Bounds on one decompression. The output cap is
///   min(max_output, max(ratio_floor, input size x max_ratio))
/// (the product saturates; max_ratio 0 leaves the ratio term out), and the
/// error message names whichever of the two limits set it.
struct DecompressLimits {
  /// Largest output accepted, bytes (the receiver's body limit). Default 8 MiB.
  std::size_t max_output = 8u << 20;
  /// Largest ratio output/input accepted once the output passes `ratio_floor`:
  /// a 1 KiB input may inflate to ratio_floor bytes whatever its ratio, and
  /// beyond that to at most max_ratio x its size. Default 1024; 0 = no ratio limit.
  std::uint32_t max_ratio = 1024;
  /// Output size, bytes, below which the ratio is not checked. Default 1 MiB.
  std::size_t ratio_floor = 1u << 20;
};

/// Decompresses `in` (compressed with `c`) into `out`, whose contents are
/// replaced. Any thread. Returns:
/// - no error: `out` holds the payload (at most the output cap of `limits`).
/// - errc::decompressed_too_large: the output would pass the cap. Refused
///   before decoding anything when the payload declares its size; otherwise
///   once the decoded count passes the cap. Also a zstd frame without its
///   content size whose window is over 1 MiB (our encoder always writes the
///   size), and an lz4 frame of 4 MiB blocks whose output would pass what
///   `max_output` leaves beside its block buffer (see Memory): "lz4: the
///   payload declares 5242880 bytes; a frame of 4 MiB blocks decodes through a
///   4194304-byte block buffer counted against the body limit of 8388608
///   bytes, which leaves 4194304 bytes for the payload". `why` names the limit and its value:
///   "zstd: the payload inflates past the body limit of 8388608 bytes",
///   "gzip: the payload declares 1073741824 bytes, over the body limit of 8388608 bytes",
///   "deflate: the payload inflates past the ratio limit of 1024:1 (1024 bytes in)".
/// - errc::corrupt_compression: `in` is not a valid stream of `c`: empty, bad
///   magic, a bad checksum, truncated, bytes after the last frame or member,
///   a size that does not match the declared one, a gzip ISIZE beyond deflate's largest ratio (1032:1: a
///   damaged or truncated trailer), a zstd frame of a legacy format or that
///   needs a dictionary, a value of `c` that is no Compression. `why` says
///   what the library said, e.g. "zstd: Unknown frame descriptor", "lz4:
///   contentChecksum_invalid", "gzip: incorrect data check", or what we found.
/// gzip's ISIZE is the size mod 2^32: a member of 4 GiB or more (only
/// possible with a cap that large) is refused as corrupt.
/// identity copies `in`, still within the cap. On error `out` is cleared
/// (its capacity kept) and `why` (when not null) set; on success `why` is
/// left as it was. Throws std::bad_alloc when memory runs out.
boost::system::error_code decompress(Compression c, std::string_view in, const DecompressLimits& limits,
                                     std::string& out, std::string* why = nullptr);

}  // namespace wheelrpc::transport
