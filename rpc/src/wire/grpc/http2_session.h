#pragma once
// What both ends of an HTTP/2 connection share around nghttp2 (the gRPC
// wire, docs/grpc.md): the session's ownership, the headers to submit, and
// taking what the session wants written. Private to rpc/src; not
// thread-safe (each connection guards its session with its own lock).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <cstring>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <nghttp2/nghttp2.h>

namespace wheelrpc::rpc::detail {

struct Http2SessionDeleter {
  void operator()(nghttp2_session* s) const noexcept { nghttp2_session_del(s); }
};
using Http2SessionPtr = std::unique_ptr<nghttp2_session, Http2SessionDeleter>;

/// Header fields to submit. nghttp2 copies them when they are submitted,
/// so a block may be a local of the submitting function. The names and
/// values are kept end to end in one buffer, inline up to a call's usual
/// headers: a call's blocks allocate nothing.
class HeaderBlock {
 public:
  /// `never_index`: a value that changes from call to call (grpc-timeout)
  /// stays out of both ends' HPACK tables: indexed, it would evict the
  /// fields that repeat, and nghttp2's encoder chains entries by name, so
  /// every lookup of that name would compare against each old value.
  void add(std::string_view name, std::string_view value, bool never_index = false) {
    bytes_.insert(bytes_.end(), name.begin(), name.end());
    bytes_.insert(bytes_.end(), value.begin(), value.end());
    nv_.push_back(nghttp2_nv{nullptr, nullptr, name.size(), value.size(),
                             never_index ? std::uint8_t{NGHTTP2_NV_FLAG_NO_INDEX}
                                         : std::uint8_t{NGHTTP2_NV_FLAG_NONE}});  // nv() points them
  }
  bool empty() const noexcept { return nv_.empty(); }
  /// The fields as nghttp2 takes them; valid while this block lives unchanged.
  const auto& nv() {
    auto* p = reinterpret_cast<std::uint8_t*>(bytes_.data());
    for (nghttp2_nv& f : nv_) {
      f.name = p;
      f.value = p + f.namelen;
      p += f.namelen + f.valuelen;
    }
    return nv_;
  }

 private:
  /// Inline capacity: a request's dozen fields and their bytes.
  static constexpr std::size_t kInlineFields = 12;
  static constexpr std::size_t kInlineBytes = 256;
  boost::container::small_vector<char, kInlineBytes> bytes_;  // name, value, name, value, ...
  boost::container::small_vector<nghttp2_nv, kInlineFields> nv_;
};

/// A FIFO of a stream's flow-control records that allocates nothing until
/// its first element: a std::deque allocates its map and a node when it is
/// made, which every unary call, never using it, would pay.
template <class T>
class LazyQueue {
 public:
  bool empty() const noexcept { return !q_ || q_->empty(); }
  T& front() { return q_->front(); }
  void pop_front() { q_->pop_front(); }
  template <class... Args>
  void emplace_back(Args&&... args) {
    if (!q_) q_.emplace();
    q_->emplace_back(std::forward<Args>(args)...);
  }

 private:
  std::optional<std::deque<T>> q_;
};

/// A stream's outgoing message bytes, as a data source hands them to the
/// session: copies up to `length` bytes of `out` from `pos` into `buf` and
/// returns how many. Each message wholly handed over gives its stream the
/// credit it cost (its entry in `costs`, appended to `credits` as (stream
/// id, cost)); a drained `out` starts over (a large one is given back).
inline std::size_t take_message_bytes(std::string& out, std::size_t& pos,
                                      LazyQueue<std::pair<std::size_t, std::uint64_t>>& costs, std::uint8_t* buf,
                                      std::size_t length, std::int32_t stream_id,
                                      std::vector<std::pair<std::int32_t, std::uint64_t>>& credits) {
  const std::size_t n = std::min(out.size() - pos, length);
  if (n == 0) return 0;
  std::memcpy(buf, out.data() + pos, n);
  pos += n;
  while (!costs.empty() && costs.front().first <= pos) {
    credits.emplace_back(stream_id, costs.front().second);
    costs.pop_front();
  }
  if (pos == out.size()) {
    pos = 0;
    if (out.capacity() > 64 * 1024) {
      std::string().swap(out);
    } else {
      out.clear();
    }
  }
  return n;
}

/// A stream's reader took messages worth `n` of credit (a CREDIT frame):
/// the HTTP/2 bytes of the whole messages it covers (`unconsumed`: their
/// cost and bytes, oldest first) open the peer's window again. `credit`
/// keeps what matched no whole message yet; `held` the bytes not given back.
inline void consume_credited(nghttp2_session* session, std::int32_t stream_id, std::uint64_t n, std::uint64_t& credit,
                             LazyQueue<std::pair<std::uint64_t, std::size_t>>& unconsumed, std::size_t& held) {
  credit += n;
  while (!unconsumed.empty() && unconsumed.front().first <= credit) {
    credit -= unconsumed.front().first;
    const std::size_t bytes = std::min(unconsumed.front().second, held);
    nghttp2_session_consume(session, stream_id, bytes);
    held -= bytes;
    unconsumed.pop_front();
  }
}

/// Appends what `session` wants to write to `out`; false on a fatal error
/// (`rv` holds nghttp2's code).
inline bool take_output(nghttp2_session* session, std::string& out, int& rv) {
  for (;;) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n < 0) {
      rv = static_cast<int>(n);
      return false;
    }
    if (n == 0) return true;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

/// A large read is handed to nghttp2 this much at a time, what each slice
/// brought handled and its answers written (Channel::flush_partial) before
/// the next: the peer works on the first answers while the rest are made,
/// instead of both ends taking turns with one batch.
inline constexpr std::size_t kReadSliceBytes = 8192;
/// A server's bound on the SETTINGS and PING ACKs one slice may owe (nghttp2's
/// max_outbound_ack; its default, 1000, could never be reached in a slice).
inline constexpr std::size_t kMaxOwedAcks = 100;

/// A GOAWAY frame's bytes (RFC 9113 6.8), made without a session: the last
/// word to a peer whose session nghttp2 ended without one (a flood).
inline std::string goaway_frame(std::int32_t last_stream_id, std::uint32_t code, std::string_view debug) {
  debug = debug.substr(0, 256);
  const auto length = static_cast<std::uint32_t>(8 + debug.size());
  std::string out;
  out.reserve(9 + length);
  const auto put32 = [&out](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift & 0xff));
  };
  out.push_back(static_cast<char>(length >> 16 & 0xff));
  out.push_back(static_cast<char>(length >> 8 & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
  out.push_back(static_cast<char>(NGHTTP2_GOAWAY));
  out.push_back(0);  // flags
  put32(0);          // stream 0
  put32(static_cast<std::uint32_t>(last_stream_id) & 0x7fffffffu);
  put32(code);
  out.append(debug);
  return out;
}

/// "ENHANCE_YOUR_CALM" and the like: an HTTP/2 error code's name.
inline std::string_view http2_error_name(std::uint32_t code) noexcept { return nghttp2_http2_strerror(code); }

}  // namespace wheelrpc::rpc::detail
