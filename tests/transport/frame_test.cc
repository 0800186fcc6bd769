// The frame codec: encoding is byte-exact (docs/protocol.md), decoding takes
// bytes in any split, and every malformed input is rejected with the right code
// before anything is allocated from it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/transport/errc.h>
#include <wheelrpc/transport/frame.h>

namespace {

using namespace wheelrpc::transport;
using Result = FrameDecoder::Result;

const std::uint8_t* bytes_of(const std::string& s) { return reinterpret_cast<const std::uint8_t*>(s.data()); }

std::string encode(const Frame& f) {
  std::string out;
  encode_frame(f, out);
  return out;
}

std::string to_hex(std::string_view s) {
  constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    hex += kDigits[b >> 4];
    hex += kDigits[b & 0xf];
  }
  return hex;
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

// Big-endian u32 at `offset`, written over what is there.
void poke_u32(std::string& s, std::size_t offset, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s[offset + static_cast<std::size_t>(i)] = static_cast<char>(v >> (24 - 8 * i));
}

Frame request_frame() {
  Frame f;
  f.header.flags = kFlagRequest | kFlagTwoWay;
  f.header.request_id = 0x0102030405060708;
  f.header.deadline_ms = 1000;
  f.method = "echo";
  f.attachments = {{"k", "v"}};
  f.payload = "hi";
  return f;
}

void expect_same(const Frame& a, const Frame& b) {
  EXPECT_EQ(a.header.version, b.header.version);
  EXPECT_EQ(a.header.flags, b.header.flags);
  EXPECT_EQ(a.header.status, b.header.status);
  EXPECT_EQ(a.header.request_id, b.header.request_id);
  EXPECT_EQ(a.header.deadline_ms, b.header.deadline_ms);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.attachments, b.attachments);
  EXPECT_EQ(a.payload, b.payload);
}

// Encodes `f`, decodes it back in one call and checks every field and size.
Frame round_trip(const Frame& f, std::uint32_t max_body = kDefaultMaxBody) {
  const std::string wire = encode(f);
  EXPECT_EQ(wire.size(), encoded_size(f));
  FrameDecoder dec(max_body);
  Frame out;
  std::size_t consumed = 99;
  EXPECT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame) << dec.error_message();
  EXPECT_EQ(consumed, wire.size());
  EXPECT_EQ(out.header.body_len, wire.size() - kHeaderSize);
  expect_same(out, f);
  return out;
}

// Decodes `wire` whole and expects an error with `code`; returns the message.
std::string expect_error(const std::string& wire, errc code, std::uint32_t max_body = kDefaultMaxBody) {
  FrameDecoder dec(max_body);
  Frame out;
  std::size_t consumed = 99;
  EXPECT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::error);
  EXPECT_EQ(consumed, 0u);
  EXPECT_EQ(dec.error(), make_error_code(code)) << dec.error().message();
  EXPECT_FALSE(dec.error_message().empty());
  return dec.error_message();
}

// A header (of a request frame) followed by `body`, body_len set to its size.
std::string with_body(const std::string& body) {
  Frame f;
  f.header.flags = kFlagRequest;
  f.header.request_id = 7;
  std::string wire = encode(f);
  EXPECT_EQ(wire.size(), kHeaderSize);
  poke_u32(wire, 20, static_cast<std::uint32_t>(body.size()));
  return wire + body;
}

// ---- round trips ------------------------------------------------------------

TEST(FrameRoundTrip, RequestWithMethodAttachmentsAndPayload) {
  Frame f = request_frame();
  f.attachments = {{"trace-id", "abc123"}, {"auth", "token"}, {"empty", ""}, {"", "no key"}};
  f.payload = std::string(1000, 'x');
  round_trip(f);
}

