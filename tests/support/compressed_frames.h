#pragma once
// Compressed payloads as other encoders (or attackers) write them, made with
// the libraries directly: frames without their size, other block sizes,
// declared sizes that lie.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <lz4frame.h>
#include <zstd.h>

namespace wheelrpc::test {

/// A zstd frame without its content size (ours always has it), with a window
/// of 2^window_log bytes at most: 20 (1 MiB) is the most a decoder accepts
/// in a frame without its size.
inline std::string zstd_unsized(std::string_view in, int window_log = 20) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, window_log);
  std::string out(ZSTD_compressBound(in.size()), '\0');
  ZSTD_outBuffer output{out.data(), out.size(), 0};
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  // Streaming without a pledged size: the frame header cannot hold one.
  const std::size_t left = ZSTD_compressStream2(cctx, &output, &input, ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
  EXPECT_EQ(left, 0u);
  out.resize(output.pos);
  return out;
}

/// An LZ4 frame with blocks of `block` (kept even for a small input, unlike
/// LZ4F_compressFrame), with its content size only if `sized`.
inline std::string lz4_frame(std::string_view in, LZ4F_blockSizeID_t block, bool sized) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = block;
  prefs.frameInfo.contentSize = sized ? in.size() : 0;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  LZ4F_cctx* cctx = nullptr;
  EXPECT_FALSE(LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
  std::string out(LZ4F_compressFrameBound(in.size(), &prefs), '\0');
  std::size_t pos = LZ4F_compressBegin(cctx, out.data(), out.size(), &prefs);
  pos += LZ4F_compressUpdate(cctx, out.data() + pos, out.size() - pos, in.data(), in.size(), nullptr);
  const std::size_t n = LZ4F_compressEnd(cctx, out.data() + pos, out.size() - pos, nullptr);
  EXPECT_FALSE(LZ4F_isError(n)) << LZ4F_getErrorName(n);
  LZ4F_freeCompressionContext(cctx);
  out.resize(pos + n);
  return out;
}

/// An LZ4 frame whose header (with a valid header checksum) declares
/// `declared` bytes, holding `in` in uncompressed 64 KiB blocks, no content checksum.
inline std::string lz4_frame_declaring(std::uint64_t declared, std::string_view in) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentSize = declared;
  LZ4F_cctx* cctx = nullptr;
  EXPECT_FALSE(LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
  std::string out(LZ4F_HEADER_SIZE_MAX, '\0');
  const std::size_t header = LZ4F_compressBegin(cctx, out.data(), out.size(), &prefs);
  LZ4F_freeCompressionContext(cctx);
  EXPECT_FALSE(LZ4F_isError(header));
  out.resize(header);
  const auto put_le32 = [&out](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>(v >> (8 * i) & 0xff);
  };
  constexpr std::size_t kBlock = 64u << 10;
  constexpr std::uint32_t kUncompressed = 0x8000'0000;
  for (std::size_t pos = 0; pos < in.size(); pos += kBlock) {
    const std::string_view block = in.substr(pos, kBlock);
    put_le32(static_cast<std::uint32_t>(block.size()) | kUncompressed);
    out += block;
  }
  put_le32(0);  // end mark
  return out;
}

/// A 14-byte zstd frame whose header declares `declared` bytes (a 4-byte
/// content size field), holding one raw block of one byte.
inline std::string zstd_frame_declaring(std::uint32_t declared) {
  // magic; frame header descriptor: 4-byte content size, not single segment;
  // window descriptor: 1 MiB; the size; block header: last, raw, 1 byte.
  std::string out("\x28\xb5\x2f\xfd\x80\x50", 6);
  for (int i = 0; i < 4; ++i) out += static_cast<char>(declared >> (8 * i) & 0xff);
  out += std::string("\x09\x00\x00x", 4);
  return out;
}

}  // namespace wheelrpc::test
