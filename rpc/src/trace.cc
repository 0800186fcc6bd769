#include <wheelrpc/rpc/trace.h>

#include <chrono>
#include <random>

namespace wheelrpc::rpc {
namespace {

thread_local std::optional<TraceContext> t_trace;

/// splitmix64 over a per-thread state seeded from the random device once.
std::uint64_t next_random() noexcept {
  thread_local std::uint64_t state = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& out) noexcept {
  for (std::size_t i = 0; i < N; i += 8) {
    std::uint64_t r = next_random();
    for (std::size_t j = 0; j < 8 && i + j < N; ++j) out[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
  }
  if (out[0] == 0) out[0] = 1;  // never all zero (invalid in W3C)
}

constexpr char kHex[] = "0123456789abcdef";

template <std::size_t N>
void put_hex(std::string& s, const std::array<std::uint8_t, N>& bytes) {
  for (auto b : bytes) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is invalid in version 00
}

template <std::size_t N>
bool get_hex(std::string_view s, std::array<std::uint8_t, N>& out) noexcept {
  if (s.size() != 2 * N) return false;
  bool nonzero = false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    nonzero = nonzero || out[i] != 0;
  }
  return nonzero;
}

}  // namespace

TraceContext TraceContext::make_root() noexcept {
  TraceContext t;
  fill_random(t.trace_id);
  fill_random(t.parent_id);
  return t;
}

TraceContext TraceContext::child() const noexcept {
  TraceContext t = *this;
  fill_random(t.parent_id);
  return t;
}

std::optional<TraceContext> TraceContext::parse(std::string_view s) noexcept {
  // 00-<32>-<16>-<2>
  if (s.size() != 55 || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-') {
    return std::nullopt;
  }
  TraceContext t;
  if (!get_hex(s.substr(3, 32), t.trace_id) || !get_hex(s.substr(36, 16), t.parent_id)) return std::nullopt;
  const int hi = hex_value(s[53]), lo = hex_value(s[54]);
  if (hi < 0 || lo < 0) return std::nullopt;
  t.flags = static_cast<std::uint8_t>(hi << 4 | lo);
  return t;
}

std::string TraceContext::traceparent() const {
  std::string s;
  s.reserve(55);
  s.append("00-");
  put_hex(s, trace_id);
  s.push_back('-');
  put_hex(s, parent_id);
  s.push_back('-');
  s.push_back(kHex[flags >> 4]);
  s.push_back(kHex[flags & 15]);
  return s;
}

std::string TraceContext::trace_id_hex() const {
  std::string s;
  s.reserve(32);
  put_hex(s, trace_id);
  return s;
}

std::optional<TraceContext> current_trace() noexcept { return t_trace; }

TraceScope::TraceScope(std::optional<TraceContext> trace) noexcept : previous_(t_trace) { t_trace = trace; }
TraceScope::~TraceScope() { t_trace = previous_; }

}  // namespace wheelrpc::rpc
