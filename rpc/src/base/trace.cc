#include <wheelrpc/rpc/trace.h>

#include <wheelrpc/rpc/detail/lazy_trace.h>
#include <wheelrpc/rpc/routing_tag.h>

#include <array>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <random>

namespace wheelrpc::rpc {
namespace {

thread_local std::optional<TraceContext> t_trace;
// A request's traceparent put in force by a LazyTraceScope and not parsed
// yet: current_trace() parses it into t_trace on first use.
thread_local bool t_raw_pending = false;
thread_local std::array<char, TraceContext::kTraceparentSize> t_raw;
// The routing tag in force (routing_tag.h).
thread_local RoutingTag t_tag;

bool tag_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}
std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

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

// Lower-case hex digit values, -1 for anything else (upper case is invalid in
// version 00): one load per character, no branch on the digit's kind, which a
// random trace id would mispredict about every third character.
constexpr std::array<std::int8_t, 256> kHexValue = [] {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - 'a' + 10);
  return t;
}();

int hex_value(char c) noexcept { return kHexValue[static_cast<unsigned char>(c)]; }

template <std::size_t N>
char* put_hex(char* out, const std::array<std::uint8_t, N>& bytes) noexcept {
  for (auto b : bytes) {
    *out++ = kHex[b >> 4];
    *out++ = kHex[b & 15];
  }
  return out;
}

// Decodes 2N hex digits; false on a bad digit or an all-zero id. The digits'
// validity is checked once for the whole run (an OR of the values' signs).
template <std::size_t N>
bool get_hex(const char* s, std::array<std::uint8_t, N>& out) noexcept {
  int bad = 0;
  unsigned any = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    bad |= hi | lo;
    out[i] = static_cast<std::uint8_t>(hi << 4 | (lo & 15));
    any |= out[i];
  }
  return bad >= 0 && any != 0;
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
  if (!get_hex(s.data() + 3, t.trace_id) || !get_hex(s.data() + 36, t.parent_id)) return std::nullopt;
  const int hi = hex_value(s[53]), lo = hex_value(s[54]);
  if (hi < 0 || lo < 0) return std::nullopt;
  t.flags = static_cast<std::uint8_t>(hi << 4 | lo);
  return t;
}

void TraceContext::write_traceparent(char* out) const noexcept {
  char* p = out;
  *p++ = '0';
  *p++ = '0';
  *p++ = '-';
  p = put_hex(p, trace_id);
  *p++ = '-';
  p = put_hex(p, parent_id);
  *p++ = '-';
  *p++ = kHex[flags >> 4];
  *p = kHex[flags & 15];
}

std::string TraceContext::traceparent() const {
  std::string s(kTraceparentSize, '-');
  write_traceparent(s.data());
  return s;
}

std::string TraceContext::trace_id_hex() const {
  std::string s(32, '0');
  put_hex(s.data(), trace_id);
  return s;
}

std::optional<TraceContext> current_trace() noexcept {
  if (t_raw_pending) [[unlikely]] {
    t_raw_pending = false;
    t_trace = TraceContext::parse(std::string_view(t_raw.data(), t_raw.size()));
  }
  return t_trace;
}

TraceScope::TraceScope(std::optional<TraceContext> trace) noexcept : previous_(current_trace()) { t_trace = trace; }
TraceScope::~TraceScope() { t_trace = previous_; }

namespace detail {

LazyTraceScope::LazyTraceScope(const LazyTrace& trace) noexcept
    : previous_pending_(t_raw_pending), previous_tag_(t_tag) {
  t_tag = trace.tag();
  if (previous_pending_) {
    previous_raw_ = t_raw;  // not parsed: nothing asked for it yet
  } else {
    previous_ = t_trace;
  }
  if (trace.present()) {
    std::memcpy(t_raw.data(), trace.raw().data(), t_raw.size());
    t_raw_pending = true;
  } else {
    t_raw_pending = false;
    t_trace.reset();
  }
}

LazyTraceScope::~LazyTraceScope() {
  t_tag = previous_tag_;
  if (previous_pending_) {
    t_raw = previous_raw_;
    t_raw_pending = true;
  } else {
    t_raw_pending = false;
    t_trace = previous_;
  }
}

}  // namespace detail

std::optional<RoutingTag> RoutingTag::make(std::string_view name) noexcept {
  if (name.size() > kMaxSize) return std::nullopt;
  for (const char c : name)
    if (!tag_char(c)) return std::nullopt;
  RoutingTag t;
  std::memcpy(t.chars_, name.data(), name.size());
  t.size_ = static_cast<std::uint8_t>(name.size());
  return t;
}

RoutingTag RoutingTag::from_baggage(std::string_view baggage) noexcept {
  while (!baggage.empty()) {
    const auto comma = baggage.find(',');
    std::string_view member = baggage.substr(0, comma);
    baggage = comma == std::string_view::npos ? std::string_view() : baggage.substr(comma + 1);
    member = member.substr(0, member.find(';'));  // properties do not matter here
    const auto eq = member.find('=');
    if (eq == std::string_view::npos || trim(member.substr(0, eq)) != kTagBaggageName) continue;
    if (auto tag = make(trim(member.substr(eq + 1)))) return *tag;
    return {};
  }
  return {};
}

const RoutingTag& current_routing_tag() noexcept { return t_tag; }

RoutingTagScope::RoutingTagScope(RoutingTag tag) noexcept : previous_(t_tag) { t_tag = tag; }
RoutingTagScope::~RoutingTagScope() { t_tag = previous_; }

}  // namespace wheelrpc::rpc
