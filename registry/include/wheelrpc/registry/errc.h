#pragma once
/// Error codes of the registry module, category "wheelrpc.registry".

#include <boost/system/error_code.hpp>

namespace wheelrpc::registry {

enum class errc {
  bad_endpoint = 1,  ///< an endpoint list (`etcd://h1:p1,h2:p2`) could not be parsed
  timeout,           ///< a request's deadline passed before etcd answered
  unavailable,       ///< no endpoint could be reached (every one refused or timed out)
  bad_response,      ///< etcd's answer was not the JSON expected (invalid JSON, missing fields)
  http_error,        ///< etcd answered with an HTTP error status and no etcd error body
  etcd_error,        ///< etcd refused the request (e.g. "requested lease not found")
  truncated,         ///< the connection ended in the middle of an answer or a watch stream
  compacted,         ///< a watch's start revision was compacted: re-read, then watch again
  watch_canceled,    ///< etcd cancelled a watch for another reason than compaction
  watch_closed,      ///< etcd ended a watch stream cleanly
};

/// The category whose name is "wheelrpc.registry". Thread-safe.
const boost::system::error_category& registry_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), registry_category()}; }

}  // namespace wheelrpc::registry

template <>
struct boost::system::is_error_code_enum<wheelrpc::registry::errc> : std::true_type {};
