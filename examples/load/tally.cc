#include "load/tally.h"

#include <cctype>
#include <string_view>

#include <boost/asio/error.hpp>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/introspection.h>

namespace wheelrpc::examples::load {

namespace rpc = wheelrpc::rpc;

namespace {

/// Replaces every run of digits by '#', so that messages differing only in
/// numbers ("after 50 ms" / "after 51 ms") count as one.
std::string digits_folded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string error_name(const boost::system::error_code& ec) {
  // The errc names (and "aborted"), as the metrics count them.
  if (const auto code = rpc::call_code(ec); code != rpc::CallCode::other) return std::string(rpc::call_code_name(code));
  return std::string(ec.category().name()) + ":" + std::to_string(ec.value());
}

void Tally::note_error(const std::string& name, const std::string& message) {
  ++errors[name];
  if (name == "timeout") ++timeouts;
  if (first_messages.size() < 3 && seen_messages_.insert(name + "|" + digits_folded(message)).second) {
    first_messages.push_back(name + ": " + message);
  }
}

std::uint64_t Tally::total_errors() const {
  std::uint64_t n = 0;
  for (const auto& [name, count] : errors) n += count;
  return n;
}

}  // namespace wheelrpc::examples::load
