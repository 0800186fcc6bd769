#include <wheelrpc/transport/compression.h>

#include <array>
#include <charconv>
#include <limits>
#include <memory>
#include <stdexcept>

#include <wheelrpc/transport/errc.h>

#include "codecs.h"

namespace wheelrpc::transport {
namespace {

constexpr std::array<std::string_view, kCompressionCount> kNames = {"identity", "zstd", "lz4", "gzip", "deflate"};

/// min(max_output, max(ratio_floor, in_size x max_ratio)), saturating.
codec::OutputCap output_cap(const DecompressLimits& limits, std::size_t in_size) noexcept {
  codec::OutputCap cap;
  cap.bytes = limits.max_output;
  cap.max_output = limits.max_output;
  cap.max_ratio = limits.max_ratio;
  cap.in_size = in_size;
  if (limits.max_ratio != 0) {
    constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
    const std::size_t product = in_size > kMax / limits.max_ratio ? kMax : in_size * limits.max_ratio;
    const std::size_t by_ratio = product > limits.ratio_floor ? product : limits.ratio_floor;
    if (by_ratio < cap.bytes) {
      cap.bytes = by_ratio;
      cap.by_ratio = true;
    }
  }
  return cap;
}

/// "the body limit of N bytes" or "the ratio limit of R:1 (N bytes in)".
std::string limit_text(const codec::OutputCap& cap) {
  if (cap.by_ratio) {
    return "the ratio limit of " + std::to_string(cap.max_ratio) + ":1 (" + std::to_string(cap.in_size) + " bytes in)";
  }
  return "the body limit of " + std::to_string(cap.bytes) + " bytes";
}

boost::system::error_code fail(errc e, std::string_view alg, std::string_view what, std::string* why) {
  if (why != nullptr) {
    why->assign(alg);
    why->append(": ");
    why->append(what);
  }
  return make_error_code(e);
}

constexpr bool is_space(char ch) noexcept { return ch == ' ' || ch == '\t'; }

}  // namespace

std::string_view to_string(Compression c) noexcept {
  const auto v = static_cast<std::size_t>(c);
  return v < kNames.size() ? kNames[v] : std::string_view("unknown");
}

std::optional<Compression> parse_compression(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Compression>(i);
  }
  return std::nullopt;
}

bool parse_compression_spec(std::string_view text, Compression& c, int& level) noexcept {
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  std::optional<Compression> parsed = name == "none" ? Compression::identity : parse_compression(name);
  if (!parsed) return false;
  int parsed_level = 0;
  if (colon != std::string_view::npos) {
    const std::string_view digits = text.substr(colon + 1);
    if (digits.empty()) return false;
    const char* end = digits.data() + digits.size();
    const auto [ptr, ec] = std::from_chars(digits.data(), end, parsed_level);
    if (ec != std::errc() || ptr != end) return false;
  }
  c = *parsed;
  level = parsed_level;
  return true;
}

std::string CompressionSet::to_string() const {
  std::string out;
  for (int v = 1; v < kCompressionCount; ++v) {
    const auto c = static_cast<Compression>(v);
    if (!contains(c)) continue;
    if (!out.empty()) out += ',';
    out += transport::to_string(c);
  }
  return out;
}

CompressionSet CompressionSet::parse(std::string_view list) noexcept {
  CompressionSet set;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && is_space(item.front())) item.remove_prefix(1);
    while (!item.empty() && is_space(item.back())) item.remove_suffix(1);
    if (const auto c = parse_compression(item)) set.insert(*c);
  }
  return set;
}

void compress(Compression c, std::string_view in, int level, std::string& out) {
  switch (c) {
    case Compression::identity: out.append(in); return;
    case Compression::zstd: codec::zstd_compress(in, level, out); return;
    case Compression::lz4: codec::lz4_compress(in, level, out); return;
    case Compression::gzip: codec::zlib_compress(codec::ZlibFormat::gzip, in, level, out); return;
    case Compression::deflate: codec::zlib_compress(codec::ZlibFormat::zlib, in, level, out); return;
  }
  throw std::invalid_argument("compress: " + std::to_string(static_cast<unsigned>(c)) + " is no Compression");
}

boost::system::error_code decompress(Compression c, std::string_view in, const DecompressLimits& limits,
                                     std::string& out, std::string* why) {
  const codec::OutputCap cap = output_cap(limits, in.size());
  const std::string_view alg = to_string(c);
  boost::system::error_code ec;
  if (static_cast<std::size_t>(c) >= kNames.size()) {
    ec = codec::corrupt("compression " + std::to_string(static_cast<unsigned>(c)), "not known to this build", why);
  } else if (c == Compression::identity) {
    if (in.size() > cap.bytes) {
      ec = codec::declares_over(alg, in.size(), cap, why);
    } else {
      out.assign(in);
    }
  } else if (in.empty()) {
    ec = codec::corrupt(alg, "empty input", why);
  } else {
    switch (c) {
      case Compression::zstd: ec = codec::zstd_decompress(in, cap, out, why); break;
      case Compression::lz4: ec = codec::lz4_decompress(in, cap, out, why); break;
      case Compression::gzip: ec = codec::zlib_decompress(codec::ZlibFormat::gzip, in, cap, out, why); break;
      case Compression::deflate: ec = codec::zlib_decompress(codec::ZlibFormat::zlib, in, cap, out, why); break;
      case Compression::identity: break;
    }
  }
  if (ec) out.clear();
  return ec;
}

namespace codec {

std::span<char> scratch() {
  // Allocated on first use rather than a thread_local array: 64 KiB of static
  // TLS would be reserved in every thread of the process, decompressing or not.
  thread_local std::unique_ptr<char[]> buffer;
  if (!buffer) buffer = std::make_unique_for_overwrite<char[]>(kScratchSize);
  return {buffer.get(), kScratchSize};
}

boost::system::error_code inflates_past(std::string_view alg, const OutputCap& cap, std::string* why) {
  if (why == nullptr) return make_error_code(errc::decompressed_too_large);
  return fail(errc::decompressed_too_large, alg, "the payload inflates past " + limit_text(cap), why);
}

boost::system::error_code declares_over(std::string_view alg, std::uint64_t declared, const OutputCap& cap,
                                        std::string* why) {
  if (why == nullptr) return make_error_code(errc::decompressed_too_large);
  return fail(errc::decompressed_too_large, alg,
              "the payload declares " + std::to_string(declared) + " bytes, over " + limit_text(cap), why);
}

boost::system::error_code too_large(std::string_view alg, std::string_view what, std::string* why) {
  return fail(errc::decompressed_too_large, alg, what, why);
}

boost::system::error_code corrupt(std::string_view alg, std::string_view what, std::string* why) {
  return fail(errc::corrupt_compression, alg, what, why);
}

}  // namespace codec
}  // namespace wheelrpc::transport
