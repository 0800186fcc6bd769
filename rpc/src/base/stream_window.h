#pragma once
// The bounds of a stream's credit window (bytes): what ClientOptions::
// stream_window and ServerStreamOptions::window may be, what a peer's
// handshake may say, and what the stream engine grants. Defined once, here,
// where the options' checks (base/, server/) and the stream seam
// (stream/stream_wire.h) can all see them.

#include <cstdint>

namespace wheelrpc::rpc::detail {

inline constexpr std::uint32_t kMinStreamWindow = 1024;
inline constexpr std::uint32_t kMaxStreamWindow = 1u << 30;

}  // namespace wheelrpc::rpc::detail
