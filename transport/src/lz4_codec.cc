// lz4: one LZ4 frame (lz4frame) each way. The decoder trusts the frame's
// content size only as far as the cap, decodes straight into a buffer of that
// size, and counts first when the frame has no size. A frame of 4 MiB blocks
// (the lz4 command's default) is decoded with its block buffer counted against
// the body limit.
#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include <lz4frame.h>

#include "codecs.h"

namespace wheelrpc::transport::codec {
namespace {

constexpr std::string_view kAlg = "lz4";

/// lz4's levels: 1 and 2 the fast mode, 3 (LZ4HC_CLEVEL_MIN) to 12 (LZ4HC_CLEVEL_MAX) LZ4HC.
constexpr int kMaxLevel = 12;

struct CCtxFree {
  void operator()(LZ4F_cctx* c) const noexcept { LZ4F_freeCompressionContext(c); }
};
struct DCtxFree {
  void operator()(LZ4F_dctx* d) const noexcept { LZ4F_freeDecompressionContext(d); }
};
using CCtxPtr = std::unique_ptr<LZ4F_cctx, CCtxFree>;
using DCtxPtr = std::unique_ptr<LZ4F_dctx, DCtxFree>;

CCtxPtr& compress_context() {
  thread_local CCtxPtr cctx;
  if (!cctx) {
    LZ4F_cctx* c = nullptr;
    if (LZ4F_isError(LZ4F_createCompressionContext(&c, LZ4F_VERSION))) throw std::bad_alloc();
    cctx.reset(c);
  }
  return cctx;
}

DCtxPtr& decompress_context() {
  thread_local DCtxPtr dctx;
  if (!dctx) {
    LZ4F_dctx* d = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) throw std::bad_alloc();
    dctx.reset(d);
  }
  return dctx;
}

/// The library's name of an error without its "ERROR_" prefix.
std::string_view error_name(std::size_t code) noexcept {
  std::string_view name = LZ4F_getErrorName(code);
  if (name.starts_with("ERROR_")) name.remove_prefix(6);
  return name;
}

void check(std::size_t code) {
  if (LZ4F_isError(code)) throw std::runtime_error("lz4: " + std::string(error_name(code)));
}

int clamp_level(int level) noexcept { return level == 0 ? 0 : std::clamp(level, 1, kMaxLevel); }

/// Blocks up to this size are decoded with the context's buffers beside the
/// body limit (at most ~2 MiB, freed after the call), as zstd keeps its 1 MiB
/// window beside it. A larger block's buffer counts against the limit.
constexpr std::size_t kBlockBesideLimit = 1u << 20;

/// The bytes of a block size id (LZ4F_default: 64 KiB).
std::size_t block_bytes(LZ4F_blockSizeID_t id) noexcept {
  switch (id) {
    case LZ4F_max256KB: return 256u << 10;
    case LZ4F_max1MB: return 1u << 20;
    case LZ4F_max4MB: return 4u << 20;
    default: return 64u << 10;
  }
}

/// The buffer LZ4F decodes a frame's blocks through, as lz4frame.c sizes it:
/// a block, and 128 KiB more for linked blocks (their dictionary). It writes
/// a block there whenever the output has less room left than a block (always
/// while counting into the scratch buffer; for the last block of a frame with
/// its size), so a decoding holds up to that much beside its output. (Its
/// input buffer is written only with a frame cut short: the whole frame is
/// handed over at once.)
std::size_t block_buffer_bytes(const LZ4F_frameInfo_t& info) noexcept {
  return block_bytes(info.blockSizeID) + (info.blockMode == LZ4F_blockLinked ? 128u << 10 : 0);
}

/// "; a frame of 4 MiB blocks decodes through a B-byte block buffer counted
/// against the body limit of M bytes, which leaves L bytes for the payload".
std::string block_budget_text(const LZ4F_frameInfo_t& info, const OutputCap& cap, std::size_t left) {
  return "; a frame of " + std::to_string(block_bytes(info.blockSizeID) >> 20) + " MiB blocks decodes through a " +
         std::to_string(block_buffer_bytes(info)) + "-byte block buffer counted against the body limit of " +
         std::to_string(cap.max_output) + " bytes, which leaves " + std::to_string(left) + " bytes for the payload";
}

/// How a decoding run ended.
enum class RunEnd { frame_end, over_limit, error, truncated, stuck };

struct Run {
  RunEnd end = RunEnd::frame_end;
  std::uint64_t total = 0;     ///< bytes decoded
  std::size_t unconsumed = 0;  ///< input bytes after the frame's end
  std::size_t code = 0;        ///< RunEnd::error: the library's error code
};

/// Decodes the rest of the frame (the context is at its start or past its
/// header) from `in`: into `dst` (`dst_size` bytes) while it has room, then
/// into the scratch buffer, only counted. Stops at the frame's end, on an
/// error, or as soon as the output passes `limit` bytes.
Run run(LZ4F_dctx& d, std::string_view in, char* dst, std::size_t dst_size, std::size_t limit) {
  // stableDst stays 0: the scratch buffer is overwritten, so linked blocks
  // must keep their dictionary in the context's own buffer.
  const LZ4F_decompressOptions_t options{};
  const std::span<char> buffer = scratch();
  Run r;
  int stalls = 0;
  for (;;) {
    const bool into_dst = r.total < dst_size;
    char* out = into_dst ? dst + r.total : buffer.data();
    std::size_t out_size = into_dst ? dst_size - static_cast<std::size_t>(r.total) : buffer.size();
    std::size_t in_size = in.size();
    const std::size_t ret = LZ4F_decompress(&d, out, &out_size, in.data(), &in_size, &options);
    in.remove_prefix(in_size);
    r.total += out_size;
    if (LZ4F_isError(ret)) {
      r.end = RunEnd::error;
      r.code = ret;
      return r;
    }
    if (r.total > limit) {
      r.end = RunEnd::over_limit;
      return r;
    }
    if (ret == 0) {
      r.unconsumed = in.size();
      return r;
    }
    if (in.empty()) {
      r.end = RunEnd::truncated;
      return r;
    }
    stalls = in_size == 0 && out_size == 0 ? stalls + 1 : 0;
    if (stalls > 1) {
      r.end = RunEnd::stuck;
      return r;
    }
  }
}

/// The error for a run that did not end with its frame (or ended with bytes after it).
boost::system::error_code run_error(const Run& r, const OutputCap& cap, std::string* why) {
  switch (r.end) {
    case RunEnd::frame_end: break;
    case RunEnd::over_limit: return inflates_past(kAlg, cap, why);
    case RunEnd::error: return corrupt(kAlg, error_name(r.code), why);
    case RunEnd::truncated: return corrupt(kAlg, "truncated frame", why);
    case RunEnd::stuck: return corrupt(kAlg, "the decoder makes no progress", why);
  }
  if (r.unconsumed != 0) {
    return corrupt(kAlg, std::to_string(r.unconsumed) + " bytes after the end of the frame", why);
  }
  return {};
}

/// Frees the context on the way out unless the call decoded its frame to the
/// end with blocks of 64 KiB: a frame with larger blocks made it allocate two
/// buffers of a block each (block_buffer_bytes: up to 8 MiB for 4 MiB blocks),
/// and a frame left half-way (an error, a refusal)
/// leaves state that LZ4F_resetDecompressionContext does not clear (lz4 1.9.4
/// keeps the remaining content size of a frame with a size, and then fails the
/// next frame without one with frameSize_wrong).
struct ContextTrim {
  DCtxPtr& dctx;
  bool keep = false;
  ~ContextTrim() {
    if (!keep) dctx.reset();
  }
};

}  // namespace