TEST(FrameRoundTrip, ALentAttachmentIsEncodedAfterTheOthersAsIfItWereOne) {
  // What the client does with its traceparent: lent from a buffer of its
  // own, encoded byte for byte as a last attachment.
  const std::string value(55, 'v');
  Frame lent = request_frame();
  lent.attachments = {{"auth", "token"}};
  lent.lent_key = "traceparent";
  lent.lent_value = value;
  lent.payload = "p";
  Frame owned = request_frame();
  owned.attachments = {{"auth", "token"}, {"traceparent", value}};
  owned.payload = "p";
  EXPECT_EQ(encoded_size(lent), encoded_size(owned));
  EXPECT_EQ(to_hex(encode(lent)), to_hex(encode(owned)));
  EXPECT_EQ(encode(lent).size(), encoded_size(lent));

  // Alone, on an otherwise empty body: the body is not empty.
  Frame only;
  only.header.flags = kFlagRequest;
  only.lent_key = "k";
  only.lent_value = "v";
  Frame only_owned;
  only_owned.header.flags = kFlagRequest;
  only_owned.attachments = {{"k", "v"}};
  EXPECT_EQ(to_hex(encode(only)), to_hex(encode(only_owned)));

  // Decoded, it is one of the attachments, the last.
  FrameDecoder dec;
  Frame out;
  std::size_t consumed = 0;
  const std::string wire = encode(lent);
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame);
  ASSERT_EQ(out.attachments.size(), 2u);
  EXPECT_EQ(out.attachments[1].first, "traceparent");
  EXPECT_EQ(out.attachments[1].second, value);
  EXPECT_TRUE(out.lent_key.empty());
}

TEST(FrameRoundTrip, Response) {
  Frame f;
  f.header.status = 2;  // rpc::Status::method_not_found
  f.header.request_id = 42;
  f.payload = "no such method";
  const Frame out = round_trip(f);
  EXPECT_FALSE(out.header.is_request());
  EXPECT_EQ(out.header.status, 2);
}

TEST(FrameRoundTrip, EveryStatus) {
  // The transport carries the status byte; its meanings belong to rpc::Status.
  for (int s = 0; s < 256; ++s) {
    Frame f;
    f.header.status = static_cast<std::uint8_t>(s);
    f.payload = "p";
    round_trip(f);
  }
}

TEST(FrameRoundTrip, HeartbeatIsHeaderOnly) {
  Frame hb;
  hb.header.flags = kFlagRequest | kFlagTwoWay | kFlagEvent;
  hb.header.request_id = 9;
  EXPECT_EQ(encoded_size(hb), kHeaderSize);
  const std::string wire = encode(hb);
  ASSERT_EQ(wire.size(), 24u);
  const Frame out = round_trip(hb);
  EXPECT_EQ(out.header.body_len, 0u);
  EXPECT_TRUE(out.header.is_request());
  EXPECT_TRUE(out.header.is_two_way());
  EXPECT_TRUE(out.header.is_event());

  Frame pong;
  pong.header.flags = kFlagEvent;
  pong.header.request_id = 9;
  EXPECT_EQ(encode(pong).size(), 24u);
  round_trip(pong);
}

TEST(FrameRoundTrip, EmptyMethodWithPayloadKeepsTheCountBytes) {
  Frame f;
  f.payload = "x";
  EXPECT_EQ(encoded_size(f), kHeaderSize + 3 + 1);
  round_trip(f);
}

TEST(FrameRoundTrip, ThreeByteEmptyBodyDecodesLikeAnEmptyOne) {
  // method_len 0, count 0, no payload: legal, though encode_frame writes body_len 0 instead.
  const std::string wire = with_body(std::string(3, '\0'));
  FrameDecoder dec;
  Frame out;
  out.method = "stale";
  out.attachments = {{"stale", "stale"}};
  out.payload = "stale";
  std::size_t consumed = 0;
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame) << dec.error_message();
  EXPECT_EQ(consumed, kHeaderSize + 3);
  EXPECT_EQ(out.header.body_len, 3u);
  EXPECT_TRUE(out.method.empty());
  EXPECT_TRUE(out.attachments.empty());
  EXPECT_TRUE(out.payload.empty());
}

TEST(FrameRoundTrip, LargePayloadUpToTheLimit) {
  Frame f;
  f.method = "put";
  f.attachments = {{"k", "v"}};
  // Fill the body to exactly kDefaultMaxBody.
  const std::size_t fixed = encoded_size(f) - kHeaderSize;
  f.payload.assign(kDefaultMaxBody - fixed, '\0');
  for (std::size_t i = 0; i < f.payload.size(); i += 4093) f.payload[i] = static_cast<char>(i);
  EXPECT_EQ(encoded_size(f), kHeaderSize + kDefaultMaxBody);
  round_trip(f);

  // One byte more is refused.
  f.payload.push_back('!');
  const std::string msg = expect_error(encode(f), errc::body_too_large);
  EXPECT_NE(msg.find(std::to_string(kDefaultMaxBody + 1)), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(kDefaultMaxBody)), std::string::npos) << msg;
}

