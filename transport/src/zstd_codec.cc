// zstd: one frame with its content size and checksum out; frames in, decoded
// in one shot straight into the final buffer (no window buffer), after a
// counting pass through a small-window stream when a frame has no size.
#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include <zstd.h>
#include <zstd_errors.h>

#include "codecs.h"

namespace wheelrpc::transport::codec {
namespace {

constexpr std::string_view kAlg = "zstd";

/// The largest window (log2 bytes) the counting pass accepts: 1 MiB. Only a
/// frame without its content size goes through it; our encoder writes the size.
constexpr int kCountingWindowLog = 20;

/// A compression context larger than this after a call is freed rather than
/// kept for the thread's next call (high levels on large inputs).
constexpr std::size_t kKeepCompressContext = 8u << 20;

/// A streaming context larger than this (it holds the window after a frame
/// without its size) is freed after the call.
constexpr std::size_t kKeepStreamContext = 256u << 10;

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
};
using CCtxPtr = std::unique_ptr<ZSTD_CCtx, CCtxFree>;
using DCtxPtr = std::unique_ptr<ZSTD_DCtx, DCtxFree>;

/// This thread's contexts, created on first use.
struct Contexts {
  CCtxPtr compress;
  DCtxPtr single_shot;  ///< ZSTD_decompressDCtx only: no window buffer
  DCtxPtr stream;       ///< the counting pass
};

Contexts& contexts() {
  thread_local Contexts c;
  return c;
}

[[noreturn]] void library_failure(std::size_t code) {
  if (ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation) throw std::bad_alloc();
  throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(code));
}

void check(std::size_t code) {
  if (ZSTD_isError(code)) library_failure(code);
}

ZSTD_DCtx& single_shot_context() {
  DCtxPtr& d = contexts().single_shot;
  if (!d) d.reset(ZSTD_createDCtx());
  if (!d) throw std::bad_alloc();
  return *d;
}

int clamp_level(int level) noexcept {
  if (level == 0) return ZSTD_CLEVEL_DEFAULT;
  return std::clamp(level, ZSTD_minCLevel(), ZSTD_maxCLevel());
}

std::uint32_t read_le32(const char* p) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::uint32_t>(u[0]) | static_cast<std::uint32_t>(u[1]) << 8 |
         static_cast<std::uint32_t>(u[2]) << 16 | static_cast<std::uint32_t>(u[3]) << 24;
}

/// What the frames of a payload declare.
struct Declared {
  std::uint64_t bytes = 0;  ///< the sum of the known content sizes (saturating)
  bool all_known = true;    ///< every frame has its content size
};

/// Walks the frames of `in` (headers and block headers only; nothing is
/// decoded): every byte must belong to a frame. Like ZSTD_findDecompressedSize,
/// but it says what is wrong, and it refuses the legacy formats (decoded by
/// contexts of their own, which the counting pass's window limit does not
/// reach) and frames that need a dictionary before anything is allocated.
boost::system::error_code scan_frames(std::string_view in, Declared& declared, std::string* why) {
  constexpr std::uint32_t kLegacyMagicLow = 0xFD2FB522;  // v0.2 to v0.7: 0xFD2FB522..0xFD2FB527
  while (!in.empty()) {
    if (in.size() >= 4) {
      const std::uint32_t magic = read_le32(in.data());
      if (magic >= kLegacyMagicLow && magic < ZSTD_MAGICNUMBER) {
        return corrupt(kAlg, "a frame of a legacy format (before zstd v0.8) is not accepted", why);
      }
    }
    const std::size_t frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
    if (ZSTD_isError(frame)) return corrupt(kAlg, ZSTD_getErrorName(frame), why);
    const unsigned long long size = ZSTD_getFrameContentSize(in.data(), frame);
    if (size == ZSTD_CONTENTSIZE_ERROR) return corrupt(kAlg, "bad frame header", why);
    if (const unsigned dict = ZSTD_getDictID_fromFrame(in.data(), frame); dict != 0) {
      return corrupt(kAlg, "a frame needs dictionary " + std::to_string(dict) + ", none is accepted", why);
    }
    if (size == ZSTD_CONTENTSIZE_UNKNOWN) {
      declared.all_known = false;
    } else {
      const std::uint64_t room = std::numeric_limits<std::uint64_t>::max() - declared.bytes;
      declared.bytes += std::min<std::uint64_t>(size, room);
    }
    in.remove_prefix(frame);
  }
  return {};
}

