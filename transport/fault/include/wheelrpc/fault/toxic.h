#pragma once
/// Toxics: the faults a FaultProxy injects into the bytes it forwards, modelled
/// on Toxiproxy's (same names, units and JSON attributes).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace wheelrpc::fault {

/// Which bytes a toxic acts on.
enum class Stream {
  upstream,    ///< client → server
  downstream,  ///< server → client (Toxiproxy's default)
  both,        ///< each direction, with separate state per direction
};

/// Delays each chunk read by `latency` ± a uniform random `jitter` (never
/// below 0). Order is preserved per direction: a chunk never overtakes an
/// earlier one, so with jitter a chunk may wait longer than its own draw.
struct Latency {
  std::chrono::milliseconds latency{0};  ///< JSON "latency" (ms), ≥ 0
  std::chrono::milliseconds jitter{0};   ///< JSON "jitter" (ms), ≥ 0
};

/// Limits the rate of the direction: a piece of n bytes leaves n / rate after
/// the previous one (pieces of at most 50 ms worth of bytes).
struct Bandwidth {
  std::uint64_t rate_kb_per_s = 0;  ///< JSON "rate": KB/s, 1 KB = 1000 bytes (Toxiproxy); ≥ 1
};

/// Keeps the connection open and forwards nothing: data read while it is active
/// is discarded (Toxiproxy's "timeout" toxic with timeout 0). End-of-stream is
/// held and passed on when the toxic is removed. No attributes.
struct Blackhole {};

/// Closes both sides of each connection with a TCP RST (SO_LINGER 0) `timeout`
/// after the toxic was added (existing connections) or after the connection was
/// accepted (new ones). The stream is ignored: a reset ends both directions.
struct ResetPeer {
  std::chrono::milliseconds timeout{0};  ///< JSON "timeout" (ms), ≥ 0; 0 = at once
};

/// Lets `bytes` more bytes pass in the direction (counted from when the toxic
/// met the connection), then closes the connection (FIN on both sides, after
/// those bytes were written).
struct LimitData {
  std::uint64_t bytes = 0;  ///< JSON "bytes"; 0 closes at the first byte
};

/// Splits each chunk into slices of `average_size` ± `size_variation` bytes,
/// written one by one `delay` apart.
struct Slicer {
  std::size_t average_size = 0;        ///< JSON "average_size" (bytes), ≥ 1
  std::size_t size_variation = 0;      ///< JSON "size_variation" (bytes), < average_size
  std::chrono::microseconds delay{0};  ///< JSON "delay" (µs), ≥ 0
};

/// A toxic's type and attributes.
using ToxicAttributes = std::variant<Latency, Bandwidth, Blackhole, ResetPeer, LimitData, Slicer>;

/// A toxic as added to a FaultProxy.
struct Toxic {
  /// Unique per proxy; 1..64 characters of [A-Za-z0-9_.-] (it appears in URLs).
  std::string name;
  /// Default: downstream, as in Toxiproxy.
  Stream stream = Stream::downstream;
  ToxicAttributes attributes;
};

/// A toxic on a proxy and how often it acted: chunks delayed, sliced, limited
/// or discarded, and connections reset or closed. Counted over all connections.
struct ToxicInfo {
  Toxic toxic;
  std::uint64_t applied = 0;
};

/// "latency", "bandwidth", "blackhole", "reset_peer", "limit_data", "slicer".
std::string_view type_name(const ToxicAttributes& attributes) noexcept;
/// "upstream", "downstream", "both".
std::string_view stream_name(Stream stream) noexcept;
/// Parses a stream name; false when it is none of the three.
bool parse_stream(std::string_view text, Stream& out) noexcept;
/// Empty when `toxic` may be added; otherwise why not, in words.
std::string validate(const Toxic& toxic);

}  // namespace wheelrpc::fault
