// libFuzzer target for FrameDecoder: arbitrary bytes, decoded frame after frame
// as a connection would. Beyond "no crash, no sanitizer report" it checks:
//   - a decoded frame consumed exactly 24 + body_len bytes;
//   - every shorter prefix of it is need_more, with needed() right;
//   - re-encoding it reproduces the input bytes (up to the reserved flag
//     bits, and the 3-byte empty body that encodes as an empty one), and
//     encoded_size agrees;
//   - an error is sticky.
// Run it with scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <wheelrpc/transport/frame.h>

namespace {

using wheelrpc::transport::encode_frame;
using wheelrpc::transport::encoded_size;
using wheelrpc::transport::Frame;
using wheelrpc::transport::FrameDecoder;
using wheelrpc::transport::kHeaderSize;

// Smaller than the default limit so that body_too_large is reachable from
// bodies libFuzzer can actually produce.
constexpr std::uint32_t kMaxBody = 1u << 16;

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

bool same_fields(const Frame& a, const Frame& b) {
  return a.header.version == b.header.version && a.header.flags == b.header.flags &&
         a.header.status == b.header.status && a.header.stream_op == b.header.stream_op &&
         a.header.encoding == b.header.encoding && a.header.reply_encoding == b.header.reply_encoding &&
         a.header.request_id == b.header.request_id && a.header.deadline_ms == b.header.deadline_ms &&
         a.method == b.method && a.attachments == b.attachments && a.payload == b.payload;
}

void check_frame(const std::uint8_t* wire, std::size_t consumed, const Frame& f) {
  FUZZ_CHECK(consumed == kHeaderSize + f.header.body_len);

  // Any prefix of a frame is incomplete, never an error or a (shorter) frame.
  {
    FrameDecoder dec(kMaxBody);
    Frame scratch;
    std::size_t c = 99;
    FUZZ_CHECK(dec.decode(wire, consumed - 1, scratch, c) == FrameDecoder::Result::need_more);
    FUZZ_CHECK(c == 0);
    FUZZ_CHECK(dec.needed() == (consumed - 1 < kHeaderSize ? kHeaderSize : consumed));
  }

  std::string again;
  encode_frame(f, again);
  FUZZ_CHECK(again.size() == encoded_size(f));

  const bool empty = f.method.empty() && f.attachments.empty() && f.payload.empty();
  if (empty) {
    // The only non-canonical body: 3 zero bytes, which encodes as none.
    FUZZ_CHECK(f.header.body_len == 0 || f.header.body_len == 3);
    FUZZ_CHECK(again.size() == kHeaderSize);
  } else {
    FUZZ_CHECK(again.size() == consumed);
    FUZZ_CHECK(std::memcmp(again.data() + kHeaderSize, wire + kHeaderSize, consumed - kHeaderSize) == 0);
  }
  const auto* enc = reinterpret_cast<const std::uint8_t*>(again.data());
  FUZZ_CHECK(std::memcmp(enc, wire, 3) == 0);           // magic, version
  FUZZ_CHECK(enc[3] == (wire[3] & 0x0f));               // flags, reserved bits cleared
  FUZZ_CHECK(std::memcmp(enc + 4, wire + 4, 4) == 0);   // status, stream_op, encoding, reply_encoding
  FUZZ_CHECK(std::memcmp(enc + 8, wire + 8, 12) == 0);  // request_id, deadline_ms

  FrameDecoder dec(kMaxBody);
  Frame back;
  std::size_t c = 0;
  FUZZ_CHECK(dec.decode(enc, again.size(), back, c) == FrameDecoder::Result::frame);
  FUZZ_CHECK(c == again.size());
  FUZZ_CHECK(same_fields(back, f));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FrameDecoder dec(kMaxBody);
  Frame frame;  // reused across frames, as a connection does
  std::size_t offset = 0;
  for (;;) {
    std::size_t consumed = 99;
    const auto result = dec.decode(data + offset, size - offset, frame, consumed);
    if (result == FrameDecoder::Result::frame) {
      FUZZ_CHECK(consumed >= kHeaderSize && consumed <= size - offset);
      check_frame(data + offset, consumed, frame);
      offset += consumed;
      continue;
    }
    FUZZ_CHECK(consumed == 0);
    if (result == FrameDecoder::Result::need_more) {
      FUZZ_CHECK(dec.needed() > size - offset);
      FUZZ_CHECK(dec.needed() <= kHeaderSize + kMaxBody);
    } else {
      FUZZ_CHECK(dec.error() && !dec.error_message().empty());
      const auto ec = dec.error();
      FUZZ_CHECK(dec.decode(data, size, frame, consumed) == FrameDecoder::Result::error);
      FUZZ_CHECK(dec.error() == ec);
    }
    return 0;
  }
}