TEST(FrameRoundTrip, BinaryBytesIncludingZerosInEveryField) {
  Frame f;
  f.header.flags = kFlagRequest | kFlagTwoWay | kFlagEvent;
  f.header.status = 0xff;
  f.header.request_id = 0xff00ff00'00ff00ffULL;
  f.header.deadline_ms = 0xffffffffu;
  const std::string all = [] {
    std::string s;
    for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
    return s;
  }();
  f.method = std::string("\0m\0\xff", 4);
  f.attachments = {{std::string("\0", 1), std::string("\0\0", 2)},
                   {all.substr(0, 255), all},
                   {std::string("\xff\x00k", 3), std::string()}};
  f.payload = all + std::string(10, '\0');
  round_trip(f);
}

TEST(FrameRoundTrip, MaxLengthNamesAndManyAttachments) {
  Frame f;
  f.method = std::string(kMaxNameSize, 'm');
  for (int i = 0; i < 1000; ++i) f.attachments.emplace_back(std::string(kMaxNameSize, 'k'), std::to_string(i));
  round_trip(f);
}

TEST(FrameRoundTrip, ReservedFlagBitsAreNotSentAndIgnoredOnReceipt) {
  Frame f = request_frame();
  f.header.flags = 0xff;
  std::string wire = encode(f);
  EXPECT_EQ(static_cast<std::uint8_t>(wire[3]), 0x0f);  // request, two-way, event, stream
  wire[3] = static_cast<char>(0xf1);                    // reserved bits set + request
  wire[6] = wire[7] = '\x5a';                           // reserved bytes
  FrameDecoder dec;
  Frame out;
  std::size_t consumed = 0;
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame) << dec.error_message();
  EXPECT_EQ(out.header.flags, kFlagRequest);
  EXPECT_EQ(out.header.stream_op, 0);
  EXPECT_EQ(out.method, "echo");
}

TEST(FrameRoundTrip, AStreamFramesOpTravelsInByteFive) {
  Frame f = request_frame();
  f.header.flags = kFlagStream | kFlagRequest;
  f.header.stream_op = 2;
  std::string wire = encode(f);
  EXPECT_EQ(static_cast<std::uint8_t>(wire[3]), 0x09);
  EXPECT_EQ(static_cast<std::uint8_t>(wire[5]), 2);
  FrameDecoder dec;
  Frame out;
  std::size_t consumed = 0;
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame) << dec.error_message();
  EXPECT_TRUE(out.header.is_stream());
  EXPECT_EQ(out.header.stream_op, 2);
}

TEST(FrameRoundTrip, DecodingReusesTheFrameAndClearsStaleFields) {
  FrameDecoder dec;
  Frame out;
  std::size_t consumed = 0;
  Frame big = request_frame();
  big.attachments = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  std::string wire = encode(big);
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame);
  EXPECT_EQ(out.attachments.size(), 3u);

  Frame small;
  small.header.request_id = 5;
  small.payload = "z";
  wire = encode(small);
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame);
  expect_same(out, small);

  Frame empty;
  wire = encode(empty);
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame);
  expect_same(out, empty);
}

// ---- layout -----------------------------------------------------------------

TEST(FrameEncode, ByteExactLayout) {
  const std::string wire = encode(request_frame());
  // body: method_len 4 "echo", count 1, key_len 1 "k", value_len 1 "v", payload "hi" = 16 bytes
  EXPECT_EQ(to_hex(wire.substr(0, kHeaderSize)),
            "5752"              // magic
            "01"                // version
            "03"                // flags: request | two-way
            "00"                // status
            "000000"            // reserved
            "0102030405060708"  // request_id
            "000003e8"          // deadline_ms = 1000
            "00000010");        // body_len = 16
  EXPECT_EQ(to_hex(wire.substr(kHeaderSize)),
            "04"
            "6563686f"  // method
            "0001"      // attachment_count
            "01"
            "6b"  // key
            "00000001"
            "76"      // value
            "6869");  // payload
}

TEST(FrameEncode, AppendsToWhatIsInTheBuffer) {
  std::string out = "prefix";
  const Frame f = request_frame();
  encode_frame(f, out);
  encode_frame(f, out);
  EXPECT_EQ(out.size(), 6 + 2 * encoded_size(f));
  EXPECT_EQ(out.substr(0, 6), "prefix");
  EXPECT_EQ(out.substr(6, encoded_size(f)), encode(f));
}

