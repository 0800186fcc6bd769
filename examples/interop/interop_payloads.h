#pragma once
/// What interop_server and interop_client share: payloads of zeros and the
/// names gRPC's interop cases use (doc: gRPC's interop-test-descriptions).

#include <string>
#include <string_view>

#include "grpc/testing/messages.pb.h"

namespace wheelrpc::interop {

/// The metadata the server echoes: into its initial metadata, and into its
/// trailing metadata (a binary key: its value is any bytes).
inline constexpr std::string_view kEchoInitialKey = "x-grpc-test-echo-initial";
inline constexpr std::string_view kEchoTrailingKey = "x-grpc-test-echo-trailing-bin";

/// A COMPRESSABLE payload of `size` zero bytes (a negative size: empty).
grpc::testing::Payload zero_payload(int size);

/// True when `body` is `size` zero bytes.
bool is_zeros(const std::string& body, std::size_t size);

}  // namespace wheelrpc::interop
