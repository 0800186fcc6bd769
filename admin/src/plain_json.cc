#include "plain_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>

namespace wheelrpc::admin::detail {

namespace json = boost::json;

namespace {

void write_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  // As JavaScript writes numbers: plain form from 1e-7 up to 1e21 (the
  // shortest that reads back as `d`), exponent form only beyond, where plain
  // digits would be unreadable (and some parsers lose them).
  char buf[64];
  const double a = std::fabs(d);
  const auto r = a == 0 || (a >= 1e-7 && a < 1e21) ? std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed)
                                                   : std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, r.ptr);
}

void write(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::double_: write_double(out, v.get_double()); return;
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out += ',';
        first = false;
        write(out, e);
      }
      out += ']';
      return;
    }
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, e] : v.get_object()) {
        if (!first) out += ',';
        first = false;
        out += json::serialize(json::string_view(key));
        out += ':';
        write(out, e);
      }
      out += '}';
      return;
    }
    default:  // null, bool, integers, strings
      out += json::serialize(v);
      return;
  }
}

}  // namespace

std::string plain_json(const json::value& v) {
  std::string out;
  write(out, v);
  return out;
}

}  // namespace wheelrpc::admin::detail