TEST(FrameEncode, EncodedSizeMatches) {
  std::vector<Frame> frames;
  frames.push_back(Frame{});
  frames.push_back(request_frame());
  Frame f;
  f.method = "m";
  frames.push_back(f);
  f = Frame{};
  f.attachments = {{"", ""}};
  frames.push_back(f);
  f = Frame{};
  f.payload = std::string(70000, 'p');
  frames.push_back(f);
  for (const Frame& fr : frames) EXPECT_EQ(encode(fr).size(), encoded_size(fr));
  EXPECT_EQ(encoded_size(frames[0]), kHeaderSize);
  EXPECT_EQ(encoded_size(frames[2]), kHeaderSize + 1 + 1 + 2);
  EXPECT_EQ(encoded_size(frames[3]), kHeaderSize + 3 + 1 + 4);
}

// ---- incremental decoding ---------------------------------------------------

TEST(FrameDecode, ByteByByte) {
  const std::string wire = encode(request_frame());
  FrameDecoder dec;
  Frame out;
  EXPECT_EQ(dec.needed(), kHeaderSize);
  for (std::size_t n = 0; n < wire.size(); ++n) {
    std::size_t consumed = 99;
    ASSERT_EQ(dec.decode(bytes_of(wire), n, out, consumed), Result::need_more) << n;
    EXPECT_EQ(consumed, 0u);
    EXPECT_EQ(dec.needed(), n < kHeaderSize ? kHeaderSize : wire.size()) << n;
  }
  std::size_t consumed = 0;
  ASSERT_EQ(dec.decode(bytes_of(wire), wire.size(), out, consumed), Result::frame);
  EXPECT_EQ(consumed, wire.size());
  EXPECT_EQ(dec.needed(), kHeaderSize);
  expect_same(out, request_frame());
}

TEST(FrameDecode, ByteByByteFromAGrowingBuffer) {
  // As a connection would: bytes arrive one at a time into a buffer that may move.
  Frame f = request_frame();
  f.payload = std::string(300, 'q');
  const std::string wire = encode(f);
  FrameDecoder dec;
  Frame out;
  std::string buf;
  int frames = 0;
  for (const char c : wire) {
    buf += c;
    std::size_t consumed = 0;
    const Result r = dec.decode(bytes_of(buf), buf.size(), out, consumed);
    if (buf.size() < wire.size()) {
      ASSERT_EQ(r, Result::need_more);
    } else {
      ASSERT_EQ(r, Result::frame);
      ++frames;
    }
  }
  EXPECT_EQ(frames, 1);
  expect_same(out, f);
}

TEST(FrameDecode, HeartbeatNeedsOnlyTheHeader) {
  Frame hb;
  hb.header.flags = kFlagRequest | kFlagTwoWay | kFlagEvent;
  const std::string wire = encode(hb);
  FrameDecoder dec;
  Frame out;
  std::size_t consumed = 0;
  ASSERT_EQ(dec.decode(bytes_of(wire), 23, out, consumed), Result::need_more);
  EXPECT_EQ(dec.needed(), kHeaderSize);
  ASSERT_EQ(dec.decode(bytes_of(wire), 24, out, consumed), Result::frame);
  EXPECT_EQ(consumed, 24u);
}

TEST(FrameDecode, SeveralFramesBackToBack) {
  std::vector<Frame> frames;
  frames.push_back(request_frame());
  Frame hb;
  hb.header.flags = kFlagRequest | kFlagTwoWay | kFlagEvent;
  hb.header.request_id = 2;
  frames.push_back(hb);
  Frame resp;
  resp.header.request_id = 0x0102030405060708;
  resp.payload = "hi";
  frames.push_back(resp);
  Frame req2 = request_frame();
  req2.header.request_id = 3;
  req2.attachments.clear();
  frames.push_back(req2);

  std::string buf;
  for (const Frame& f : frames) encode_frame(f, buf);
  // A partial fifth frame at the end.
  const std::string tail = encode(request_frame());
  buf += tail.substr(0, 30);

  FrameDecoder dec;
  Frame out;
  std::size_t offset = 0;
  for (const Frame& f : frames) {
    std::size_t consumed = 0;
    ASSERT_EQ(dec.decode(bytes_of(buf) + offset, buf.size() - offset, out, consumed), Result::frame);
    EXPECT_EQ(consumed, encoded_size(f));
    expect_same(out, f);
    offset += consumed;
  }
  std::size_t consumed = 99;
  EXPECT_EQ(dec.decode(bytes_of(buf) + offset, buf.size() - offset, out, consumed), Result::need_more);
  EXPECT_EQ(consumed, 0u);
  EXPECT_EQ(dec.needed(), tail.size());
}

// ---- errors -----------------------------------------------------------------

