#pragma once
/// The two messages of grpc.health.v1.Health (gRPC's health.proto), encoded
/// and decoded by hand: the RPC library speaks them without libprotobuf.
///
///   message HealthCheckRequest { string service = 1; }
///   message HealthCheckResponse { ServingStatus status = 1; }
///   enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wheelrpc::rpc::detail {

/// The service's wire paths.
inline constexpr std::string_view kHealthCheckPath = "/grpc.health.v1.Health/Check";
inline constexpr std::string_view kHealthWatchPath = "/grpc.health.v1.Health/Watch";

/// The longest service name a request may carry (gRPC's own server's
/// limit, MAX_SERVICE_NAME_LENGTH): a longer one is INVALID_ARGUMENT.
inline constexpr std::size_t kMaxHealthServiceName = 200;

/// A HealthCheckRequest for `service` ("" : the server as a whole).
std::string encode_health_request(std::string_view service);
/// Parses a HealthCheckRequest: false for malformed bytes (a truncated field,
/// a bad wire type, a length past the end); unknown fields are skipped, as
/// protobuf does (a field 1 of another wire type too: protobuf keeps it as
/// an unknown field); a repeated `service` keeps the last, as protobuf does.
bool decode_health_request(std::string_view bytes, std::string& service);

/// A HealthCheckResponse carrying `status` (a ServingStatus value; 0, the
/// default, encodes as no bytes at all, as protobuf does).
std::string encode_health_response(std::uint32_t status);
/// Parses a HealthCheckResponse into its status value (0 when absent); false
/// for malformed bytes. Values past SERVICE_UNKNOWN are passed on as they
/// came (an open enum); the caller decides what an unknown value means.
bool decode_health_response(std::string_view bytes, std::uint32_t& status);

}  // namespace wheelrpc::rpc::detail
