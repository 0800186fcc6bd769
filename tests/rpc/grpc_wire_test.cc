// grpc_wire.h: the gRPC wire's details free of any connection (grpc-timeout,
// grpc-message's percent-encoding, base64 of -bin metadata, the statuses
// both ways, grpc-encoding names, and the 5-byte message prefix).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "wire/grpc/grpc_wire.h"
#include "wire/grpc/http2_session.h"
#include "support/h2_frames.h"

namespace {

using namespace std::chrono_literals;
using wheelrpc::rpc::Status;
using wheelrpc::rpc::StatusCode;
using wheelrpc::transport::Compression;
namespace d = wheelrpc::rpc::detail;

// ---- grpc-timeout

TEST(GrpcWireTimeout, ParsesEveryUnit) {
  EXPECT_EQ(d::parse_grpc_timeout("2H"), std::chrono::milliseconds(2 * 3'600'000));
  EXPECT_EQ(d::parse_grpc_timeout("3M"), std::chrono::milliseconds(3 * 60'000));
  EXPECT_EQ(d::parse_grpc_timeout("4S"), 4000ms);
  EXPECT_EQ(d::parse_grpc_timeout("5m"), 5ms);
  EXPECT_EQ(d::parse_grpc_timeout("12345678m"), 12345678ms);
  EXPECT_EQ(d::parse_grpc_timeout("0m"), 0ms);
}

TEST(GrpcWireTimeout, BelowAMillisecondRoundsUpNeverToNothing) {
  EXPECT_EQ(d::parse_grpc_timeout("1u"), 1ms);
  EXPECT_EQ(d::parse_grpc_timeout("1000u"), 1ms);
  EXPECT_EQ(d::parse_grpc_timeout("1001u"), 2ms);
  EXPECT_EQ(d::parse_grpc_timeout("1n"), 1ms);
  EXPECT_EQ(d::parse_grpc_timeout("1000000n"), 1ms);
  EXPECT_EQ(d::parse_grpc_timeout("1000001n"), 2ms);
  EXPECT_EQ(d::parse_grpc_timeout("0n"), 0ms);
}

TEST(GrpcWireTimeout, TheLargestValueOfEachUnitDoesNotOverflow) {
  EXPECT_EQ(d::parse_grpc_timeout("99999999H"), std::chrono::milliseconds(std::int64_t{99999999} * 3'600'000));
  EXPECT_EQ(d::parse_grpc_timeout("99999999M"), std::chrono::milliseconds(std::int64_t{99999999} * 60'000));
  EXPECT_EQ(d::parse_grpc_timeout("99999999S"), std::chrono::milliseconds(std::int64_t{99999999} * 1000));
  EXPECT_EQ(d::parse_grpc_timeout("99999999n"), 100ms);
  for (const char* v : {"99999999H", "99999999M", "99999999S", "99999999m", "99999999u", "99999999n"}) {
    const auto t = d::parse_grpc_timeout(v);
    ASSERT_TRUE(t) << v;
    EXPECT_GE(t->count(), 0) << v;
  }
}

TEST(GrpcWireTimeout, RejectsMalformedValues) {
  for (const char* v : {"", "m", "1", "S", "1x", "1h", "-1m", "+1m", "1.5S", " 1m", "1m ", "1 m", "123456789m", "0x10m",
                        "1mm", "１m"}) {
    EXPECT_FALSE(d::parse_grpc_timeout(v)) << "'" << v << "'";
  }
}

TEST(GrpcWireTimeout, FormatsMillisecondsWhileTheyFitInEightDigitsThenLargerUnitsRoundedUp) {
  EXPECT_EQ(d::format_grpc_timeout(1ms), "1m");
  EXPECT_EQ(d::format_grpc_timeout(0ms), "1m");  // at least 1 ms: never "no time at all"
  EXPECT_EQ(d::format_grpc_timeout(-5ms), "1m");
  EXPECT_EQ(d::format_grpc_timeout(99'999'999ms), "99999999m");
  EXPECT_EQ(d::format_grpc_timeout(100'000'000ms), "100000S");
  EXPECT_EQ(d::format_grpc_timeout(100'000'001ms), "100001S");
  EXPECT_EQ(d::format_grpc_timeout(std::chrono::milliseconds(std::int64_t{99'999'999} * 1000 + 1)), "1666667M");
  EXPECT_EQ(d::format_grpc_timeout(std::chrono::hours(24 * 365 * 20000)), "99999999H");
  EXPECT_EQ(d::format_grpc_timeout(std::chrono::milliseconds::max()), "99999999H");
}

TEST(GrpcWireTimeout, AFormattedBudgetParsesBackToAtLeastItself) {
  for (std::int64_t ms : {std::int64_t{1}, std::int64_t{999}, std::int64_t{99'999'999}, std::int64_t{100'000'000},
                          std::int64_t{123'456'789'012}, std::int64_t{9'000'000'000'000}}) {
    const auto text = d::format_grpc_timeout(std::chrono::milliseconds(ms));
    const auto back = d::parse_grpc_timeout(text);
    ASSERT_TRUE(back) << text;
    EXPECT_GE(back->count(), ms) << text;
    EXPECT_LE(text.size(), 9u) << text;
  }
}

// ---- grpc-message

constexpr std::string_view kSpecialMessage =
    "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP \U0001F608\t\n";

TEST(GrpcWireMessage, PercentEncodesTheInteropSpecialMessage) {
  const std::string encoded = d::percent_encode(kSpecialMessage);
  EXPECT_EQ(encoded, "%09%0Atest with whitespace%0D%0Aand Unicode BMP %E2%98%BA and non-BMP %F0%9F%98%88%09%0A");
  EXPECT_EQ(d::percent_decode(encoded), kSpecialMessage);
}

TEST(GrpcWireMessage, EncodesPercentAndEverythingOutsidePrintableAscii) {
  EXPECT_EQ(d::percent_encode("100% sure"), "100%25 sure");
  EXPECT_EQ(d::percent_encode(std::string("\0\x1f\x7f\xff", 4)), "%00%1F%7F%FF");
  EXPECT_EQ(d::percent_encode(" ~"), " ~");
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const auto encoded = d::percent_encode(all);
  for (unsigned char c : encoded) {
    EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << int(c);
  }
  EXPECT_EQ(d::percent_decode(encoded), all);
}

TEST(GrpcWireMessage, DecodingKeepsMalformedEscapesAsTheyAre) {
  EXPECT_EQ(d::percent_decode("%"), "%");
  EXPECT_EQ(d::percent_decode("100%"), "100%");
  EXPECT_EQ(d::percent_decode("a%4"), "a%4");
  EXPECT_EQ(d::percent_decode("%zz%4g"), "%zz%4g");
  EXPECT_EQ(d::percent_decode("%e2%98%ba"), "\u263A");  // lower-case hex is read too
  EXPECT_EQ(d::percent_decode("%41%"), "A%");
}

// ---- base64 (-bin metadata)

TEST(GrpcWireBase64, EncodesWithPadding) {
  EXPECT_EQ(d::base64_encode(""), "");
  EXPECT_EQ(d::base64_encode("f"), "Zg==");
  EXPECT_EQ(d::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(d::base64_encode("foo"), "Zm9v");
  EXPECT_EQ(d::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(d::base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(GrpcWireBase64, DecodesPaddedAndUnpadded) {
  std::string out;
  for (auto [text, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"Zg==", "f"}, {"Zg", "f"}, {"Zm8=", "fo"}, {"Zm8", "fo"}, {"Zm9v", "foo"}, {"", ""}}) {
    ASSERT_TRUE(d::base64_decode(text, out)) << text;
    EXPECT_EQ(out, bytes) << text;
  }
  ASSERT_TRUE(d::base64_decode("-_4A", out));  // the URL-safe alphabet
  EXPECT_EQ(out, std::string("\xfb\xfe\x00", 3));
}

TEST(GrpcWireBase64, RejectsCharactersOutsideTheAlphabetAndALoneTrailingCharacter) {
  std::string out;
  EXPECT_FALSE(d::base64_decode("Zm9v!", out));
  EXPECT_FALSE(d::base64_decode("Zm 9v", out));
  EXPECT_FALSE(d::base64_decode("Zg==Zg", out));
  EXPECT_FALSE(d::base64_decode("Z", out));
  EXPECT_FALSE(d::base64_decode("Zm9vY", out));
}

TEST(GrpcWireBase64, EveryByteValueRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (std::size_t n = 0; n <= 5; ++n) {
    const std::string bytes = all.substr(0, all.size() - n);
    std::string out;
    const std::string text = d::base64_encode(bytes);
    ASSERT_TRUE(d::base64_decode(text, out));
    EXPECT_EQ(out, bytes);
    std::string unpadded = text;
    while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
    ASSERT_TRUE(d::base64_decode(unpadded, out));
    EXPECT_EQ(out, bytes);
  }
}

TEST(GrpcWireHeaders, ReservedHeadersAndMetadataKeys) {
  for (const char* h : {":path", "content-type", "te", "user-agent", "grpc-timeout", "grpc-status", "grpc-encoding"}) {
    EXPECT_TRUE(d::is_reserved_header(h)) << h;
  }
  EXPECT_FALSE(d::is_reserved_header("grpc-status-details-bin"));
  EXPECT_FALSE(d::is_reserved_header("x-user"));
  EXPECT_TRUE(d::valid_metadata_key("x-user_1.a"));
  EXPECT_FALSE(d::valid_metadata_key("X-User"));
  EXPECT_FALSE(d::valid_metadata_key("x user"));
  EXPECT_FALSE(d::valid_metadata_key(""));
  EXPECT_TRUE(d::is_binary_key("trace-bin"));
  EXPECT_FALSE(d::is_binary_key("-bin"));
  EXPECT_FALSE(d::is_binary_key("binary"));
}

// ---- statuses

TEST(GrpcWireStatus, NativeStatusesMapToGrpcCodes) {
  EXPECT_EQ(d::grpc_code_of(Status::ok), StatusCode::ok);
  EXPECT_EQ(d::grpc_code_of(Status::server_timeout), StatusCode::deadline_exceeded);
  EXPECT_EQ(d::grpc_code_of(Status::method_not_found), StatusCode::unimplemented);
  EXPECT_EQ(d::grpc_code_of(Status::bad_request), StatusCode::invalid_argument);
  EXPECT_EQ(d::grpc_code_of(Status::server_error), StatusCode::unknown);
  EXPECT_EQ(d::grpc_code_of(Status::overloaded), StatusCode::resource_exhausted);
  EXPECT_EQ(d::grpc_code_of(Status::shutting_down), StatusCode::unavailable);
  for (int c = 0; c < wheelrpc::rpc::kStatusCodes; ++c) {
    const auto status = static_cast<Status>(static_cast<int>(Status::first_code) + c);
    EXPECT_EQ(static_cast<int>(d::grpc_code_of(status)), c);
  }
}

TEST(GrpcWireStatus, GrpcCodesMapToNativeStatusesAndBack) {
  EXPECT_EQ(d::status_of_grpc(0), Status::ok);
  EXPECT_EQ(d::status_of_grpc(4), Status::server_timeout);
  EXPECT_EQ(d::status_of_grpc(12), Status::method_not_found);
  EXPECT_EQ(d::status_of_grpc(8), Status::overloaded);
  EXPECT_EQ(d::status_of_grpc(5), static_cast<Status>(static_cast<int>(Status::first_code) + 5));
  for (int c = 0; c < wheelrpc::rpc::kStatusCodes; ++c) {
    EXPECT_EQ(static_cast<int>(d::grpc_code_of(d::status_of_grpc(c))), c) << c;
  }
  // Out of range: UNKNOWN.
  for (int c : {-1, 17, 99, 1 << 30}) {
    EXPECT_EQ(d::grpc_code_of(d::status_of_grpc(c)), StatusCode::unknown) << c;
  }
}

// ---- grpc-encoding, grpc-accept-encoding

TEST(GrpcWireEncoding, NamesBothWays) {
  EXPECT_EQ(d::parse_grpc_encoding("identity"), Compression::identity);
  EXPECT_EQ(d::parse_grpc_encoding("gzip"), Compression::gzip);
  EXPECT_EQ(d::parse_grpc_encoding("deflate"), Compression::deflate);
  for (const char* n : {"zstd", "lz4", "snappy", "GZIP", "", " gzip"}) EXPECT_FALSE(d::parse_grpc_encoding(n)) << n;
  EXPECT_EQ(d::grpc_encoding_name(Compression::gzip), "gzip");
  EXPECT_EQ(d::grpc_encoding_name(Compression::deflate), "deflate");
  EXPECT_EQ(d::grpc_encoding_name(Compression::zstd), "identity");
  EXPECT_EQ(d::grpc_encoding_name(Compression::lz4), "identity");
}

TEST(GrpcWireEncoding, AcceptEncodingIsReadAsASetWithSpacesAndUnknownNames) {
  const auto both = d::parse_grpc_accept_encoding("gzip, deflate");
  EXPECT_TRUE(both.contains(Compression::gzip));
  EXPECT_TRUE(both.contains(Compression::deflate));
  EXPECT_TRUE(both.contains(Compression::identity));
  const auto gzip = d::parse_grpc_accept_encoding(" identity ,gzip ,snappy,,zstd");
  EXPECT_TRUE(gzip.contains(Compression::gzip));
  EXPECT_FALSE(gzip.contains(Compression::deflate));
  EXPECT_FALSE(gzip.contains(Compression::zstd));  // not a gRPC name
  EXPECT_TRUE(d::parse_grpc_accept_encoding("").empty());
  EXPECT_TRUE(d::parse_grpc_accept_encoding("br,snappy").empty());
  EXPECT_EQ(d::grpc_accept_encoding(wheelrpc::transport::CompressionSet::all()), "identity,gzip,deflate");
  EXPECT_EQ(d::grpc_accept_encoding({}), "identity");
}

// ---- messages

std::string prefixed(std::string_view body, bool compressed = false) {
  std::string out;
  d::append_grpc_prefix(out, compressed, body.size());
  out.append(body);
  return out;
}

TEST(GrpcMessageReader, AppendsThePrefix) {
  std::string out;
  d::append_grpc_prefix(out, true, 0x01020304);
  EXPECT_EQ(out, std::string("\x01\x01\x02\x03\x04", 5));
}

TEST(GrpcMessageReader, MessagesSplitAtEveryByteBoundaryComeOutWhole) {
  const std::string wire = prefixed("hello") + prefixed("") + prefixed(std::string(300, 'z'), true) + prefixed("!");
  const std::vector<std::pair<std::string, bool>> want{
      {"hello", false}, {"", false}, {std::string(300, 'z'), true}, {"!", false}};
  for (std::size_t cut1 = 0; cut1 <= wire.size(); ++cut1) {
    for (std::size_t cut2 : {cut1, std::min(wire.size(), cut1 + 1), std::min(wire.size(), cut1 + 7)}) {
      d::GrpcMessageReader reader(1000);
      std::vector<std::pair<std::string, bool>> got;
      const auto take = [&](std::string& m, bool c) { got.emplace_back(m, c); };
      ASSERT_TRUE(reader.feed(std::string_view(wire).substr(0, cut1), take));
      ASSERT_TRUE(reader.feed(std::string_view(wire).substr(cut1, cut2 - cut1), take));
      ASSERT_TRUE(reader.feed(std::string_view(wire).substr(cut2), take));
      EXPECT_EQ(got, want) << "cut at " << cut1 << " and " << cut2;
      EXPECT_TRUE(reader.at_boundary());
    }
  }
}

TEST(GrpcMessageReader, ByteByByteKnowsWhenItIsInsideAMessage) {
  const std::string wire = prefixed("abc");
  d::GrpcMessageReader reader(10);
  int messages = 0;
  EXPECT_TRUE(reader.at_boundary());
  for (std::size_t i = 0; i < wire.size(); ++i) {
    ASSERT_TRUE(reader.feed(wire.substr(i, 1), [&](std::string& m, bool) {
      EXPECT_EQ(m, "abc");
      ++messages;
    }));
    EXPECT_EQ(reader.at_boundary(), i + 1 == wire.size()) << i;
  }
  EXPECT_EQ(messages, 1);
}

TEST(GrpcMessageReader, APrefixOverTheLimitIsRejectedBeforeAnythingIsBuffered) {
  d::GrpcMessageReader reader(100);
  bool called = false;
  const auto take = [&](std::string&, bool) { called = true; };
  EXPECT_TRUE(reader.feed(prefixed(std::string(100, 'x')), take));  // exactly the limit: fine
  EXPECT_TRUE(called);
  called = false;
  std::string huge;
  d::append_grpc_prefix(huge, false, 0xffffffffu);
  EXPECT_FALSE(reader.feed(huge, take));  // the prefix alone: no body byte came
  EXPECT_FALSE(called);
  EXPECT_EQ(reader.buffered(), 0u);
  EXPECT_NE(reader.error().find("exceeds"), std::string::npos) << reader.error();
  // What it is, said by its code (never read off the message's text).
  EXPECT_EQ(reader.error_code(), StatusCode::resource_exhausted);
  EXPECT_FALSE(reader.feed("more", take));  // once failed, failed for good
  d::GrpcMessageReader one_over(100);
  EXPECT_FALSE(one_over.feed(prefixed(std::string(101, 'x')), take));
  EXPECT_EQ(one_over.buffered(), 0u);
}

TEST(GrpcMessageReader, ACompressedFlagOtherThanZeroOrOneIsRejected) {
  for (char flag : {'\x02', '\x80', '\xff'}) {
    d::GrpcMessageReader reader(100);
    std::string wire = prefixed("abc");
    wire[0] = flag;
    EXPECT_FALSE(reader.feed(wire, [](std::string&, bool) { FAIL() << "no message"; }));
    EXPECT_NE(reader.error().find("compressed flag"), std::string::npos) << reader.error();
    EXPECT_EQ(reader.error_code(), StatusCode::internal);
  }
}

}  // namespace

// The GOAWAY a server writes itself when nghttp2 ended the session without
// one (a flood): the frame RFC 9113 6.8 lays out, byte for byte.
TEST(GrpcWireGoaway, AHandMadeGoawayIsTheFrameTheRfcLaysOut) {
  namespace h2 = wheelrpc::test::h2;
  std::string payload;
  h2::put32(payload, 7);
  h2::put32(payload, 11);
  payload += "flooded";
  EXPECT_EQ(wheelrpc::rpc::detail::goaway_frame(7, 11, "flooded"), h2::frame(h2::kGoaway, 0, 0, payload));
  // The last stream id's reserved bit is clear, and the debug text bounded.
  const std::string long_debug(1000, 'x');
  const std::string f = wheelrpc::rpc::detail::goaway_frame(-1, 0, long_debug);
  EXPECT_EQ(f.size(), 9u + 8u + 256u);
  EXPECT_EQ(static_cast<unsigned char>(f[9]), 0x7fu);
}
