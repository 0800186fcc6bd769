// Compression bombs: payloads of 14 bytes to 4 MiB that inflate (or claim to
// inflate) to 1 GiB. Under an 8 MiB body limit each is refused with
// decompressed_too_large, and the peak resident memory of the process grows
// by far less than the limit while it is (VmHWM, reset through
// /proc/self/clear_refs before the call; not asserted where it cannot be reset).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include <malloc.h>

#include <lz4frame.h>
#include <zlib.h>
#include <zstd.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/errc.h>

#include "support/compressed_frames.h"
#include "support/payloads.h"

namespace {

using namespace wheelrpc::transport;

constexpr std::size_t kGiB = 1u << 30;
constexpr std::size_t kMiB = 1u << 20;
constexpr std::size_t kMaxOutput = 8 * kMiB;

/// Most the peak may grow while a bomb is refused: the cap plus 1 MiB.
constexpr std::size_t kBombBound = kMaxOutput + kMiB;

/// The zeros every bomb is made of, fed 1 MiB at a time.
const std::string& zero_chunk() {
  static const std::string zeros(kMiB, '\0');
  return zeros;
}

/// 1 GiB of zeros through zstd at level 1 with a 1 MiB window, with or
/// without the content size in the frame header. zstd's format caps the ratio
/// near 32768:1 (an RLE block: 4 bytes for 128 KiB), so 1 GiB takes ~32 KiB:
/// it cannot fit in 1 KiB.
std::string zstd_zeros(bool sized) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, 20);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, sized ? 1 : 0);
  if (sized) ZSTD_CCtx_setPledgedSrcSize(cctx, kGiB);
  std::string out;
  std::string buffer(ZSTD_CStreamOutSize(), '\0');
  for (std::size_t fed = 0; fed < kGiB; fed += kMiB) {
    const bool last = fed + kMiB == kGiB;
    ZSTD_inBuffer in{zero_chunk().data(), kMiB, 0};
    for (;;) {
      ZSTD_outBuffer o{buffer.data(), buffer.size(), 0};
      const std::size_t left = ZSTD_compressStream2(cctx, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      if (ZSTD_isError(left)) ADD_FAILURE() << ZSTD_getErrorName(left);
      out.append(buffer.data(), o.pos);
      if (ZSTD_isError(left) || (last ? left == 0 : in.pos == in.size)) break;
    }
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

/// 1 GiB of zeros through zlib's run-length strategy, as a gzip member
/// (window_bits 31) or a zlib stream (15). Deflate caps the ratio near
/// 1032:1, so 1 GiB takes ~1 MiB.
std::string zlib_zeros(int window_bits) {
  z_stream z{};
  // deflateInit2_: the deflateInit2 macro's C cast trips -Wold-style-cast.
  EXPECT_EQ(deflateInit2_(&z, 9, Z_DEFLATED, window_bits, 9, Z_RLE, ZLIB_VERSION, static_cast<int>(sizeof(z))), Z_OK);
  std::string out;
  std::string buffer(256u << 10, '\0');
  for (std::size_t fed = 0; fed < kGiB; fed += kMiB) {
    const bool last = fed + kMiB == kGiB;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zero_chunk().data()));
    z.avail_in = static_cast<uInt>(kMiB);
    int ret = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer.data());
      z.avail_out = static_cast<uInt>(buffer.size());
      ret = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      out.append(buffer.data(), buffer.size() - z.avail_out);
    } while (last ? ret == Z_OK : z.avail_in != 0);
    if (last) {
      EXPECT_EQ(ret, Z_STREAM_END);
    }
  }
  deflateEnd(&z);
  return out;
}

