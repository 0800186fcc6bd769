/// Whether the last message a gRPC C++ call received had its compressed flag
/// set, for the interop peers' compression cases (grpcpp_interop_client.cc,
/// grpcpp_interop_server.cc).
///
/// The public grpc++ API does not tell: the core decompresses a message
/// before the application sees it. The core keeps the received message's
/// flags, though, and libgrpc exports a test-only accessor for them, which
/// gRPC's own interop peers use for the same purpose. It is declared in the
/// core's private headers (src/core/lib/surface/call_test_only.h, C++
/// linkage), not in the installed ones, so it is declared here;
/// CMakeLists.txt checks that it links before building the peers.
///
/// The two flag bits are the core's too (src/core/lib/transport/transport.h):
/// the message arrived compressed and is still compressed, or it arrived
/// compressed and the core inflated it.

#pragma once

#include <cstdint>

#include <grpc/grpc.h>

uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);

namespace interop {

inline constexpr uint32_t kInternalCompress = 0x80000000u;  // GRPC_WRITE_INTERNAL_COMPRESS
inline constexpr uint32_t kWasCompressed = 0x40000000u;     // GRPC_WRITE_INTERNAL_TEST_ONLY_WAS_COMPRESSED

/// True when the last message received on `call` had its compressed flag set.
inline bool last_message_compressed(grpc_call* call) {
  return (grpc_call_test_only_get_message_flags(call) & (kInternalCompress | kWasCompressed)) != 0;
}

}  // namespace interop
