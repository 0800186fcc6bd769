// The compression codecs: names and sets, round trips of every algorithm at
// every level, the size and ratio limits, and corrupt input of every kind,
// each refused with corrupt_compression and never a crash. Compression bombs
// and the memory they cost: compression_bomb_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <lz4frame.h>
#include <zstd.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/errc.h>

#include "support/compressed_frames.h"
#include "support/payloads.h"

namespace {

using namespace wheelrpc::transport;
using wheelrpc::test::lz4_frame;
using wheelrpc::test::lz4_frame_declaring;
using wheelrpc::test::random_bytes;
using wheelrpc::test::text_like;
using wheelrpc::test::zstd_frame_declaring;
using wheelrpc::test::zstd_unsized;

constexpr Compression kCodecs[] = {Compression::zstd, Compression::lz4, Compression::gzip, Compression::deflate};
constexpr Compression kAll[] = {Compression::identity, Compression::zstd, Compression::lz4, Compression::gzip,
                                Compression::deflate};

std::string compressed(Compression c, std::string_view in, int level = 0) {
  std::string out;
  compress(c, in, level, out);
  return out;
}

int max_level(Compression c) {
  switch (c) {
    case Compression::zstd: return ZSTD_maxCLevel();
    case Compression::lz4: return 12;
    default: return 9;
  }
}

struct Decoded {
  boost::system::error_code ec;
  std::string out;
  std::string why;
};

Decoded decoded(Compression c, std::string_view in, const DecompressLimits& limits = {}) {
  Decoded d;
  d.out = "stale";  // replaced on success, cleared on error
  d.ec = decompress(c, in, limits, d.out, &d.why);
  return d;
}

/// Expects corrupt_compression with an empty output and a message naming the algorithm.
void expect_corrupt(Compression c, std::string_view in, std::string_view what) {
  SCOPED_TRACE(std::string(to_string(c)) + ", " + std::string(what));
  const Decoded d = decoded(c, in);
  EXPECT_EQ(d.ec, errc::corrupt_compression) << d.why;
  EXPECT_TRUE(d.out.empty());
  EXPECT_TRUE(d.why.starts_with(std::string(to_string(c)) + ": ")) << d.why;
}

TEST(CompressionNames, RoundTripThroughTheirNames) {
  for (const Compression c : kAll) EXPECT_EQ(parse_compression(to_string(c)), c);
  EXPECT_EQ(to_string(Compression::deflate), "deflate");
  EXPECT_EQ(to_string(static_cast<Compression>(9)), "unknown");
  EXPECT_FALSE(parse_compression("ZSTD"));
  EXPECT_FALSE(parse_compression(" zstd"));
  EXPECT_FALSE(parse_compression("none"));
  EXPECT_FALSE(parse_compression(""));
}

TEST(CompressionNames, SpecsCarryAnOptionalSignedLevel) {
  Compression c = Compression::identity;
  int level = 99;
  ASSERT_TRUE(parse_compression_spec("zstd", c, level));
  EXPECT_EQ(c, Compression::zstd);
  EXPECT_EQ(level, 0);
  ASSERT_TRUE(parse_compression_spec("zstd:-5", c, level));
  EXPECT_EQ(level, -5);
  ASSERT_TRUE(parse_compression_spec("gzip:9", c, level));
  EXPECT_EQ(c, Compression::gzip);
  EXPECT_EQ(level, 9);
  ASSERT_TRUE(parse_compression_spec("none", c, level));
  EXPECT_EQ(c, Compression::identity);
  EXPECT_EQ(level, 0);
  for (const char* bad :
       {"", "zstd:", "zstd:x", "zstd:3x", "zstd:+3", "Zstd", "none:", ":3", "brotli:3", "zstd:99999999999", "lz4 :1"}) {
    c = Compression::lz4;
    level = 7;
    EXPECT_FALSE(parse_compression_spec(bad, c, level)) << bad;
    EXPECT_EQ(c, Compression::lz4) << bad;
    EXPECT_EQ(level, 7) << bad;
  }
}

TEST(CompressionNames, SetsHoldAlgorithmsAndImplyIdentity) {
  static_assert(CompressionSet().empty());
  static_assert(CompressionSet().contains(Compression::identity));
  static_assert(CompressionSet::all().bits() == 0b1'1110);
  static_assert(CompressionSet().insert(Compression::identity).empty());
  static_assert(CompressionSet::from_bits(0xff) == CompressionSet::all());
  static_assert(!CompressionSet::all().erase(Compression::lz4).contains(Compression::lz4));
  static_assert(CompressionSet::all().erase(Compression::identity) == CompressionSet::all());

  EXPECT_EQ(CompressionSet::all().to_string(), "zstd,lz4,gzip,deflate");
  EXPECT_EQ(CompressionSet().to_string(), "");
  CompressionSet set;
  set.insert(Compression::deflate).insert(Compression::zstd);
  EXPECT_EQ(set.to_string(), "zstd,deflate");
  EXPECT_FALSE(set.contains(Compression::gzip));
  EXPECT_FALSE(set.contains(static_cast<Compression>(7)));
  EXPECT_EQ(CompressionSet::parse(set.to_string()), set);
  EXPECT_EQ(CompressionSet::parse(CompressionSet::all().to_string()), CompressionSet::all());
  EXPECT_EQ(CompressionSet::from_bits(CompressionSet::all().bits()), CompressionSet::all());
}

TEST(CompressionNames, ParsingSkipsWhatItDoesNotKnow) {
  const CompressionSet set = CompressionSet::parse(" gzip ,br, identity,,\tlz4\t,zstd:3,Deflate,");
  EXPECT_EQ(set.to_string(), "lz4,gzip");
  EXPECT_TRUE(CompressionSet::parse("").empty());
  EXPECT_TRUE(CompressionSet::parse(",,identity, ,").empty());
}

TEST(CompressionRoundTrip, EveryAlgorithmAtEveryLevelAndSize) {
  const std::vector<std::string> inputs = {"x", text_like(1024), text_like(1u << 20), random_bytes(1u << 20)};
  for (const Compression c : kAll) {
    std::vector<int> levels = {0, 1, max_level(c), 1000, -1000};
    if (c == Compression::zstd) levels.push_back(-5);
    for (const int level : levels) {
      for (const std::string& in : inputs) {
        SCOPED_TRACE(std::string(to_string(c)) + " level " + std::to_string(level) + ", " + std::to_string(in.size()) +
                     " bytes");
        std::string out = "kept:";
        compress(c, in, level, out);
        ASSERT_TRUE(out.starts_with("kept:"));
        const Decoded d = decoded(c, std::string_view(out).substr(5));
        ASSERT_FALSE(d.ec) << d.why;
        EXPECT_TRUE(d.out == in);
      }
    }
  }
}

TEST(CompressionRoundTrip, EmptyPayloadsAndPayloadsWithoutTheirSize) {
  for (const Compression c : kAll) {
    const Decoded d = decoded(c, compressed(c, ""));
    EXPECT_FALSE(d.ec) << d.why;
    EXPECT_TRUE(d.out.empty());
  }
  const std::string text = text_like(300'000);
  // What other encoders may send: no content size (the counting pass), lz4
  // blocks of every accepted size, several zstd frames, a skippable frame.
  for (const std::string& in : {zstd_unsized(text), zstd_unsized(text, 10), compressed(Compression::zstd, text)}) {
    EXPECT_TRUE(decoded(Compression::zstd, in).out == text);
  }
  for (const auto block : {LZ4F_default, LZ4F_max64KB, LZ4F_max256KB, LZ4F_max1MB, LZ4F_max4MB}) {
    for (const bool sized : {false, true}) {
      EXPECT_TRUE(decoded(Compression::lz4, lz4_frame(text, block, sized)).out == text) << block << sized;
    }
  }
  const std::string two = compressed(Compression::zstd, "first ") + zstd_unsized("second");
  EXPECT_EQ(decoded(Compression::zstd, two).out, "first second");
  const std::string skippable(
      "\x50\x2a\x4d\x18\x03\x00\x00\x00"
      "abc",
      11);
  EXPECT_EQ(decoded(Compression::zstd, skippable + compressed(Compression::zstd, "after")).out, "after");
}

TEST(CompressionLimits, OutputExactlyAtTheBodyLimitPassesAndOneByteOverFails) {
  const std::string text = text_like(65536);
  std::vector<std::pair<Compression, std::string>> payloads;
  for (const Compression c : kAll) payloads.emplace_back(c, compressed(c, text));
  payloads.emplace_back(Compression::zstd, zstd_unsized(text));
  payloads.emplace_back(Compression::lz4, lz4_frame(text, LZ4F_max64KB, false));
  for (const auto& [c, in] : payloads) {
    SCOPED_TRACE(std::string(to_string(c)) + ", " + std::to_string(in.size()) + " bytes in");
    DecompressLimits limits;
    limits.max_output = text.size();
    const Decoded at = decoded(c, in, limits);
    ASSERT_FALSE(at.ec) << at.why;
    EXPECT_TRUE(at.out == text);
    limits.max_output = text.size() - 1;
    const Decoded over = decoded(c, in, limits);
    EXPECT_EQ(over.ec, errc::decompressed_too_large);
    EXPECT_TRUE(over.out.empty());
    EXPECT_NE(over.why.find("the body limit of 65535 bytes"), std::string::npos) << over.why;
  }
}

TEST(CompressionLimits, TheRatioLimitBindsOnlyPastTheFloor) {
  const std::string zeros(4u << 20, '\0');
  DecompressLimits limits;
  limits.max_output = 64u << 20;
  limits.max_ratio = 100;
  limits.ratio_floor = 1u << 20;
  for (const auto& [c, in] : std::vector<std::pair<Compression, std::string>>{
           {Compression::zstd, compressed(Compression::zstd, zeros)},
           {Compression::zstd, zstd_unsized(zeros)},
           {Compression::lz4, compressed(Compression::lz4, zeros)},
           {Compression::gzip, compressed(Compression::gzip, zeros)},
           {Compression::deflate, compressed(Compression::deflate, zeros)}}) {
    SCOPED_TRACE(std::string(to_string(c)) + ", " + std::to_string(in.size()) + " bytes in");
    ASSERT_GT(zeros.size(), in.size() * 100);
    const Decoded d = decoded(c, in, limits);
    EXPECT_EQ(d.ec, errc::decompressed_too_large);
    const std::string expected = "the ratio limit of 100:1 (" + std::to_string(in.size()) + " bytes in)";
    EXPECT_NE(d.why.find(expected), std::string::npos) << d.why;
    // Below the floor any ratio passes.
    const std::string small(limits.ratio_floor, '\0');
    EXPECT_TRUE(decoded(c, compressed(c, small), limits).out == small);
    // max_ratio 0: no ratio limit.
    DecompressLimits unlimited = limits;
    unlimited.max_ratio = 0;
    EXPECT_TRUE(decoded(c, in, unlimited).out == zeros);
  }
}

TEST(CompressionLimits, AKibibyteMayNotInflateFarPastTheFloorWithTheDefaults) {
  // ~1 KiB in (incompressible bytes and 2 MiB of zeros), 2 MiB out: past the
  // 1 MiB floor at ~2000:1, over the default 1024:1.
  const std::string payload = random_bytes(900) + std::string(2u << 20, '\0');
  for (const std::string& in : {compressed(Compression::zstd, payload), zstd_unsized(payload)}) {
    ASSERT_LT(in.size() * 1024, payload.size());
    const Decoded d = decoded(Compression::zstd, in);
    EXPECT_EQ(d.ec, errc::decompressed_too_large);
    EXPECT_NE(d.why.find("the ratio limit of 1024:1 (" + std::to_string(in.size()) + " bytes in)"), std::string::npos)
        << d.why;
    DecompressLimits unlimited;
    unlimited.max_ratio = 0;
    EXPECT_TRUE(decoded(Compression::zstd, in, unlimited).out == payload);
  }
}

TEST(CompressionLimits, AZstdFrameWithoutItsSizeMayNeedAWindowOfOneMebibyteAtMost) {
  // Streamed without a size, the decoder must hold the frame's window: 1 MiB
  // is accepted, 2 MiB (what zstd's level 3 picks for a large input) is not,
  // even with the payload far below the body limit.
  const std::string text = text_like(3u << 20);
  EXPECT_TRUE(decoded(Compression::zstd, zstd_unsized(text, 20)).out == text);
  const Decoded d = decoded(Compression::zstd, zstd_unsized(text, 21));
  EXPECT_EQ(d.ec, errc::decompressed_too_large);
  EXPECT_EQ(d.why, "zstd: a frame without its content size needs a window over 1 MiB (1048576 bytes)");
  // With its size the frame is decoded in one shot into the output: no window.
  std::string sized;
  compress(Compression::zstd, text, 19, sized);
  EXPECT_TRUE(decoded(Compression::zstd, sized).out == text);
}

TEST(CompressionLimits, IdentityCopiesWithinTheBodyLimit) {
  const std::string in = text_like(100);
  DecompressLimits limits;
  limits.max_output = 100;
  EXPECT_EQ(decoded(Compression::identity, in, limits).out, in);
  EXPECT_EQ(compressed(Compression::identity, in), in);
  limits.max_output = 99;
  const Decoded d = decoded(Compression::identity, in, limits);
  EXPECT_EQ(d.ec, errc::decompressed_too_large);
  EXPECT_TRUE(d.out.empty());
  EXPECT_NE(d.why.find("the body limit of 99 bytes"), std::string::npos) << d.why;
  EXPECT_FALSE(decoded(Compression::identity, "").ec);
}

TEST(CompressionLimits, ErrorsNeedNoMessageAndSuccessLeavesItAlone) {
  std::string out;
  EXPECT_EQ(decompress(Compression::zstd, "nope", {}, out), errc::corrupt_compression);
  DecompressLimits tiny;
  tiny.max_output = 10;
  EXPECT_EQ(decompress(Compression::gzip, compressed(Compression::gzip, text_like(100)), tiny, out),
            errc::decompressed_too_large);
  std::string why = "untouched";
  EXPECT_FALSE(decompress(Compression::lz4, compressed(Compression::lz4, "hi"), {}, out, &why));
  EXPECT_EQ(out, "hi");
  EXPECT_EQ(why, "untouched");
  EXPECT_EQ(boost::system::error_code(errc::decompressed_too_large).category().name(),
            std::string("wheelrpc.transport"));
}

TEST(CompressionCorrupt, EveryKindOfBadInputIsRefused) {
  const std::string payload = text_like(4096) + random_bytes(1024);
  for (const Compression c : kCodecs) {
    const std::string good = compressed(c, payload);
    ASSERT_EQ(decoded(c, good).out, payload);
    expect_corrupt(c, "", "empty");
    expect_corrupt(c, random_bytes(1000, 7), "random bytes");
    expect_corrupt(c, std::string_view(good).substr(0, good.size() / 2), "half");
    expect_corrupt(c, std::string_view(good).substr(0, good.size() - 1), "one byte short");
    std::string flipped = good;
    flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x55);
    expect_corrupt(c, flipped, "a flipped byte");
    expect_corrupt(c, good + "garbage!", "trailing garbage");
    // zstd takes frames back to back; the others one frame or member.
    if (c == Compression::zstd) {
      EXPECT_TRUE(decoded(c, good + good).out == payload + payload);
    } else {
      expect_corrupt(c, good + good, "two of them");
    }
  }
}

TEST(CompressionCorrupt, OneAlgorithmsPayloadIsNoOtherAlgorithms) {
  const std::string payload = text_like(3000);
  for (const Compression from : kCodecs) {
    const std::string in = compressed(from, payload);
    for (const Compression as : kCodecs) {
      if (as != from) expect_corrupt(as, in, "compressed with " + std::string(to_string(from)));
    }
  }
}

TEST(CompressionCorrupt, LibraryMessagesAndOurOwnSayWhatIsWrong) {
  EXPECT_EQ(decoded(Compression::zstd, "not zstd at all").why, "zstd: Unknown frame descriptor");
  EXPECT_EQ(decoded(Compression::gzip, "not gzip at all").why, "gzip: incorrect header check");
  EXPECT_EQ(decoded(Compression::deflate, "").why, "deflate: empty input");
  const Decoded unknown = decoded(static_cast<Compression>(9), "x");
  EXPECT_EQ(unknown.ec, errc::corrupt_compression);
  EXPECT_EQ(unknown.why, "compression 9: not known to this build");
  // zstd frames of the legacy formats (v0.2 to v0.7 magic numbers).
  expect_corrupt(Compression::zstd, std::string("\x27\xb5\x2f\xfd", 4) + random_bytes(64), "legacy");
  // A gzip trailer whose ISIZE no deflate data of that length can reach.
  std::string gz = compressed(Compression::gzip, "hello");
  gz[gz.size() - 1] = '\x7f';
  const Decoded impossible = decoded(Compression::gzip, gz);
  EXPECT_EQ(impossible.ec, errc::corrupt_compression);
  EXPECT_NE(impossible.why.find("more than"), std::string::npos) << impossible.why;
}

constexpr std::size_t kMiB = 1u << 20;

/// An LZ4 frame as the lz4 command (1.9.4) writes one by default (`lz4 FILE`):
/// 4 MiB independent blocks, a content checksum, no content size, no block
/// checksums. Made here with liblz4's frame API, as the command makes it
/// (LZ4F_compressFrame, like the command, picks smaller blocks for an input
/// of 1 MiB or less).
std::string lz4_command_frame(std::string_view in) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max4MB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  prefs.frameInfo.contentSize = 0;
  std::string out(LZ4F_compressFrameBound(in.size(), &prefs), '\0');
  const std::size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
  EXPECT_FALSE(LZ4F_isError(n)) << LZ4F_getErrorName(n);
  out.resize(n);
  return out;
}

TEST(CompressionLz4, AFrameAsTheLz4CommandWritesItDecodes) {
  const std::string text = text_like(3 * kMiB + 12345);
  const std::string frame = lz4_command_frame(text);
  // The header bytes the command writes: FLG 0x64 (version 1, independent
  // blocks, content checksum), BD 0x70 (4 MiB blocks).
  ASSERT_GT(frame.size(), 6u);
  EXPECT_EQ(frame[4], '\x64');
  EXPECT_EQ(frame[5], '\x70');
  const Decoded d = decoded(Compression::lz4, frame);
  ASSERT_FALSE(d.ec) << d.why;
  EXPECT_TRUE(d.out == text);
  // With its size, and in linked blocks, too.
  for (const bool sized : {false, true}) {
    const Decoded linked = decoded(Compression::lz4, lz4_frame(text, LZ4F_max4MB, sized));
    ASSERT_FALSE(linked.ec) << linked.why;
    EXPECT_TRUE(linked.out == text) << sized;
  }
}

TEST(CompressionLz4, AFrameOfFourMiBBlocksCountsItsBlockBufferAgainstTheBodyLimit) {
  // Under the default 8 MiB: the payload may take what a 4 MiB block buffer
  // leaves (4 MiB; 128 KiB less for linked blocks, whose buffer is larger).
  const std::string at = text_like(4 * kMiB);
  const std::string over = text_like(4 * kMiB + 1);
  EXPECT_TRUE(decoded(Compression::lz4, lz4_command_frame(at)).out == at);
  const std::string budget =
      "; a frame of 4 MiB blocks decodes through a 4194304-byte block buffer counted against the body limit of "
      "8388608 bytes, which leaves 4194304 bytes for the payload";
  const Decoded unsized = decoded(Compression::lz4, lz4_command_frame(over));
  EXPECT_EQ(unsized.ec, errc::decompressed_too_large) << unsized.why;
  EXPECT_EQ(unsized.why, "lz4: the payload inflates past 4194304 bytes" + budget);
  EXPECT_TRUE(unsized.out.empty());
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max4MB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentSize = over.size();
  std::string sized(LZ4F_compressFrameBound(over.size(), &prefs), '\0');
  sized.resize(LZ4F_compressFrame(sized.data(), sized.size(), over.data(), over.size(), &prefs));
  const Decoded declared = decoded(Compression::lz4, sized);
  EXPECT_EQ(declared.ec, errc::decompressed_too_large) << declared.why;
  EXPECT_EQ(declared.why, "lz4: the payload declares 4194305 bytes" + budget);
  const Decoded linked = decoded(Compression::lz4, lz4_frame(at, LZ4F_max4MB, true));
  EXPECT_EQ(linked.ec, errc::decompressed_too_large) << linked.why;
  EXPECT_NE(linked.why.find("4325376-byte block buffer"), std::string::npos) << linked.why;
  // A body limit with no room beside the buffer (a stream's 4 MiB) takes no
  // payload in 4 MiB blocks; one in 1 MiB blocks is as before, up to the limit.
  DecompressLimits streams;
  streams.max_output = 4 * kMiB;
  // (lz4_frame keeps 4 MiB blocks for 5 bytes; the command, like LZ4F_compressFrame, would pick 64 KiB.)
  const Decoded small = decoded(Compression::lz4, lz4_frame("hello", LZ4F_max4MB, false), streams);
  EXPECT_EQ(small.ec, errc::decompressed_too_large) << small.why;
  EXPECT_NE(small.why.find("which leaves 0 bytes for the payload"), std::string::npos) << small.why;
  EXPECT_TRUE(decoded(Compression::lz4, lz4_frame(at, LZ4F_max1MB, false), streams).out == at);
}

TEST(CompressionCorrupt, DeclaredSizesThatLieAreCaught) {
  // zstd: a frame with a 1-byte raw block that declares 2 bytes; one whose
  // 2-byte block is over its declared 1 byte.
  expect_corrupt(Compression::zstd, zstd_frame_declaring(2), "declares more than it holds");
  std::string over = zstd_frame_declaring(1);
  over[10] = '\x11';  // the block: 2 bytes
  expect_corrupt(Compression::zstd, over + "y", "declares less than it holds");
  // lz4: one byte more, one byte less than the frame holds.
  const std::string text = text_like(100'000);
  EXPECT_TRUE(decoded(Compression::lz4, lz4_frame_declaring(text.size(), text)).out == text);
  expect_corrupt(Compression::lz4, lz4_frame_declaring(text.size() + 1, text), "lz4 declares more");
  expect_corrupt(Compression::lz4, lz4_frame_declaring(text.size() - 1, text), "lz4 declares less");
  // gzip: ISIZE one more, one less than the member inflates to.
  for (const int delta : {1, -1}) {
    std::string gz = compressed(Compression::gzip, text_like(5000));
    gz[gz.size() - 4] = static_cast<char>(gz[gz.size() - 4] + delta);
    expect_corrupt(Compression::gzip, gz, "ISIZE " + std::to_string(delta));
  }
}

}  // namespace
