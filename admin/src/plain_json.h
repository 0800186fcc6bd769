#pragma once
/// plain_json: JSON text for the admin answers with numbers as people write
/// them. Boost.JSON writes every double in exponent form ("5E1", "1.02E1");
/// this writes a double with an integral value as an integer ("50") and any
/// other in plain decimal form, shortest round-trip ("10.2", "0.001"), as
/// JavaScript does from 1e-7 up to 1e21 (beyond, in exponent form: "1e+21"),
/// and a value that is not finite as null. Strings, keys, integers, booleans and
/// null are written as Boost.JSON writes them.

#include <string>

#include <boost/json/value.hpp>

namespace wheelrpc::admin::detail {

/// `v` as one line of JSON text, without a trailing newline. Thread-safe.
std::string plain_json(const boost::json::value& v);

}  // namespace wheelrpc::admin::detail
