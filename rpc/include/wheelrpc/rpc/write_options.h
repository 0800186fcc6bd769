#pragma once
/// WriteOptions: how one stream message is sent.

namespace wheelrpc::rpc {

/// Per message: the options of one ClientStream / ServerStream async_write
/// (and of the typed streams' async_write). The default sends a message as
/// every other: compressed with the stream's algorithm when it passes the
/// threshold and shrinks (docs/compression.md).
struct WriteOptions {
  /// Send this message uncompressed, whatever the stream's compression
  /// (gRPC's WriteOptions::set_no_compression; its message goes with the
  /// compressed flag clear). Default false.
  bool no_compression = false;
};

}  // namespace wheelrpc::rpc
