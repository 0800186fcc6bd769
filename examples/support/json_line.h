#pragma once
/// JsonLine: one JSON object printed as one line, for the load generator's
/// --json output (examples/load) and the benchmarks' results (bench/).

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>
#include <boost/json/value.hpp>

namespace wheelrpc::support {

/// Builds one JSON object, members in the order they are added. Keys,
/// strings, integers and nested values (`value`: objects, arrays) are written
/// by Boost.JSON; a double is written with a fixed number of decimals
/// ("12.345"), which Boost.JSON cannot do (it writes 1.2345E1), and as null
/// when it is not finite.
///
/// Thread safety: distinct objects safe, shared objects unsafe.
///
/// Example:
///   JsonLine().str("workload", "echo").num("calls", 1000).num("p50_us", 87.25, 1).print();
///   // {"workload":"echo","calls":1000,"p50_us":87.2}
class JsonLine {
 public:
  JsonLine& str(std::string_view k, std::string_view v) {
    return raw(k, boost::json::serialize(boost::json::string_view(v)));
  }
  /// `v` with `decimals` digits after the point (3 by default), like the peers.
  JsonLine& num(std::string_view k, double v, int decimals = 3) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return raw(k, std::isfinite(v) ? buf : "null");
  }
  JsonLine& num(std::string_view k, long long v) { return value(k, v); }
  JsonLine& num(std::string_view k, unsigned long long v) { return value(k, v); }
  JsonLine& num(std::string_view k, int v) { return num(k, static_cast<long long>(v)); }
  JsonLine& num(std::string_view k, long v) { return num(k, static_cast<long long>(v)); }
  JsonLine& num(std::string_view k, unsigned v) { return num(k, static_cast<unsigned long long>(v)); }
  JsonLine& num(std::string_view k, unsigned long v) { return num(k, static_cast<unsigned long long>(v)); }
  /// Any JSON value (an object, an array, ...), as Boost.JSON serializes it.
  JsonLine& value(std::string_view k, const boost::json::value& v) { return raw(k, boost::json::serialize(v)); }

  /// The object, without a newline.
  std::string text() const { return out_ + "}"; }
  /// Prints the object and a newline on stdout, and flushes.
  void print() const {
    std::printf("%s}\n", out_.c_str());
    std::fflush(stdout);
  }

 private:
  JsonLine& raw(std::string_view k, std::string_view json) {
    if (out_.size() > 1) out_ += ',';
    out_ += boost::json::serialize(boost::json::string_view(k));
    out_ += ':';
    out_ += json;
    return *this;
  }

  std::string out_ = "{";
};

}  // namespace wheelrpc::support
