#pragma once
/// Error codes of the transport module, category "wheelrpc.transport".

#include <string>

#include <boost/system/error_code.hpp>

namespace wheelrpc::transport {

enum class errc {
  bad_magic = 1,           ///< a frame did not start with the protocol's magic number
  unsupported_version,     ///< a frame's version is not one this build speaks
  body_too_large,          ///< a frame's body length exceeds the configured limit
  malformed_frame,         ///< a frame's body is inconsistent (lengths overrun the body, ...)
  closed,                  ///< the channel was closed locally
  write_queue_full,        ///< the bounded write queue is full (back-pressure)
  connect_timeout,         ///< a connection attempt took longer than its timeout
  idle_timeout,            ///< closed after reading nothing for too long
  protocol_error,          ///< the peer broke the protocol (e.g. no HELLO first)
  tls_handshake_failed,    ///< the TLS handshake failed (the close reason names why: unknown CA, name mismatch, ...)
  tls_required,            ///< the peer speaks TLS and this end plaintext
  tls_not_spoken,          ///< this end speaks TLS and the peer plaintext
  decompressed_too_large,  ///< a compressed payload inflates past the body or ratio limit (compression.h)
  corrupt_compression,     ///< a compressed payload is not a valid stream of its algorithm (compression.h)
};

/// The category whose name is "wheelrpc.transport". Thread-safe.
const boost::system::error_category& transport_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), transport_category()};
}

}  // namespace wheelrpc::transport

template <>
struct boost::system::is_error_code_enum<wheelrpc::transport::errc> : std::true_type {};
