#include "load/tally.h"

#include <boost/asio/error.hpp>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::examples::load {

namespace rpc = wheelrpc::rpc;

std::string error_name(const boost::system::error_code& ec) {
  // A stream's timers and misuse by their own names (the metrics count the
  // timers as "timeout"); gRPC's codes by theirs.
  if (ec == rpc::errc::message_timeout) return "message_timeout";
  if (ec == rpc::errc::write_stall) return "write_stall";
  if (ec == rpc::errc::first_message_timeout) return "first_message_timeout";
  if (ec == rpc::errc::stream_closed) return "stream_closed";
  if (ec.category() == rpc::status_category()) return std::string(rpc::to_string(rpc::status_code_of(ec)));
  // The errc names (and "aborted"), as the metrics count them.
  if (const auto code = rpc::call_code(ec); code != rpc::CallCode::other) return std::string(rpc::call_code_name(code));
  return std::string(ec.category().name()) + ":" + std::to_string(ec.value());
}

void Tally::note_error(const std::string& name, const std::string& message) {
  ++errors[name];
  if (name == "timeout") ++timeouts;
  examples.try_emplace(name, message);
}

std::uint64_t Tally::total_errors() const {
  std::uint64_t n = 0;
  for (const auto& [name, count] : errors) n += count;
  return n;
}

void StreamTally::note_error(const std::string& name, const std::string& message) {
  ++errors[name];
  examples.try_emplace(name, message);
}

std::uint64_t StreamTally::total_errors() const {
  std::uint64_t n = 0;
  for (const auto& [name, count] : errors) n += count;
  return n;
}

}  // namespace wheelrpc::examples::load
