#pragma once
// The codecs behind compression.h, one .cc each (zstd_codec.cc,
// lz4_codec.cc, zlib_codec.cc), and what they share (compression.cc): the
// output cap, the error messages and the per-thread scratch buffer.
//
// A codec's decompress gets a non-empty input and the cap already computed;
// it fills `out` on success and leaves it to the caller to clear on error.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

namespace wheelrpc::transport::codec {

/// The most output one decompression accepts, and which limit set it.
struct OutputCap {
  std::size_t bytes = 0;        ///< the cap
  bool by_ratio = false;        ///< the ratio limit set it (else max_output)
  std::uint32_t max_ratio = 0;  ///< for the message
  std::size_t in_size = 0;      ///< for the message
  std::size_t max_output = 0;   ///< the body limit (DecompressLimits::max_output), whichever set the cap
};

/// Size of the per-thread scratch buffer (bytes): the counting passes decode into it.
inline constexpr std::size_t kScratchSize = 64u << 10;

/// This thread's scratch buffer, kScratchSize bytes, allocated on first use.
/// Its contents are garbage between calls; never held across them.
std::span<char> scratch();

/// errc::decompressed_too_large: "<alg>: the payload inflates past <the limit>".
boost::system::error_code inflates_past(std::string_view alg, const OutputCap& cap, std::string* why);

/// errc::decompressed_too_large: "<alg>: the payload declares N bytes, over <the limit>".
boost::system::error_code declares_over(std::string_view alg, std::uint64_t declared, const OutputCap& cap,
                                        std::string* why);

/// errc::decompressed_too_large with a message of the codec's own ("<alg>: <what>").
boost::system::error_code too_large(std::string_view alg, std::string_view what, std::string* why);

/// errc::corrupt_compression: "<alg>: <what>".
boost::system::error_code corrupt(std::string_view alg, std::string_view what, std::string* why);

void zstd_compress(std::string_view in, int level, std::string& out);
boost::system::error_code zstd_decompress(std::string_view in, const OutputCap& cap, std::string& out,
                                          std::string* why);

void lz4_compress(std::string_view in, int level, std::string& out);
boost::system::error_code lz4_decompress(std::string_view in, const OutputCap& cap, std::string& out, std::string* why);

/// zlib's two containers: RFC 1952 gzip and RFC 1950 zlib ("deflate").
enum class ZlibFormat { gzip, zlib };

void zlib_compress(ZlibFormat format, std::string_view in, int level, std::string& out);
boost::system::error_code zlib_decompress(ZlibFormat format, std::string_view in, const OutputCap& cap,
                                          std::string& out, std::string* why);

}  // namespace wheelrpc::transport::codec