/// 1 GiB of zeros in one LZ4 frame without its content size; lz4 caps the
/// ratio near 255:1, so 1 GiB takes ~4 MiB.
std::string lz4_zeros() {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  LZ4F_cctx* cctx = nullptr;
  EXPECT_FALSE(LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
  std::string buffer(LZ4F_compressBound(kMiB, &prefs) + LZ4F_HEADER_SIZE_MAX, '\0');
  std::string out;
  std::size_t n = LZ4F_compressBegin(cctx, buffer.data(), buffer.size(), &prefs);
  out.append(buffer.data(), n);
  for (std::size_t fed = 0; fed < kGiB; fed += kMiB) {
    n = LZ4F_compressUpdate(cctx, buffer.data(), buffer.size(), zero_chunk().data(), kMiB, nullptr);
    EXPECT_FALSE(LZ4F_isError(n));
    out.append(buffer.data(), n);
  }
  n = LZ4F_compressEnd(cctx, buffer.data(), buffer.size(), nullptr);
  out.append(buffer.data(), n);
  LZ4F_freeCompressionContext(cctx);
  return out;
}

// Each bomb is built once per process (ctest runs every test in its own).
const std::string& zstd_unsized_bomb() {
  static const std::string bomb = zstd_zeros(false);
  return bomb;
}
const std::string& zstd_sized_bomb() {
  static const std::string bomb = zstd_zeros(true);
  return bomb;
}
const std::string& gzip_bomb() {
  static const std::string bomb = zlib_zeros(15 + 16);
  return bomb;
}
const std::string& deflate_bomb() {
  static const std::string bomb = zlib_zeros(15);
  return bomb;
}

/// A field of /proc/self/status in bytes ("VmHWM:" is in kB).
std::size_t status_bytes(std::string_view field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(field)) return std::stoul(line.substr(field.size())) * 1024;
  }
  ADD_FAILURE() << field << " is not in /proc/self/status";
  return 0;
}

/// How much the process's peak resident set grows while `fn` runs, in bytes;
/// nullopt when the peak cannot be reset (writing "5" to /proc/self/clear_refs).
/// Free heap memory is given back first (malloc_trim), so memory the call
/// takes from what earlier allocations left free counts too.
template <typename Fn>
std::optional<std::size_t> peak_growth(Fn&& fn) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer maps shadow memory for every byte touched, several
  // times its size: the process's peak says nothing about the decoder's.
  fn();
  return std::nullopt;
#endif
  malloc_trim(0);
  bool reset = false;
  {
    std::ofstream clear_refs("/proc/self/clear_refs");
    clear_refs << "5" << std::flush;
    reset = static_cast<bool>(clear_refs);
  }
  const std::size_t before = reset ? status_bytes("VmHWM:") : 0;
  fn();
  if (!reset) return std::nullopt;
  return status_bytes("VmHWM:") - before;
}

/// Decompresses `bomb` under an 8 MiB body limit: decompressed_too_large,
/// `why` containing `expected`, the peak grown by at most `bound` bytes.
void expect_refused(Compression c, const std::string& bomb, std::string_view expected, std::size_t bound) {
  DecompressLimits limits;
  limits.max_output = kMaxOutput;
  std::string out;
  std::string why;
  boost::system::error_code ec;
  const auto growth = peak_growth([&] { ec = decompress(c, bomb, limits, out, &why); });
  EXPECT_EQ(ec, errc::decompressed_too_large);
  EXPECT_NE(why.find(expected), std::string::npos) << why;
  EXPECT_TRUE(out.empty());
  EXPECT_LE(out.capacity(), kMaxOutput);
  std::printf("[ bomb     ] %s: %zu bytes in; %s; peak grew by %s\n", std::string(to_string(c)).c_str(), bomb.size(),
              why.c_str(), growth ? (std::to_string(*growth >> 10) + " KiB").c_str() : "(not measured)");
  if (growth) {
    EXPECT_LE(*growth, kBombBound);
    EXPECT_LE(*growth, bound);
  }
}

