// gzip (RFC 1952) and deflate (the RFC 1950 zlib stream) through zlib. gzip's
// ISIZE trailer is a hint, trusted only as far as the cap and checked; a zlib
// stream has no size, so it is counted first.
#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

// next_in as a pointer to const: the input is a string_view.
#define ZLIB_CONST
#include <zlib.h>

#include "codecs.h"

namespace wheelrpc::transport::codec {
namespace {

constexpr int kWindowBits = 15;  // 32 KiB, zlib's largest
constexpr int kGzipBits = 16;    // added to the window bits: a gzip wrapper instead of zlib's
constexpr int kMemLevel = 8;     // zlib's default
constexpr int kMaxLevel = 9;

/// A gzip member's fixed header (10 bytes) and trailer (CRC-32, ISIZE: 8 bytes).
constexpr std::size_t kGzipMinSize = 18;

/// Deflate's largest ratio: a 258-byte match costs at least 2 bits (a 1-bit
/// length code, a 1-bit distance code), so a byte of input yields at most
/// 4 x 258 bytes. An ISIZE beyond that is a damaged or truncated trailer.
constexpr std::uint64_t kDeflateMaxRatio = 1032;

std::string_view name(ZlibFormat format) noexcept { return format == ZlibFormat::gzip ? "gzip" : "deflate"; }

int window_bits(ZlibFormat format) noexcept {
  return format == ZlibFormat::gzip ? kWindowBits + kGzipBits : kWindowBits;
}

int clamp_level(int level) noexcept { return level == 0 ? Z_DEFAULT_COMPRESSION : std::clamp(level, 1, kMaxLevel); }

/// A deflate stream of one format, kept per thread and reset between calls.
class Deflater {
 public:
  explicit Deflater(ZlibFormat format) {
    // deflateInit2_ rather than the deflateInit2 macro, whose C cast trips -Wold-style-cast.
    if (deflateInit2_(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits(format), kMemLevel, Z_DEFAULT_STRATEGY,
                      ZLIB_VERSION, static_cast<int>(sizeof(z_stream))) != Z_OK) {
      throw std::bad_alloc();
    }
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  ~Deflater() { deflateEnd(&z_); }

  z_stream& stream() noexcept { return z_; }

 private:
  z_stream z_{};
};

/// An inflate stream kept per thread; inflateReset2 switches it between gzip
/// and zlib without freeing its 32 KiB window.
class Inflater {
 public:
  Inflater() {
    if (inflateInit2_(&z_, kWindowBits, ZLIB_VERSION, static_cast<int>(sizeof(z_stream))) != Z_OK) {
      throw std::bad_alloc();
    }
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() { inflateEnd(&z_); }

  z_stream& reset(ZlibFormat format) {
    if (inflateReset2(&z_, window_bits(format)) != Z_OK) throw std::runtime_error("zlib: inflateReset2 failed");
    return z_;
  }

 private:
  z_stream z_{};
};

/// This thread's deflate stream of `format`, created on first use (~260 KiB
/// each: a thread that only ever writes one format holds one).
z_stream& deflater(ZlibFormat format) {
  if (format == ZlibFormat::gzip) {
    thread_local Deflater gzip(ZlibFormat::gzip);
    return gzip.stream();
  }
  thread_local Deflater zlib(ZlibFormat::zlib);
  return zlib.stream();
}

z_stream& inflater(ZlibFormat format) {
  thread_local Inflater inflater;
  return inflater.reset(format);
}

/// zlib counts in uInt: a longer buffer is fed in pieces.
uInt piece(std::size_t n) noexcept { return static_cast<uInt>(std::min<std::size_t>(n, UINT_MAX)); }

Bytef* bytes(char* p) noexcept { return reinterpret_cast<Bytef*>(p); }
const Bytef* bytes(const char* p) noexcept { return reinterpret_cast<const Bytef*>(p); }

/// How an inflating run ended.
enum class RunEnd { stream_end, over_limit, error, truncated };

struct Run {
  RunEnd end = RunEnd::stream_end;
  std::uint64_t total = 0;     ///< bytes inflated
  std::size_t unconsumed = 0;  ///< input bytes after the stream's end
  std::string error;           ///< RunEnd::error: what zlib said
};

/// Inflates `in` through `z` (just reset): into `dst` (`dst_size` bytes)
/// while it has room, then into the scratch buffer, only counted. Stops at the
/// stream's end, on an error, or as soon as the output passes `limit` bytes.
Run run(z_stream& z, std::string_view in, char* dst, std::size_t dst_size, std::size_t limit) {
  const std::span<char> buffer = scratch();
  Run r;
  z.next_in = bytes(in.data());
  z.avail_in = 0;
  for (;;) {
    if (z.avail_in == 0 && !in.empty()) {
      z.next_in = bytes(in.data());
      z.avail_in = piece(in.size());
      in.remove_prefix(z.avail_in);
    }
    const bool into_dst = r.total < dst_size;
    z.next_out = bytes(into_dst ? dst + r.total : buffer.data());
    z.avail_out = piece(into_dst ? dst_size - static_cast<std::size_t>(r.total) : buffer.size());
    const uInt room = z.avail_out;
    const int ret = inflate(&z, Z_NO_FLUSH);
    r.total += room - z.avail_out;
    if (r.total > limit) {
      r.end = RunEnd::over_limit;
      return r;
    }
    switch (ret) {
      case Z_OK: break;
      case Z_STREAM_END: r.unconsumed = z.avail_in + in.size(); return r;
      case Z_NEED_DICT:
        r.end = RunEnd::error;
        r.error = "the stream needs a preset dictionary, none is accepted";
        return r;
      case Z_MEM_ERROR: throw std::bad_alloc();
      case Z_BUF_ERROR:  // no progress possible: with room for output, the input ran out
        r.end = RunEnd::truncated;
        return r;
      default:  // Z_DATA_ERROR, Z_STREAM_ERROR
        r.end = RunEnd::error;
        r.error = z.msg != nullptr ? z.msg : "invalid data";
        return r;
    }
  }
}

/// The error for a run that did not end with its stream (or ended with bytes after it).
boost::system::error_code run_error(ZlibFormat format, const Run& r, const OutputCap& cap, std::string* why) {
  const std::string_view alg = name(format);
  switch (r.end) {
    case RunEnd::stream_end: break;
    case RunEnd::over_limit: return inflates_past(alg, cap, why);
    case RunEnd::error: return corrupt(alg, r.error, why);
    case RunEnd::truncated:
      return corrupt(alg, format == ZlibFormat::gzip ? "truncated member" : "truncated stream", why);
  }
  if (r.unconsumed != 0) {
    return corrupt(alg,
                   std::to_string(r.unconsumed) + " bytes after the end of the " +
                       (format == ZlibFormat::gzip ? "member" : "stream"),
                   why);
  }
  return {};
}

/// gzip's ISIZE (the size mod 2^32, little endian, in the last 4 bytes) when
/// `in` starts like a gzip member and is long enough to have one.
std::optional<std::uint32_t> gzip_isize(std::string_view in) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(in.data());
  if (in.size() < kGzipMinSize || u[0] != 0x1f || u[1] != 0x8b || u[2] != Z_DEFLATED) return std::nullopt;
  const unsigned char* t = u + in.size() - 4;
  return static_cast<std::uint32_t>(t[0]) | static_cast<std::uint32_t>(t[1]) << 8 |
         static_cast<std::uint32_t>(t[2]) << 16 | static_cast<std::uint32_t>(t[3]) << 24;
}

}  // namespace

void zlib_compress(ZlibFormat format, std::string_view in, int level, std::string& out) {
  z_stream& z = deflater(format);
  // After a reset deflateParams has nothing to flush: it only sets the level.
  if (deflateReset(&z) != Z_OK || deflateParams(&z, clamp_level(level), Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: cannot reset the deflate stream");
  }
  const std::size_t bound = deflateBound(&z, in.size());
  const std::size_t old = out.size();
  out.resize(old + bound);
  char* dst = out.data() + old;
  std::size_t room = bound;
  z.avail_in = 0;
  for (;;) {
    if (z.avail_in == 0 && !in.empty()) {
      z.next_in = bytes(in.data());
      z.avail_in = piece(in.size());
      in.remove_prefix(z.avail_in);
    }
    z.next_out = bytes(dst);
    z.avail_out = piece(room);
    const uInt before = z.avail_out;
    const int ret = deflate(&z, in.empty() ? Z_FINISH : Z_NO_FLUSH);
    dst += before - z.avail_out;
    room -= before - z.avail_out;
    if (ret == Z_STREAM_END) break;
    if (ret != Z_OK) {  // deflateBound's room is enough: only a broken stream gets here
      out.resize(old);
      throw std::runtime_error("zlib: deflate failed: " + std::to_string(ret));
    }
  }
  out.resize(old + (bound - room));
}

boost::system::error_code zlib_decompress(ZlibFormat format, std::string_view in, const OutputCap& cap,
                                          std::string& out, std::string* why) {
  const std::string_view alg = name(format);
  z_stream& z = inflater(format);
  if (format == ZlibFormat::gzip) {
    if (const auto isize = gzip_isize(in)) {
      if (*isize > kDeflateMaxRatio * in.size()) {
        return corrupt(alg,
                       "the ISIZE trailer declares " + std::to_string(*isize) +
                           " bytes, more than deflate can encode in " + std::to_string(in.size()) +
                           " bytes (a damaged or truncated member)",
                       why);
      }
      if (*isize > cap.bytes) return declares_over(alg, *isize, cap, why);
      // Decoded straight into a buffer of the declared size; if the member
      // holds more, the rest is only counted (to the cap) to say which error.
      out.clear();
      out.resize(*isize);
      const Run r = run(z, in, out.data(), out.size(), cap.bytes);
      if (r.end == RunEnd::error && r.total > *isize) {  // zlib: "incorrect length check"
        return corrupt(alg, "the payload inflates to more than the " + std::to_string(*isize) + " bytes it declares",
                       why);
      }
      if (auto ec = run_error(format, r, cap, why)) return ec;
      if (r.total != *isize) {  // zlib checks ISIZE too ("incorrect length check")
        return corrupt(alg,
                       "the payload inflates to " + std::to_string(r.total) + " bytes, not the " +
                           std::to_string(*isize) + " it declares",
                       why);
      }
      return {};
    }
  }
  const Run counted = run(z, in, nullptr, 0, cap.bytes);
  if (auto ec = run_error(format, counted, cap, why)) return ec;
  const auto size = static_cast<std::size_t>(counted.total);
  out.clear();
  out.resize(size);
  const Run r = run(inflater(format), in, out.data(), size, size);
  if (auto ec = run_error(format, r, cap, why)) return ec;
  if (r.total != size) return corrupt(alg, "the payload inflates differently a second time", why);
  return {};
}

}  // namespace wheelrpc::transport::codec
