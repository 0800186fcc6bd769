#include <wheelrpc/transport/frame.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <wheelrpc/transport/errc.h>

namespace wheelrpc::transport {
namespace {

// Flag bits this version knows. The rest are reserved: sent as 0 and masked off
// on receipt, so a later version can give them a meaning old peers ignore.
constexpr std::uint8_t kKnownFlags = kFlagRequest | kFlagTwoWay | kFlagEvent | kFlagStream;
constexpr std::size_t kMaxAttachments = std::numeric_limits<std::uint16_t>::max();
constexpr std::size_t kMaxBodySize = std::numeric_limits<std::uint32_t>::max();
// method_len (u8) + attachment_count (u16): the least a non-empty body holds.
constexpr std::size_t kMinBody = 1 + 2;
// key_len (u8) + value_len (u32): the least one attachment takes. Used to bound
// attachment_count by the body before anything is sized from it.
constexpr std::size_t kMinAttachment = 1 + 4;
// "Not an attachment's field" in the decoder's overrun messages.
constexpr std::size_t kNoIndex = std::numeric_limits<std::size_t>::max();

// Big-endian stores and loads, byte by byte: no alignment or aliasing concerns,
// and GCC and Clang compile them to a single (byte-swapped) move.
inline char* put_u8(char* p, std::uint8_t v) noexcept {
  *p = static_cast<char>(v);
  return p + 1;
}
inline char* put_u16(char* p, std::uint16_t v) noexcept {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
  return p + 2;
}
inline char* put_u32(char* p, std::uint32_t v) noexcept {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
  return p + 4;
}
inline char* put_u64(char* p, std::uint64_t v) noexcept {
  put_u32(p, static_cast<std::uint32_t>(v >> 32));
  return put_u32(p + 4, static_cast<std::uint32_t>(v));
}

// A length whose bound the compiler no longer sees. GCC expands a memcpy whose
// size it can bound (a name's length is at most 255) into `rep movsq`, which
// costs more than the libc call for the short names of a frame: measured ~4x
// slower encoding, and 45 % of the decoder's time in a server profile.
inline std::size_t unbounded(std::size_t n) noexcept {
#if defined(__GNUC__)
  __asm__("" : "+r"(n));
#endif
  return n;
}

// Copies n bytes to p (see unbounded()).
inline char* put_bytes(char* p, const char* src, std::size_t n) noexcept {
  std::memcpy(p, src, unbounded(n));
  return p + n;
}

inline std::uint16_t get_u16(const std::uint8_t* p) noexcept { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }
inline std::uint32_t get_u32(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}
inline std::uint64_t get_u64(const std::uint8_t* p) noexcept {
  return (std::uint64_t{get_u32(p)} << 32) | get_u32(p + 4);
}

// Names longer than a u8 length can say are a caller bug; encoded_size and
// encode_frame must agree on the truncation or the stream would desync.
inline std::size_t name_size(std::string_view s) noexcept {
  assert(s.size() <= kMaxNameSize && "method names and attachment keys are at most 255 bytes");
  return std::min(s.size(), kMaxNameSize);
}
inline std::size_t attachment_count(const Attachments& a) noexcept {
  assert(a.size() <= kMaxAttachments && "at most 65535 attachments per frame");
  return std::min(a.size(), kMaxAttachments);
}

// The lent attachment goes out only if the count can still say it.
inline bool lends(const Frame& f) noexcept { return !f.lent_key.empty() && f.attachments.size() < kMaxAttachments; }

inline bool body_is_empty(const Frame& f) noexcept {
  return f.method.empty() && f.attachments.empty() && f.payload.empty() && f.lent_key.empty();
}

std::size_t body_size(const Frame& f) noexcept {
  // Header-only frames (heartbeats) are the common empty case; keep them at 24 bytes.
  if (body_is_empty(f)) return 0;
  std::size_t n = kMinBody + name_size(f.method) + f.payload.size();
  const std::size_t count = attachment_count(f.attachments);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& [key, value] = f.attachments[i];
    n += kMinAttachment + name_size(key) + value.size();
  }
  if (lends(f)) n += kMinAttachment + name_size(f.lent_key) + f.lent_value.size();
  return n;
}

std::string bytes(std::size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

// Error messages are built out of line: they are never on the hot path.
[[gnu::cold]] std::string overrun_message(const char* field, std::size_t index, std::size_t n, std::size_t left,
                                          std::uint32_t body_len) {
  std::string m = "malformed frame: ";
  if (index != kNoIndex) m += "attachment " + std::to_string(index) + " ";
  m += std::string(field) + " (" + bytes(n) + ") overruns the " + std::to_string(body_len) + "-byte body by " +
       bytes(n - left);
  return m;
}

[[gnu::cold]] std::string count_message(std::size_t count, std::size_t left, std::uint32_t body_len) {
  const std::size_t least = count * kMinAttachment;
  return "malformed frame: attachment_count " + std::to_string(count) + " needs at least " + bytes(least) +
         " but only " + bytes(left) + " left: it overruns the " + std::to_string(body_len) + "-byte body by " +
         bytes(least - left) + " at least";
}

std::string hex_byte(std::uint8_t b) {
  constexpr char kDigits[] = "0123456789abcdef";
  return {kDigits[b >> 4], kDigits[b & 0xf]};
}

}  // namespace

std::size_t encoded_size(const Frame& f) noexcept { return kHeaderSize + body_size(f); }

void encode_frame(const Frame& f, std::string& out) {
  const std::size_t body = body_size(f);
  // Unlike an over-long name, a body whose length a u32 cannot say has no
  // truncation that keeps the frame meaningful; refuse it before writing anything.
  if (body > kMaxBodySize) throw std::length_error("wheelrpc frame body exceeds 4 GiB");
  const std::size_t start = out.size();
  out.reserve(start + kHeaderSize + body);
  // Header, method and attachments are written through a pointer into the
  // string (one resize, no per-field capacity checks); the payload, usually the
  // bulk, is appended so that resize does not zero-fill it first.
  const std::size_t payload = body == 0 ? 0 : f.payload.size();
  out.resize(start + kHeaderSize + body - payload);

  char* p = out.data() + start;
  p = put_u16(p, kMagic);
  p = put_u8(p, f.header.version);
  p = put_u8(p, static_cast<std::uint8_t>(f.header.flags & kKnownFlags));
  p = put_u8(p, f.header.status);
  p = put_u8(p, f.header.stream_op);
  p = put_u8(p, f.header.encoding);
  p = put_u8(p, f.header.reply_encoding);
  p = put_u64(p, f.header.request_id);
  p = put_u32(p, f.header.deadline_ms);
  p = put_u32(p, static_cast<std::uint32_t>(body));
  if (body == 0) return;

  const std::size_t method_len = name_size(f.method);
  const std::size_t count = attachment_count(f.attachments);
  const bool lent = lends(f);
  p = put_u8(p, static_cast<std::uint8_t>(method_len));
  p = put_bytes(p, f.method.data(), method_len);
  p = put_u16(p, static_cast<std::uint16_t>(count + (lent ? 1 : 0)));
  const auto put_attachment = [&p](std::string_view key, std::string_view value) {
    const std::size_t key_len = name_size(key);
    p = put_u8(p, static_cast<std::uint8_t>(key_len));
    p = put_bytes(p, key.data(), key_len);
    p = put_u32(p, static_cast<std::uint32_t>(value.size()));
    p = put_bytes(p, value.data(), value.size());
  };
  for (std::size_t i = 0; i < count; ++i) put_attachment(f.attachments[i].first, f.attachments[i].second);
  if (lent) put_attachment(f.lent_key, f.lent_value);
  assert(p == out.data() + out.size());
  out.append(f.payload);
}

FrameDecoder::Result FrameDecoder::decode(const std::uint8_t* data, std::size_t size, Frame& out,
                                          std::size_t& consumed) {
  consumed = 0;
  if (error_) return Result::error;
  // Everything the header can rule out is checked as soon as its bytes are
  // here: the magic from the first two (what the channel also needs to tell
  // a TLS record), the version from the third, the body's length from the
  // whole header. Garbage (an HTTP request, a port scanner's probe) is
  // refused without waiting for 24 bytes, so a short probe that then waits or
  // disconnects is reported too; and a peer cannot make us buffer (or
  // allocate) a body we would reject.
  if (size >= 2 && get_u16(data) != kMagic) {
    return fail(errc::bad_magic, "bad magic 0x" + hex_byte(data[0]) + hex_byte(data[1]) +
                                     ", expected 0x5752 (\"WR\"): the peer does not speak wheelrpc");
  }
  if (size >= 3 && data[2] != kProtocolVersion) {
    return fail(errc::unsupported_version, "unsupported protocol version " + std::to_string(data[2]) +
                                               " (this build speaks " + std::to_string(kProtocolVersion) + ")");
  }
  if (size < kHeaderSize) {
    needed_ = kHeaderSize;
    return Result::need_more;
  }
  const std::uint32_t body_len = get_u32(data + 20);
  if (body_len > max_body_) {
    return fail(errc::body_too_large, "frame body of " + std::to_string(body_len) + " bytes exceeds the limit of " +
                                          std::to_string(max_body_) + " bytes");
  }
  const std::size_t total = kHeaderSize + body_len;
  if (size < total) {
    needed_ = total;
    return Result::need_more;
  }

  // Reads the body front to back; each length is checked against what is left
  // before it is used, so nothing is read or sized from an unchecked length.
  const std::uint8_t* p = data + kHeaderSize;
  const std::uint8_t* const end = p + body_len;
  const auto left = [&] { return static_cast<std::size_t>(end - p); };
  const auto text = [](const std::uint8_t* q) { return reinterpret_cast<const char*>(q); };
  const auto overrun = [&](const char* field, std::size_t n, std::size_t index = kNoIndex) {
    return fail(errc::malformed_frame, overrun_message(field, index, n, left(), body_len));
  };

  std::size_t count = 0;
  if (body_len == 0) {
    // An empty body is the short form of "no method, no attachments, no payload".
    out.method.clear();
  } else {
    // body_len >= 1 here, so method_len itself is in.
    const std::size_t method_len = *p++;
    if (method_len > left()) return overrun("method", method_len);
    out.method.assign(text(p), unbounded(method_len));
    p += method_len;
    if (left() < 2) return overrun("attachment_count", 2);
    count = get_u16(p);
    p += 2;
    // Bound the count by the body before sizing the vector from it: a 3-byte
    // lie must not make us construct 65535 attachments.
    if (count * kMinAttachment > left()) {
      return fail(errc::malformed_frame, count_message(count, left(), body_len));
    }
  }

  // resize, then assign into the existing elements: their strings keep their
  // capacity from the previous frame, so a steady stream allocates nothing.
  out.attachments.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    auto& [key, value] = out.attachments[i];
    if (left() < 1) return overrun("key_len", 1, i);
    const std::size_t key_len = *p++;
    if (key_len > left()) return overrun("key", key_len, i);
    key.assign(text(p), unbounded(key_len));
    p += key_len;
    if (left() < 4) return overrun("value_len", 4, i);
    const std::size_t value_len = get_u32(p);
    p += 4;
    if (value_len > left()) return overrun("value", value_len, i);
    value.assign(text(p), value_len);
    p += value_len;
  }
  out.payload.assign(text(p), left());

  out.header.version = data[2];
  out.header.flags = static_cast<std::uint8_t>(data[3] & kKnownFlags);
  out.header.status = data[4];
  out.header.stream_op = data[5];
  out.header.encoding = data[6];
  out.header.reply_encoding = data[7];
  out.header.request_id = get_u64(data + 8);
  out.header.deadline_ms = get_u32(data + 16);
  out.header.body_len = body_len;
  needed_ = kHeaderSize;
  consumed = total;
  return Result::frame;
}

FrameDecoder::Result FrameDecoder::fail(boost::system::error_code ec, std::string message) {
  error_ = ec;
  message_ = std::move(message);
  return Result::error;
}

}  // namespace wheelrpc::transport
