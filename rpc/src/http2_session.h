#pragma once
// What both ends of an HTTP/2 connection share around nghttp2 (the gRPC
// wire, docs/grpc.md): the session's ownership, the headers to submit, and
// taking what the session wants written. Private to rpc/src; not
// thread-safe (each connection guards its session with its own lock).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nghttp2/nghttp2.h>

namespace wheelrpc::rpc::detail {

struct Http2SessionDeleter {
  void operator()(nghttp2_session* s) const noexcept { nghttp2_session_del(s); }
};
using Http2SessionPtr = std::unique_ptr<nghttp2_session, Http2SessionDeleter>;

/// Header fields to submit. nghttp2 copies them when they are submitted,
/// so a block may be a local of the submitting function.
class HeaderBlock {
 public:
  void add(std::string_view name, std::string_view value) {
    fields_.emplace_back(std::string(name), std::string(value));
  }
  bool empty() const noexcept { return fields_.empty(); }
  /// The fields as nghttp2 takes them; valid while this block lives unchanged.
  const std::vector<nghttp2_nv>& nv() {
    nv_.clear();
    nv_.reserve(fields_.size());
    for (auto& [n, v] : fields_) {
      nv_.push_back(nghttp2_nv{reinterpret_cast<std::uint8_t*>(n.data()), reinterpret_cast<std::uint8_t*>(v.data()),
                               n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    return nv_;
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
  std::vector<nghttp2_nv> nv_;
};

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

/// "ENHANCE_YOUR_CALM" and the like: an HTTP/2 error code's name.
inline std::string_view http2_error_name(std::uint32_t code) noexcept { return nghttp2_http2_strerror(code); }

}  // namespace wheelrpc::rpc::detail
