#include "base/payload_coding.h"

#include <fmt/format.h>

#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/transport/errc.h>

namespace wheelrpc::rpc::detail {

using transport::Compression;

std::string& compression_scratch() {
  thread_local std::string scratch;
  return scratch;
}

Compression compress_payload(std::string_view payload, Compression c, int level, std::size_t threshold,
                             transport::CompressionSet peer, std::string& out) {
  if (c == Compression::identity || payload.empty() || payload.size() < threshold || !peer.contains(c)) {
    return Compression::identity;
  }
  out.clear();
  transport::compress(c, payload, level, out);
  // Incompressible (already compressed, random): the receiver is spared
  // the work, and the wire the bytes.
  return out.size() < payload.size() ? c : Compression::identity;
}

boost::system::error_code decompress_payload(std::uint8_t encoding, std::string& payload, const PayloadCoding& coding,
                                             std::size_t max_output, std::string_view what, std::string& why) {
  if (encoding >= transport::kCompressionCount) {
    why = fmt::format("{} is compressed with an unknown algorithm ({})", what, encoding);
    return make_error_code(StatusCode::invalid_argument);
  }
  const auto c = static_cast<Compression>(encoding);
  if (!coding.accept.contains(c)) {
    why = fmt::format("{} is compressed with {}, which this side did not announce (it decodes: {})", what,
                      transport::to_string(c),
                      coding.accept.empty() ? std::string("nothing compressed") : coding.accept.to_string());
    return make_error_code(StatusCode::invalid_argument);
  }
  transport::DecompressLimits limits;
  limits.max_output = max_output;
  limits.max_ratio = coding.max_ratio;
  std::string out;
  std::string detail;
  const auto ec = transport::decompress(c, payload, limits, out, &detail);
  if (!ec) {
    payload.swap(out);
    return {};
  }
  if (ec == transport::errc::decompressed_too_large) {
    why = fmt::format("{} ({} bytes compressed) refused: {}", what, payload.size(), detail);
    return make_error_code(StatusCode::resource_exhausted);
  }
  why = fmt::format("{} does not decompress ({} bytes): {}", what, payload.size(), detail);
  return make_error_code(StatusCode::data_loss);
}

}  // namespace wheelrpc::rpc::detail
