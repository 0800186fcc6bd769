#pragma once
// A reply's two kinds of metadata in one transport::Attachments: the initial
// metadata (gRPC's response HEADERS), then, when there is trailing metadata
// (gRPC's trailers), one marker entry and the trailing metadata after it.
// What reaches ServerTransport::send_reply and what a client transport hands
// the call engine (IncomingReply::attachments) have this shape: the native
// protocol carries it as it is (the marker is an ordinary attachment on the
// wire), the gRPC transport splits it into HEADERS and trailers, and the
// client splits it back before the user sees it (Response::attachments and
// Response::trailers). A stream's END carries the same shape: the initial
// metadata the server added if no message carried it, then the marker and
// the trailers.

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include <wheelrpc/rpc/response.h>
#include <wheelrpc/transport/attachments.h>

namespace wheelrpc::rpc::detail {

/// In a reply's metadata, the entry after which the trailing metadata
/// follows, its value empty: a key starting with ':' is never user metadata
/// (HTTP/2 reserves them for pseudo-headers), so it cannot clash with one.
inline constexpr std::string_view kTrailersMarker = ":trailers";

/// Appends the marker and `trailing` to `initial` when `trailing` is not
/// empty; `initial` is then what to send.
inline void join_trailers(transport::Attachments& initial, transport::Attachments&& trailing) {
  if (trailing.empty()) return;
  initial.reserve(initial.size() + 1 + trailing.size());
  initial.emplace_back(std::string(kTrailersMarker), std::string());
  for (auto& kv : trailing) initial.push_back(std::move(kv));
  trailing.clear();
}

/// Splits `all` at its first marker: `all` keeps what came before it (the
/// initial metadata), `trailing` gets what came after it (appended). Without
/// a marker, everything is initial metadata.
inline void split_trailers(transport::Attachments& all, transport::Attachments& trailing) {
  const auto marker = std::find_if(all.begin(), all.end(), [](const auto& kv) { return kv.first == kTrailersMarker; });
  if (marker == all.end()) return;
  for (auto it = marker + 1; it != all.end(); ++it) trailing.push_back(std::move(*it));
  all.erase(marker, all.end());
}

/// Where the user's metadata goes among `all`'s: before the marker, if
/// there is one (an interceptor's reply metadata is initial metadata).
inline transport::Attachments::iterator initial_end(transport::Attachments& all) {
  return std::find_if(all.begin(), all.end(), [](const auto& kv) { return kv.first == kTrailersMarker; });
}

/// A successful reply's payload and metadata (an IncomingReply's) into the
/// user's Response: the attachments split at the marker, and whether the
/// payload came compressed.
inline void take_reply(std::string& payload, transport::Attachments& attachments, bool compressed, Response& r) {
  r.payload = std::move(payload);
  r.attachments = std::move(attachments);
  split_trailers(r.attachments, r.trailers);
  r.compressed = compressed;
}

}  // namespace wheelrpc::rpc::detail
