#pragma once
/// Error codes of the fault-injection module, category "wheelrpc.fault".

#include <type_traits>

#include <boost/system/error_code.hpp>

namespace wheelrpc::fault {

enum class errc {
  toxic_exists = 1,  ///< a toxic of that name is already on the proxy
  no_such_toxic,     ///< no toxic of that name is on the proxy
  invalid_toxic,     ///< a toxic's name, stream or attributes are out of range
  stopped,           ///< the proxy was stopped; it does not start again
  not_started,       ///< `up()` before `start()`
};

/// The category whose name is "wheelrpc.fault". Thread-safe.
const boost::system::error_category& fault_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), fault_category()}; }

}  // namespace wheelrpc::fault

template <>
struct boost::system::is_error_code_enum<wheelrpc::fault::errc> : std::true_type {};
