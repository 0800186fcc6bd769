#include "wire/grpc/grpc_wire.h"

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>

#include "base/status_wire.h"

namespace wheelrpc::rpc::detail {

std::optional<std::chrono::milliseconds> parse_grpc_timeout(std::string_view value) noexcept {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max() / 3'600'000;
  const auto ms = [&](std::uint64_t per_unit_ms) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(n, kMax) * per_unit_ms));
  };
  switch (value.back()) {
    case 'H': return ms(3'600'000);
    case 'M': return ms(60'000);
    case 'S': return ms(1000);
    case 'm': return std::chrono::milliseconds(static_cast<std::int64_t>(n));
    // Below a millisecond: rounded up, so a budget never grows nor becomes none.
    case 'u': return std::chrono::milliseconds(static_cast<std::int64_t>((n + 999) / 1000));
    case 'n': return std::chrono::milliseconds(static_cast<std::int64_t>((n + 999'999) / 1'000'000));
    default: return std::nullopt;
  }
}

std::string format_grpc_timeout(std::chrono::milliseconds budget) {
  constexpr std::int64_t kMaxDigits = 99'999'999;
  std::int64_t v = std::max<std::int64_t>(budget.count(), 1);
  if (v <= kMaxDigits) return fmt::format("{}m", v);
  const std::array<std::pair<std::int64_t, char>, 3> units{{{1000, 'S'}, {60, 'M'}, {60, 'H'}}};
  for (const auto& [per, unit] : units) {
    v = v / per + (v % per != 0 ? 1 : 0);  // rounded up, without overflowing near the maximum
    if (v <= kMaxDigits) return fmt::format("{}{}", v, unit);
  }
  return fmt::format("{}H", kMaxDigits);
}

std::string percent_encode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

namespace {
int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // '-' and '_': the URL-safe alphabet, which some clients send
  if (c == '/' || c == '_') return 63;
  return -1;
}
}  // namespace

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto at = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out.push_back(kBase64[v >> 18 & 63]);
    out.push_back(kBase64[v >> 12 & 63]);
    out.push_back(kBase64[v >> 6 & 63]);
    out.push_back(kBase64[v & 63]);
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    const std::uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
    out.push_back(kBase64[v >> 18 & 63]);
    out.push_back(kBase64[v >> 12 & 63]);
    out.push_back(rest == 2 ? kBase64[v >> 6 & 63] : '=');
    out.push_back('=');
  }
  return out;
}

bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = base64_value(c);
    if (v < 0) return false;
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>(acc >> bits & 0xff));
    }
  }
  return bits < 6;  // one leftover character is no byte at all
}

bool is_reserved_header(std::string_view name) noexcept {
  if (name.empty() || name[0] == ':') return true;
  if (name == "content-type" || name == "te" || name == "user-agent" || name == "content-length") return true;
  if (name == "grpc-status-details-bin") return false;  // metadata a handler may set
  if (name == kKindHeader) return true;
  return name.substr(0, 5) == "grpc-";
}

bool valid_metadata_key(std::string_view key) noexcept {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

StatusCode grpc_code_of(Status status) noexcept { return status_code_of(status_error(status)); }

Status status_of_grpc(int code) noexcept {
  if (code < 0 || code >= kStatusCodes) code = static_cast<int>(StatusCode::unknown);
  switch (static_cast<StatusCode>(code)) {
    case StatusCode::ok: return Status::ok;
    case StatusCode::deadline_exceeded: return Status::server_timeout;
    case StatusCode::unimplemented: return Status::method_not_found;
    case StatusCode::resource_exhausted: return Status::overloaded;
    default: return status_byte(static_cast<StatusCode>(code));
  }
}

std::optional<transport::Compression> parse_grpc_encoding(std::string_view name) noexcept {
  if (name == "identity") return transport::Compression::identity;
  if (name == "gzip") return transport::Compression::gzip;
  if (name == "deflate") return transport::Compression::deflate;
  return std::nullopt;
}

std::string_view grpc_encoding_name(transport::Compression c) noexcept {
  switch (c) {
    case transport::Compression::gzip: return "gzip";
    case transport::Compression::deflate: return "deflate";
    default: return "identity";
  }
}

transport::CompressionSet parse_grpc_accept_encoding(std::string_view value) noexcept {
  transport::CompressionSet set;
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view name = value.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (auto c = parse_grpc_encoding(name)) set.insert(*c);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return set;
}

std::string grpc_accept_encoding(transport::CompressionSet set) {
  std::string out = "identity";
  for (auto c : {transport::Compression::gzip, transport::Compression::deflate}) {
    if (set.contains(c)) {
      out += ',';
      out += grpc_encoding_name(c);
    }
  }
  return out;
}

void append_grpc_prefix(std::string& out, bool compressed, std::size_t length) {
  const auto n = static_cast<std::uint32_t>(length);
  out.push_back(compressed ? '\1' : '\0');
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16 & 0xff));
  out.push_back(static_cast<char>(n >> 8 & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
}

bool GrpcMessageReader::feed(std::string_view bytes, const OnMessage& on_message) {
  if (!error_.empty()) return false;
  while (!bytes.empty()) {
    if (have_ < kGrpcPrefix) {
      const std::size_t take = std::min(kGrpcPrefix - have_, bytes.size());
      std::copy_n(bytes.data(), take, prefix_ + have_);
      have_ += take;
      bytes.remove_prefix(take);
      if (have_ < kGrpcPrefix) return true;
      if (prefix_[0] > 1) {
        error_ = fmt::format("a message's compressed flag is {} (0 or 1)", prefix_[0]);
        error_code_ = StatusCode::internal;
        return false;
      }
      compressed_ = prefix_[0] == 1;
      length_ = static_cast<std::uint32_t>(prefix_[1]) << 24 | static_cast<std::uint32_t>(prefix_[2]) << 16 |
                static_cast<std::uint32_t>(prefix_[3]) << 8 | prefix_[4];
      if (length_ > max_) {
        error_ = fmt::format("a message of {} bytes exceeds the limit of {} bytes", length_, max_);
        error_code_ = StatusCode::resource_exhausted;
        return false;
      }
      body_.clear();
    }
    const std::size_t take = std::min<std::size_t>(length_ - body_.size(), bytes.size());
    body_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (body_.size() == length_) {
      have_ = 0;
      on_message(body_, compressed_);
      body_.clear();
    }
  }
  return true;
}

}  // namespace wheelrpc::rpc::detail