void lz4_compress(std::string_view in, int level, std::string& out) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  // Independent blocks: a decoder needs no 64 KiB dictionary copy between
  // blocks; RPC payloads are mostly smaller than one block anyway.
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  prefs.frameInfo.contentSize = in.size();  // 0 (an empty payload) means "not given"
  prefs.compressionLevel = clamp_level(level);
  prefs.autoFlush = 1;  // no copy of the input into the context's buffer

  LZ4F_cctx* cctx = compress_context().get();
  const std::size_t bound = LZ4F_compressFrameBound(in.size(), &prefs);
  const std::size_t old = out.size();
  out.resize(old + bound);
  std::size_t pos = old;
  try {
    std::size_t n = LZ4F_compressBegin(cctx, out.data() + pos, out.size() - pos, &prefs);
    check(n);
    pos += n;
    n = LZ4F_compressUpdate(cctx, out.data() + pos, out.size() - pos, in.data(), in.size(), nullptr);
    check(n);
    pos += n;
    n = LZ4F_compressEnd(cctx, out.data() + pos, out.size() - pos, nullptr);
    check(n);
    pos += n;
  } catch (...) {
    out.resize(old);
    compress_context().reset();  // mid-frame: start the next call afresh
    throw;
  }
  out.resize(pos);
}

