#pragma once
// What a client's calls and streams are compressed with on the gRPC wire
// (docs/compression.md, "On the gRPC wire"): gRPC defines gzip and deflate
// (and identity); zstd and lz4 are wheelrpc's own, so a call that chose one
// of them goes as gzip, and the client says so once in its log.

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include <wheelrpc/transport/compression.h>

namespace wheelrpc::rpc::detail {

/// The algorithm a call or a stream's messages use on the gRPC wire, for the
/// one the call chose (CallOptions::compression, the IDL's, the client's
/// default): identity, gzip and deflate as they are; zstd and lz4, which no
/// gRPC peer decodes and grpc-encoding has no name for, gzip (every gRPC
/// implementation decodes it). Pure; any thread.
inline transport::Compression grpc_call_compression(transport::Compression chosen) noexcept {
  switch (chosen) {
    case transport::Compression::identity:
    case transport::Compression::gzip:
    case transport::Compression::deflate: return chosen;
    case transport::Compression::zstd:
    case transport::Compression::lz4: return transport::Compression::gzip;
  }
  return transport::Compression::identity;  // no Compression at all: nothing to compress with
}

/// The level for `sent` when the call chose `chosen` at `level`: the call's
/// own when no fallback happened; 0 (zlib's default, 6) for a fallback,
/// since the call's level is on zstd's or lz4's scale. Pure; any thread.
inline int grpc_call_compression_level(transport::Compression chosen, transport::Compression sent, int level) noexcept {
  return chosen == sent ? level : 0;
}

/// True the first time it is asked for `client` (an object every transport
/// of one client shares: its ClientWireSettings), false after, for as long
/// as that object lives: so that a client warns of its fallback once, not
/// once per connection or per call. Any thread; takes a process-wide lock,
/// so callers ask once per connection at most.
inline bool first_compression_fallback(const std::shared_ptr<const void>& client) {
  // Weak references: a client gone is forgotten, and its address, if a new
  // client gets it, is not mistaken for it (owner_before compares control
  // blocks). A handful of clients in a process fall back at most: a list.
  static std::mutex mu;
  static std::vector<std::weak_ptr<const void>> told;
  std::lock_guard lock(mu);
  std::erase_if(told, [](const std::weak_ptr<const void>& w) { return w.expired(); });
  const bool known = std::any_of(told.begin(), told.end(), [&](const std::weak_ptr<const void>& w) {
    return !w.owner_before(client) && !client.owner_before(w);
  });
  if (known) return false;
  told.emplace_back(client);
  return true;
}

}  // namespace wheelrpc::rpc::detail