TEST(CompressionBomb, ZstdWithoutItsSizeIsCountedAndStoppedAtTheLimit) {
  ASSERT_LT(zstd_unsized_bomb().size(), 64u << 10);
  expect_refused(Compression::zstd, zstd_unsized_bomb(),
                 "zstd: the payload inflates past the body limit of 8388608 bytes", 3 * kMiB);
}

TEST(CompressionBomb, ZstdDeclaringOneGibibyteIsRefusedAtOnce) {
  ASSERT_LT(zstd_sized_bomb().size(), 64u << 10);
  expect_refused(Compression::zstd, zstd_sized_bomb(),
                 "zstd: the payload declares 1073741824 bytes, over the body limit of 8388608 bytes", kMiB);
  // 14 bytes that claim 1 GiB: the ratio limit binds first.
  expect_refused(Compression::zstd, wheelrpc::test::zstd_frame_declaring(1u << 30),
                 "zstd: the payload declares 1073741824 bytes, over the ratio limit of 1024:1 (14 bytes in)", kMiB);
}

TEST(CompressionBomb, Lz4DeclaringOneGibibyteIsRefusedAtOnce) {
  const std::string liar = wheelrpc::test::lz4_frame_declaring(kGiB, "x");
  expect_refused(Compression::lz4, liar, "lz4: the payload declares 1073741824 bytes, over the ratio limit", kMiB);
}

TEST(CompressionBomb, Lz4WithoutItsSizeIsCountedAndStoppedAtTheLimit) {
  const std::string bomb = lz4_zeros();
  ASSERT_LT(bomb.size(), 5 * kMiB);
  expect_refused(Compression::lz4, bomb, "lz4: the payload inflates past the body limit of 8388608 bytes", 2 * kMiB);
}