TEST(FrameErrors, WrongMagic) {
  std::string wire = encode(request_frame());
  wire[0] = 'G';
  wire[1] = 'E';
  const std::string msg = expect_error(wire, errc::bad_magic);
  EXPECT_NE(msg.find("4745"), std::string::npos) << msg;
  // Already from the header alone, and from its first two bytes: a short
  // probe ("GET", a scanner's few bytes) is refused without waiting for 24.
  expect_error(wire.substr(0, kHeaderSize), errc::bad_magic);
  expect_error(wire.substr(0, 2), errc::bad_magic);
  // One byte is not enough to tell (nor for the channel to tell a TLS record).
  FrameDecoder dec(kDefaultMaxBody);
  Frame out;
  std::size_t consumed = 0;
  EXPECT_EQ(dec.decode(bytes_of(wire), 1, out, consumed), FrameDecoder::Result::need_more);
}

TEST(FrameErrors, WrongVersion) {
  Frame f = request_frame();
  f.header.version = 2;
  const std::string wire = encode(f);
  const std::string msg = expect_error(wire, errc::unsupported_version);
  EXPECT_NE(msg.find('2'), std::string::npos) << msg;
  expect_error(wire.substr(0, kHeaderSize), errc::unsupported_version);
  expect_error(wire.substr(0, 3), errc::unsupported_version);  // from its first three bytes
  f.header.version = 0;
  expect_error(encode(f), errc::unsupported_version);
}

TEST(FrameErrors, BodyTooLargeFromTheHeaderAlone) {
  for (const std::uint32_t max : {kDefaultMaxBody, 100u, 0u}) {
    std::string header = encode(Frame{});
    poke_u32(header, 20, max + 1);
    ASSERT_EQ(header.size(), kHeaderSize);
    const std::string msg = expect_error(header, errc::body_too_large, max);
    EXPECT_NE(msg.find(std::to_string(max + 1)), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(max)), std::string::npos) << msg;
  }
  // The largest value a u32 can say.
  std::string header = encode(Frame{});
  poke_u32(header, 20, 0xffffffffu);
  expect_error(header, errc::body_too_large);
}

TEST(FrameErrors, BodyAtTheLimitIsWaitedFor) {
  std::string header = encode(Frame{});
  poke_u32(header, 20, 100);
  FrameDecoder dec(100);
  Frame out;
  std::size_t consumed = 0;
  EXPECT_EQ(dec.decode(bytes_of(header), header.size(), out, consumed), Result::need_more);
  EXPECT_EQ(dec.needed(), kHeaderSize + 100);
}

TEST(FrameErrors, BodyOfOneOrTwoBytes) {
  expect_error(with_body(std::string(1, '\0')), errc::malformed_frame);
  expect_error(with_body(std::string(2, '\0')), errc::malformed_frame);
  const std::string msg = expect_error(with_body(std::string(1, '\0')), errc::malformed_frame);
  EXPECT_NE(msg.find("attachment_count"), std::string::npos) << msg;
  // method_len 1 with the method byte but no count
  expect_error(with_body(from_hex("0178")), errc::malformed_frame);
}

TEST(FrameErrors, MethodLenOverruns) {
  // method_len 10, but only "ab" and no count follow
  const std::string msg = expect_error(with_body(from_hex("0a6162")), errc::malformed_frame);
  EXPECT_NE(msg.find("method"), std::string::npos) << msg;
  EXPECT_NE(msg.find("by 8 bytes"), std::string::npos) << msg;
  // method_len 255 in a 3-byte body
  expect_error(with_body(from_hex("ff0000")), errc::malformed_frame);
}

TEST(FrameErrors, AttachmentCountTooLarge) {
  // count 2, one complete attachment (k=v)
  const std::string msg = expect_error(with_body(from_hex("00"
                                                          "0002"
                                                          "016b0000000176")),
                                       errc::malformed_frame);
  EXPECT_NE(msg.find("attachment"), std::string::npos) << msg;
  // count 65535 in a 3-byte body: rejected before sizing anything from it
  const std::string msg2 = expect_error(with_body(from_hex("00ffff")), errc::malformed_frame);
  EXPECT_NE(msg2.find("attachment_count 65535"), std::string::npos) << msg2;
}

