#pragma once
// Which HTTP headers of a gateway request (POST /rpc/METHOD) the called
// method sees as its call metadata: a pure function of the header list, so
// the rule is tested without a socket.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <wheelrpc/transport/attachments.h>

namespace wheelrpc::admin::detail {

/// The call metadata of a gateway request with `headers` (names
/// lower-cased, in order; HttpRequest::headers), in their order:
///
/// - `authorization`, as is (what BearerAuthInterceptor reads);
/// - `traceparent`, when it is a valid W3C traceparent (the call then
///   continues the caller's trace);
/// - `x-*` headers, under their own (lower-case) name, but for the
///   gateway's own `x-wheelrpc-*` (X-Wheelrpc-Timeout-Ms);
/// - `grpc-metadata-<key>` (grpc-gateway's convention) as `<key>`.
///
/// Never a hop-by-hop or framing header (connection, keep-alive, te,
/// trailer, transfer-encoding, upgrade, proxy-*, host, content-length,
/// content-type), not even through `grpc-metadata-`; never a key gRPC
/// reserves (`grpc-*`) or one outside gRPC's key alphabet (0-9 a-z - _ .);
/// never a value holding a control character. Every other header is
/// dropped.
transport::Attachments gateway_metadata(const std::vector<std::pair<std::string, std::string>>& headers);

/// Whether `key` (lower-case) is a header the gateway never passes on as
/// metadata: hop-by-hop, framing, or reserved by gRPC.
bool is_gateway_excluded_key(std::string_view key) noexcept;

}  // namespace wheelrpc::admin::detail