/// Decodes all frames of `in` into `out`, sized beforehand to exactly what
/// they yield: one shot, straight into the buffer.
boost::system::error_code decode_into(std::string_view in, std::string& out, std::string* why) {
  const std::size_t n = ZSTD_decompressDCtx(&single_shot_context(), out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) return corrupt(kAlg, ZSTD_getErrorName(n), why);
  if (n != out.size()) {
    return corrupt(kAlg, "the payload decodes to " + std::to_string(n) + " bytes, not " + std::to_string(out.size()),
                   why);
  }
  return {};
}

/// Frees the streaming context on the way out if it kept a window.
struct StreamTrim {
  DCtxPtr& stream;
  ~StreamTrim() {
    if (stream && ZSTD_sizeof_DCtx(stream.get()) > kKeepStreamContext) stream.reset();
  }
};

/// The counting pass: streams `in` through a window-limited context into the
/// scratch buffer; `count` is what it yields when that is at most the cap.
boost::system::error_code count_output(std::string_view in, const OutputCap& cap, std::size_t& count,
                                       std::string* why) {
  DCtxPtr& stream = contexts().stream;
  if (!stream) stream.reset(ZSTD_createDCtx());
  if (!stream) throw std::bad_alloc();
  StreamTrim trim{stream};
  check(ZSTD_DCtx_reset(stream.get(), ZSTD_reset_session_and_parameters));
  check(ZSTD_DCtx_setParameter(stream.get(), ZSTD_d_windowLogMax, kCountingWindowLog));

  const std::span<char> buffer = scratch();
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::uint64_t total = 0;
  int stalls = 0;
  for (;;) {
    ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
    const std::size_t in_before = input.pos;
    const std::size_t ret = ZSTD_decompressStream(stream.get(), &output, &input);
    if (ZSTD_isError(ret)) {
      if (ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge) {
        return too_large(kAlg, "a frame without its content size needs a window over 1 MiB (1048576 bytes)", why);
      }
      return corrupt(kAlg, ZSTD_getErrorName(ret), why);
    }
    total += output.pos;
    if (total > cap.bytes) return inflates_past(kAlg, cap, why);
    // 0: a frame ended and all it holds is flushed.
    if (ret == 0 && input.pos == input.size) break;
    // Room left for output and no input left: the frame wants more.
    if (output.pos < output.size && input.pos == input.size) return corrupt(kAlg, "truncated frame", why);
    // With input and room, every call moves; twice without is a decoder stuck.
    stalls = input.pos == in_before && output.pos == 0 ? stalls + 1 : 0;
    if (stalls > 1) return corrupt(kAlg, "the decoder makes no progress", why);
  }
  count = static_cast<std::size_t>(total);
  return {};
}

}  // namespace

void zstd_compress(std::string_view in, int level, std::string& out) {
  CCtxPtr& cctx = contexts().compress;
  if (!cctx) cctx.reset(ZSTD_createCCtx());
  if (!cctx) throw std::bad_alloc();
  check(ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_and_parameters));
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, clamp_level(level)));
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1));
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1));

  const std::size_t bound = ZSTD_compressBound(in.size());
  check(bound);
  const std::size_t old = out.size();
  out.resize(old + bound);
  const std::size_t n = ZSTD_compress2(cctx.get(), out.data() + old, bound, in.data(), in.size());
  if (ZSTD_isError(n)) {
    out.resize(old);
    library_failure(n);
  }
  out.resize(old + n);
  if (ZSTD_sizeof_CCtx(cctx.get()) > kKeepCompressContext) cctx.reset();
}

boost::system::error_code zstd_decompress(std::string_view in, const OutputCap& cap, std::string& out,
                                          std::string* why) {
  Declared declared;
  if (auto ec = scan_frames(in, declared, why)) return ec;
  // The known sizes alone may already pass the cap, whatever the others hold.
  if (declared.bytes > cap.bytes) return declares_over(kAlg, declared.bytes, cap, why);
  std::size_t size = static_cast<std::size_t>(declared.bytes);
  if (!declared.all_known) {
    if (auto ec = count_output(in, cap, size, why)) return ec;
  }
  out.clear();
  out.resize(size);
  return decode_into(in, out, why);
}

}  // namespace wheelrpc::transport::codec
