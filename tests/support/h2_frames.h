#pragma once
// HTTP/2 frames by hand (RFC 9113), for the input no client library would
// write: 9-byte frame headers, HPACK blocks of literal fields and indexed
// references, and a blocking loopback connection that reads the server's
// frames back (its HEADERS decoded with nghttp2's HPACK inflater).
// Not thread-safe; one per test thread.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "support/h2_client.h"

namespace wheelrpc::test::h2 {

enum FrameType : std::uint8_t {
  kData = 0,
  kHeaders = 1,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoaway = 7,
  kWindowUpdate = 8,
  kContinuation = 9,
};
enum Flag : std::uint8_t { kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4 };

inline constexpr std::string_view kPreface{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"};

inline void put32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift & 0xff));
}

/// One frame: the 9-byte header (length, type, flags, stream id) and `payload`.
inline std::string frame(std::uint8_t type, std::uint8_t flags, std::int32_t stream_id, std::string_view payload) {
  std::string out;
  const auto n = static_cast<std::uint32_t>(payload.size());
  out.push_back(static_cast<char>(n >> 16 & 0xff));
  out.push_back(static_cast<char>(n >> 8 & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  put32(out, static_cast<std::uint32_t>(stream_id) & 0x7fffffffu);
  out.append(payload);
  return out;
}

inline std::string settings(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& entries = {}) {
  std::string p;
  for (const auto& [id, value] : entries) {
    p.push_back(static_cast<char>(id >> 8));
    p.push_back(static_cast<char>(id & 0xff));
    put32(p, value);
  }
  return frame(kSettings, 0, 0, p);
}
inline std::string settings_ack() { return frame(kSettings, kAck, 0, {}); }
inline std::string ping(std::string_view opaque = "12345678", bool ack = false) {
  return frame(kPing, ack ? kAck : 0, 0, opaque.substr(0, 8));
}
inline std::string rst_stream(std::int32_t stream_id, std::uint32_t code) {
  std::string p;
  put32(p, code);
  return frame(kRstStream, 0, stream_id, p);
}
inline std::string window_update(std::int32_t stream_id, std::uint32_t increment) {
  std::string p;
  put32(p, increment);
  return frame(kWindowUpdate, 0, stream_id, p);
}
inline std::string data(std::int32_t stream_id, std::string_view bytes, bool end_stream) {
  return frame(kData, end_stream ? kEndStream : 0, stream_id, bytes);
}
/// The preface and an empty SETTINGS: what opens every connection.
inline std::string opening() { return std::string(kPreface) + settings(); }

// ---- HPACK (RFC 7541), no Huffman coding

/// An integer with an N-bit prefix; `first` holds the bits above the prefix.
inline void hpack_int(std::string& out, std::uint8_t first, int prefix_bits, std::uint64_t v) {
  const std::uint64_t max = (1u << prefix_bits) - 1;
  if (v < max) {
    out.push_back(static_cast<char>(first | v));
    return;
  }
  out.push_back(static_cast<char>(first | max));
  v -= max;
  while (v >= 128) {
    out.push_back(static_cast<char>(v % 128 + 128));
    v /= 128;
  }
  out.push_back(static_cast<char>(v));
}
inline void hpack_string(std::string& out, std::string_view s) {
  hpack_int(out, 0, 7, s.size());
  out.append(s);
}
/// A literal field with a new name: without indexing, or (when `index`)
/// added to the dynamic table (it becomes index 62, the newest entry).
inline std::string literal(std::string_view name, std::string_view value, bool index = false) {
  std::string out;
  out.push_back(index ? '\x40' : '\x00');
  hpack_string(out, name);
  hpack_string(out, value);
  return out;
}
/// An indexed field: a reference to table entry `index` (62: the newest dynamic one).
inline std::string indexed(std::uint32_t index) {
  std::string out;
  hpack_int(out, 0x80, 7, index);
  return out;
}
/// The block of `headers`, each a literal without indexing.
inline std::string block(const H2Headers& headers) {
  std::string out;
  for (const auto& [k, v] : headers) out += literal(k, v);
  return out;
}
/// A whole gRPC request's HEADERS frame (END_HEADERS; END_STREAM as asked).
inline std::string headers(std::int32_t stream_id, const H2Headers& fields, bool end_stream) {
  return frame(kHeaders, kEndHeaders | (end_stream ? kEndStream : 0), stream_id, block(fields));
}

/// One frame the server sent.
struct Frame {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::int32_t stream_id = 0;
  std::string payload;
  H2Headers fields;  ///< HEADERS: decoded

  std::uint32_t u32(std::size_t at) const {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4 && at + k < payload.size(); ++k) {
      v = v << 8 | static_cast<unsigned char>(payload[at + k]);
    }
    return v;
  }
  /// RST_STREAM's and GOAWAY's error code.
  std::uint32_t error_code() const { return type == kGoaway ? u32(4) : u32(0); }
  std::int32_t last_stream_id() const { return static_cast<std::int32_t>(u32(0) & 0x7fffffffu); }
  std::string debug() const { return payload.size() > 8 ? payload.substr(8) : std::string(); }
  std::optional<std::string> field(std::string_view name) const {
    for (const auto& [k, v] : fields) {
      if (k == name) return v;
    }
    return std::nullopt;
  }
};

/// A blocking loopback connection that writes raw bytes and reads frames.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      return;
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{1, 0};  // sends into a server that stopped reading give up
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    nghttp2_hd_inflate_new(&inflater_);
  }
  ~RawConnection() {
    if (inflater_) nghttp2_hd_inflate_del(inflater_);
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const noexcept { return fd_ >= 0; }
  /// Writes all of `bytes`; false once the server closed (or stopped reading for 1 s).
  bool send(std::string_view bytes) {
    std::size_t off = 0;
    while (fd_ >= 0 && off < bytes.size()) {
      const auto n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return fd_ >= 0;
  }
  /// Reads frames until `done(frame)` holds for one (true), the server
  /// closes (false, eof()), or `limit` passes (false). Every frame read is
  /// kept in frames(); the server's SETTINGS are acknowledged.
  bool read_until(const std::function<bool(const Frame&)>& done,
                  std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
      while (auto f = next_frame()) {
        if (f->type == kSettings && (f->flags & kAck) == 0) send(settings_ack());
        frames_.push_back(std::move(*f));
        if (done(frames_.back())) return true;
      }
      if (eof_ || fd_ < 0) return false;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 50))) <= 0) continue;
      char buf[65536];
      const auto n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        eof_ = true;
      } else if (n > 0) {
        in_.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  /// Until the server's GOAWAY (returned), or nothing.
  std::optional<Frame> wait_goaway(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    if (auto g = find(kGoaway)) return g;
    if (read_until([](const Frame& f) { return f.type == kGoaway; }, limit)) return frames_.back();
    return std::nullopt;
  }
  /// Until the server closes the connection.
  bool wait_eof(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    read_until([](const Frame&) { return false; }, limit);
    return eof_;
  }
  /// Until the frame of `type` on `stream_id` (RST_STREAM, HEADERS...).
  std::optional<Frame> wait_frame(std::uint8_t type, std::int32_t stream_id,
                                  std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    for (const auto& f : frames_) {
      if (f.type == type && f.stream_id == stream_id) return f;
    }
    if (read_until([&](const Frame& f) { return f.type == type && f.stream_id == stream_id; }, limit)) {
      return frames_.back();
    }
    return std::nullopt;
  }
  std::optional<Frame> find(std::uint8_t type) const {
    for (const auto& f : frames_) {
      if (f.type == type) return f;
    }
    return std::nullopt;
  }
  const std::vector<Frame>& frames() const noexcept { return frames_; }
  bool eof() const noexcept { return eof_; }
  /// A small kernel receive buffer: a server writing to a client that never
  /// reads fills it soon.
  void set_receive_buffer(int bytes) { ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes); }

 private:
  std::optional<Frame> next_frame() {
    if (in_.size() < 9) return std::nullopt;
    const auto b = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in_[k])); };
    const std::size_t len = b(0) << 16 | b(1) << 8 | b(2);
    if (in_.size() < 9 + len) return std::nullopt;
    Frame f;
    f.type = static_cast<std::uint8_t>(b(3));
    f.flags = static_cast<std::uint8_t>(b(4));
    f.stream_id = static_cast<std::int32_t>((b(5) << 24 | b(6) << 16 | b(7) << 8 | b(8)) & 0x7fffffffu);
    f.payload = in_.substr(9, len);
    in_.erase(0, 9 + len);
    if (f.type == kHeaders) decode(f);
    return f;
  }
  void decode(Frame& f) {
    std::string_view p = f.payload;
    const std::uint8_t flags = f.flags;
    if (flags & 0x8) {  // PADDED
      const std::size_t pad = static_cast<unsigned char>(p[0]);
      p = p.substr(1, p.size() - 1 - pad);
    }
    if (flags & 0x20) p.remove_prefix(5);  // PRIORITY
    auto* in = reinterpret_cast<const std::uint8_t*>(p.data());
    std::size_t left = p.size();
    for (;;) {
      nghttp2_nv nv;
      int out_flags = 0;
      const auto n = nghttp2_hd_inflate_hd2(inflater_, &nv, &out_flags, in, left, 1);
      if (n < 0) return;
      in += n;
      left -= static_cast<std::size_t>(n);
      if (out_flags & NGHTTP2_HD_INFLATE_EMIT) {
        f.fields.emplace_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                              std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
      }
      if (out_flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater_);
        return;
      }
      if ((out_flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return;
    }
  }

  int fd_ = -1;
  bool eof_ = false;
  std::string in_;
  std::vector<Frame> frames_;
  nghttp2_hd_inflater* inflater_ = nullptr;
};

}  // namespace wheelrpc::test::h2
