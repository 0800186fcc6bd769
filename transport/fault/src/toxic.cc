#include <wheelrpc/fault/toxic.h>

#include <chrono>
#include <string>
#include <type_traits>

namespace wheelrpc::fault {
namespace {

constexpr std::size_t kMaxNameLength = 64;
// A day: long enough for any test, short enough that time_point sums never overflow.
constexpr std::chrono::milliseconds kMaxDelay = std::chrono::hours(24);

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

std::string check_delay(const char* what, std::chrono::microseconds d) {
  if (d.count() < 0) return std::string(what).append(" must not be negative");
  if (d > kMaxDelay) return std::string(what).append(" must be at most 86400000 ms");
  return {};
}

struct Validator {
  std::string operator()(const Latency& t) const {
    auto e = check_delay("latency", t.latency);
    return e.empty() ? check_delay("jitter", t.jitter) : e;
  }
  std::string operator()(const Bandwidth& t) const {
    if (t.rate_kb_per_s == 0) return "rate must be at least 1 KB/s";
    if (t.rate_kb_per_s > 100'000'000) return "rate must be at most 100000000 KB/s";
    return {};
  }
  std::string operator()(const Blackhole&) const { return {}; }
  std::string operator()(const ResetPeer& t) const { return check_delay("timeout", t.timeout); }
  std::string operator()(const LimitData&) const { return {}; }
  std::string operator()(const Slicer& t) const {
    if (t.average_size == 0) return "average_size must be at least 1";
    if (t.average_size > (std::size_t{1} << 30)) return "average_size must be at most 1073741824";
    if (t.size_variation >= t.average_size) return "size_variation must be less than average_size";
    return check_delay("delay", t.delay);
  }
};

}  // namespace

std::string_view type_name(const ToxicAttributes& attributes) noexcept {
  return std::visit(
      [](const auto& a) -> std::string_view {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, Latency>)
          return "latency";
        else if constexpr (std::is_same_v<T, Bandwidth>)
          return "bandwidth";
        else if constexpr (std::is_same_v<T, Blackhole>)
          return "blackhole";
        else if constexpr (std::is_same_v<T, ResetPeer>)
          return "reset_peer";
        else if constexpr (std::is_same_v<T, LimitData>)
          return "limit_data";
        else
          return "slicer";
      },
      attributes);
}

std::string_view stream_name(Stream stream) noexcept {
  switch (stream) {
    case Stream::upstream: return "upstream";
    case Stream::downstream: return "downstream";
    case Stream::both: return "both";
  }
  return "?";
}

bool parse_stream(std::string_view text, Stream& out) noexcept {
  for (Stream s : {Stream::upstream, Stream::downstream, Stream::both}) {
    if (text == stream_name(s)) {
      out = s;
      return true;
    }
  }
  return false;
}

std::string validate(const Toxic& toxic) {
  if (toxic.name.empty() || toxic.name.size() > kMaxNameLength) return "name must be 1 to 64 characters";
  for (char c : toxic.name) {
    if (!name_char(c)) return "name may only contain letters, digits, '_', '-' and '.'";
  }
  if (toxic.stream != Stream::upstream && toxic.stream != Stream::downstream && toxic.stream != Stream::both) {
    return "stream must be upstream, downstream or both";
  }
  return std::visit(Validator{}, toxic.attributes);
}

}  // namespace wheelrpc::fault