boost::system::error_code lz4_decompress(std::string_view in, const OutputCap& cap, std::string& out,
                                         std::string* why) {
  DCtxPtr& dctx = decompress_context();
  ContextTrim trim{dctx};

  LZ4F_frameInfo_t info{};
  std::size_t header = in.size();
  const std::size_t hint = LZ4F_getFrameInfo(dctx.get(), &info, in.data(), &header);
  if (LZ4F_isError(hint)) return corrupt(kAlg, error_name(hint), why);
  const bool small_blocks = info.blockSizeID <= LZ4F_max64KB;  // LZ4F_default is 64 KiB
  // What the output may take: the cap; for blocks over 1 MiB, also no more
  // than the body limit leaves beside their block buffer, so that the two
  // together stay within it.
  std::size_t limit = cap.bytes;
  bool block_bound = false;
  if (block_bytes(info.blockSizeID) > kBlockBesideLimit) {
    const std::size_t buffer = block_buffer_bytes(info);
    const std::size_t left = cap.max_output > buffer ? cap.max_output - buffer : 0;
    if (left < limit) {
      limit = left;
      block_bound = true;
    }
  }

  // contentSize 0 means "not given"; a skippable frame has none.
  const bool known = info.frameType == LZ4F_frame && info.contentSize != 0;
  if (known) {
    if (info.contentSize > cap.bytes) return declares_over(kAlg, info.contentSize, cap, why);
    if (info.contentSize > limit) {
      return too_large(
          kAlg,
          "the payload declares " + std::to_string(info.contentSize) + " bytes" + block_budget_text(info, cap, limit),
          why);
    }
    const auto size = static_cast<std::size_t>(info.contentSize);
    out.clear();
    out.resize(size);
    const Run r = run(*dctx, in.substr(header), out.data(), size, size);
    if (r.end == RunEnd::over_limit) {
      return corrupt(kAlg, "the payload decodes to more than the " + std::to_string(size) + " bytes it declares", why);
    }
    if (auto ec = run_error(r, cap, why)) return ec;
    if (r.total != size) {  // lz4 checks it too (frameSize_wrong)
      return corrupt(kAlg, "the payload decodes to " + std::to_string(r.total) + " bytes, not " + std::to_string(size),
                     why);
    }
    trim.keep = small_blocks;
    return {};
  }

  const Run counted = run(*dctx, in.substr(header), nullptr, 0, limit);
  if (counted.end == RunEnd::over_limit && block_bound) {
    return too_large(
        kAlg, "the payload inflates past " + std::to_string(limit) + " bytes" + block_budget_text(info, cap, limit),
        why);
  }
  if (auto ec = run_error(counted, cap, why)) return ec;
  const auto size = static_cast<std::size_t>(counted.total);
  out.clear();
  out.resize(size);
  LZ4F_resetDecompressionContext(dctx.get());
  const Run r = run(*dctx, in, out.data(), size, size);
  if (auto ec = run_error(r, cap, why)) return ec;
  if (r.total != size) return corrupt(kAlg, "the payload decodes differently a second time", why);
  trim.keep = small_blocks;
  return {};
}

}  // namespace wheelrpc::transport::codec