/// 1 GiB of zeros in one LZ4 frame as the lz4 command writes it (4 MiB
/// independent blocks, a content checksum, no content size): the decoder's
/// 4 MiB block buffer is what it fills, so the count stops at what the limit
/// leaves beside it.
std::string lz4_command_zeros() {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max4MB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  LZ4F_cctx* cctx = nullptr;
  EXPECT_FALSE(LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
  std::string buffer(LZ4F_compressBound(kMiB, &prefs) + LZ4F_HEADER_SIZE_MAX, '\0');
  std::string out;
  std::size_t n = LZ4F_compressBegin(cctx, buffer.data(), buffer.size(), &prefs);
  out.append(buffer.data(), n);
  for (std::size_t fed = 0; fed < kGiB; fed += kMiB) {
    n = LZ4F_compressUpdate(cctx, buffer.data(), buffer.size(), zero_chunk().data(), kMiB, nullptr);
    EXPECT_FALSE(LZ4F_isError(n));
    out.append(buffer.data(), n);
  }
  n = LZ4F_compressEnd(cctx, buffer.data(), buffer.size(), nullptr);
  out.append(buffer.data(), n);
  LZ4F_freeCompressionContext(cctx);
  return out;
}

TEST(CompressionBomb, Lz4InFourMiBBlocksIsStoppedWhereTheLimitLeavesRoomForTheBlockBuffer) {
  const std::string bomb = lz4_command_zeros();
  ASSERT_LT(bomb.size(), 5 * kMiB);
  expect_refused(Compression::lz4, bomb,
                 "lz4: the payload inflates past 4194304 bytes; a frame of 4 MiB blocks decodes through a "
                 "4194304-byte block buffer counted against the body limit of 8388608 bytes",
                 4 * kMiB + 2 * kMiB);
}

TEST(CompressionBomb, GzipWithItsTrueSizeIsRefusedAtOnce) {
  ASSERT_LT(gzip_bomb().size(), 2 * kMiB);
  expect_refused(Compression::gzip, gzip_bomb(),
                 "gzip: the payload declares 1073741824 bytes, over the body limit of 8388608 bytes", kMiB);
}

TEST(CompressionBomb, GzipUnderstatingItsSizeStopsAtTheLimit) {
  // ISIZE patched to 4 MiB: 4 MiB are decoded into the output, the rest only
  // counted until it passes the limit.
  std::string liar = gzip_bomb();
  const std::uint32_t isize = 4u << 20;
  for (int i = 0; i < 4; ++i) liar[liar.size() - 4 + i] = static_cast<char>(isize >> (8 * i) & 0xff);
  expect_refused(Compression::gzip, liar, "gzip: the payload inflates past the body limit of 8388608 bytes",
                 4 * kMiB + 2 * kMiB);
}

TEST(CompressionBomb, DeflateIsCountedAndStoppedAtTheLimit) {
  ASSERT_LT(deflate_bomb().size(), 2 * kMiB);
  expect_refused(Compression::deflate, deflate_bomb(),
                 "deflate: the payload inflates past the body limit of 8388608 bytes", kMiB);
}

TEST(CompressionBomb, APayloadAtTheLimitCostsItsSizeOnce) {
  // The legitimate case for comparison: 8 MiB out, allocated once. Under
  // AddressSanitizer its shadow adds an eighth.
#if defined(__SANITIZE_ADDRESS__)
  constexpr std::size_t kShadow = kMaxOutput / 8;
#else
  constexpr std::size_t kShadow = 0;
#endif
  const std::string text = wheelrpc::test::text_like(kMaxOutput);
  for (const Compression c : {Compression::zstd, Compression::lz4, Compression::gzip, Compression::deflate}) {
    std::string in;
    compress(c, text, 0, in);
    DecompressLimits limits;
    limits.max_output = kMaxOutput;
    std::string out;
    boost::system::error_code ec;
    const auto growth = peak_growth([&] { ec = decompress(c, in, limits, out); });
    ASSERT_FALSE(ec) << to_string(c);
    EXPECT_TRUE(out == text) << to_string(c);
    std::printf("[ at limit ] %s: %zu bytes in, %zu out; peak grew by %s\n", std::string(to_string(c)).c_str(),
                in.size(), out.size(), growth ? (std::to_string(*growth >> 10) + " KiB").c_str() : "(not measured)");
    if (growth) {
      EXPECT_LE(*growth, kMaxOutput + kShadow + kMiB) << to_string(c);
    }
  }
}

TEST(CompressionBomb, AFrameOfFourMiBBlocksHoldsItsOutputAndItsBlockBufferWithinTheLimit) {
  // The most a frame of 4 MiB blocks may decode to under 8 MiB, in a frame as
  // the lz4 command writes it (no size: counted first, through the block
  // buffer): output and buffer together within the limit. Under
  // AddressSanitizer the shadow of what was allocated (the output, the
  // context's two 4 MiB buffers) adds an eighth of it.
#if defined(__SANITIZE_ADDRESS__)
  constexpr std::size_t kShadow = 12 * kMiB / 8;
#else
  constexpr std::size_t kShadow = 0;
#endif
  const std::string text = wheelrpc::test::text_like(4 * kMiB);
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max4MB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  std::string in(LZ4F_compressFrameBound(text.size(), &prefs), '\0');
  in.resize(LZ4F_compressFrame(in.data(), in.size(), text.data(), text.size(), &prefs));
  DecompressLimits limits;
  limits.max_output = kMaxOutput;
  std::string out;
  boost::system::error_code ec;
  const auto growth = peak_growth([&] { ec = decompress(Compression::lz4, in, limits, out); });
  ASSERT_FALSE(ec);
  EXPECT_TRUE(out == text);
  std::printf("[ 4 MiB blocks ] lz4: %zu bytes in, %zu out; peak grew by %s\n", in.size(), out.size(),
              growth ? (std::to_string(*growth >> 10) + " KiB").c_str() : "(not measured)");
  if (growth) {
    EXPECT_LE(*growth, kMaxOutput + kShadow + kMiB);
  }
}

}  // namespace