TEST(FrameErrors, AttachmentKeyOverruns) {
  // count 1, key_len 9, key "ab", value_len, value "v": key fits the count bound but not the body
  const std::string msg = expect_error(with_body(from_hex("00"
                                                          "0001"
                                                          "09"
                                                          "6162")),
                                       errc::malformed_frame);
  EXPECT_NE(msg.find("attachment_count"), std::string::npos) << msg;  // 5 bytes needed, 3 left

  const std::string msg2 = expect_error(with_body(from_hex("00"
                                                           "0001"
                                                           "09"
                                                           "61626364")),
                                        errc::malformed_frame);
  EXPECT_NE(msg2.find("attachment 0 key"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("by 5 bytes"), std::string::npos) << msg2;
}

TEST(FrameErrors, AttachmentValueLenOverruns) {
  // count 2: first complete, second has key "b" and a truncated value_len
  const std::string msg = expect_error(with_body(from_hex("00"
                                                          "0002"
                                                          "0161"
                                                          "00000001"
                                                          "78"
                                                          "0162"
                                                          "000000")),
                                       errc::malformed_frame);
  EXPECT_NE(msg.find("attachment 1 value_len"), std::string::npos) << msg;
}

TEST(FrameErrors, AttachmentValueOverruns) {
  // value_len 0xffffffff in a tiny body
  const std::string msg = expect_error(with_body(from_hex("00"
                                                          "0001"
                                                          "016b"
                                                          "ffffffff"
                                                          "76")),
                                       errc::malformed_frame);
  EXPECT_NE(msg.find("attachment 0 value"), std::string::npos) << msg;
  EXPECT_NE(msg.find("by 4294967294 bytes"), std::string::npos) << msg;
  // value_len 2 with one byte: overruns by one
  const std::string msg2 = expect_error(with_body(from_hex("00"
                                                           "0001"
                                                           "016b"
                                                           "00000002"
                                                           "76")),
                                        errc::malformed_frame);
  EXPECT_NE(msg2.find("by 1 byte"), std::string::npos) << msg2;
}

TEST(FrameErrors, ErrorIsSticky) {
  std::string bad = encode(request_frame());
  bad[0] = 'X';
  const std::string good = encode(request_frame());
  FrameDecoder dec;
  Frame out;
  std::size_t consumed = 0;
  ASSERT_EQ(dec.decode(bytes_of(bad), bad.size(), out, consumed), Result::error);
  const auto ec = dec.error();
  const std::string msg = dec.error_message();
  for (int i = 0; i < 3; ++i) {
    consumed = 99;
    EXPECT_EQ(dec.decode(bytes_of(good), good.size(), out, consumed), Result::error);
    EXPECT_EQ(consumed, 0u);
    EXPECT_EQ(dec.decode(nullptr, 0, out, consumed), Result::error);
  }
  EXPECT_EQ(dec.error(), ec);
  EXPECT_EQ(dec.error_message(), msg);
}

TEST(FrameErrors, NoErrorBeforeAnyFailure) {
  FrameDecoder dec(1234);
  EXPECT_FALSE(dec.error());
  EXPECT_TRUE(dec.error_message().empty());
  EXPECT_EQ(dec.max_body(), 1234u);
  Frame out;
  std::size_t consumed = 99;
  EXPECT_EQ(dec.decode(nullptr, 0, out, consumed), Result::need_more);
  EXPECT_EQ(consumed, 0u);
  EXPECT_EQ(dec.needed(), kHeaderSize);
}

// ---- error category ---------------------------------------------------------

TEST(FrameErrc, Category) {
  EXPECT_STREQ(transport_category().name(), "wheelrpc.transport");
  const boost::system::error_code ec = errc::malformed_frame;  // is_error_code_enum
  EXPECT_EQ(&ec.category(), &transport_category());
  EXPECT_EQ(ec.value(), static_cast<int>(errc::malformed_frame));
  EXPECT_TRUE(ec);
}

TEST(FrameErrc, MessagesAreNonEmptyAndDistinct) {
  std::vector<std::string> seen;
  for (int v = static_cast<int>(errc::bad_magic); v <= static_cast<int>(errc::protocol_error); ++v) {
    const std::string msg = transport_category().message(v);
    EXPECT_FALSE(msg.empty()) << v;
    EXPECT_EQ(msg.find("unknown"), std::string::npos) << v << ": " << msg;
    for (const std::string& s : seen) EXPECT_NE(s, msg);
    seen.push_back(msg);
  }
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_EQ(transport_category().message(0), "unknown wheelrpc.transport error 0");
  EXPECT_EQ(transport_category().message(999), "unknown wheelrpc.transport error 999");
  EXPECT_EQ(transport_category().message(-1), "unknown wheelrpc.transport error -1");
}

}  // namespace
