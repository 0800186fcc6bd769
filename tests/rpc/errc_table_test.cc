// One vocabulary for how a call ended (base/errc.cc): each errc's
// StatusCode, the native status byte a server sends for it and the code
// introspection counts it under, all from one table. Pinned here row by
// row: a change to the table is a change to the wire and the metrics.

#include <gtest/gtest.h>

#include <boost/asio/error.hpp>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/status_code.h>

#include "base/status_wire.h"

namespace {

using wheelrpc::rpc::CallCode;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Status;
using wheelrpc::rpc::status_code_of;
using wheelrpc::rpc::StatusCode;

Status code_byte(StatusCode c) {
  return static_cast<Status>(static_cast<int>(Status::first_code) + static_cast<int>(c));
}

struct Row {
  errc e;
  StatusCode code;
  Status wire;
  CallCode counted;
};

TEST(ErrcTable, EachErrcHasItsCodeItsStatusByteAndItsCountedCode) {
  const Row rows[] = {
      {errc::timeout, StatusCode::deadline_exceeded, Status::server_error, CallCode::timeout},
      {errc::server_timeout, StatusCode::deadline_exceeded, Status::server_timeout, CallCode::server_timeout},
      {errc::connection_lost, StatusCode::unavailable, Status::server_error, CallCode::connection_lost},
      {errc::unavailable, StatusCode::unavailable, Status::shutting_down, CallCode::unavailable},
      {errc::method_not_found, StatusCode::unimplemented, Status::method_not_found, CallCode::method_not_found},
      {errc::bad_request, StatusCode::invalid_argument, Status::bad_request, CallCode::bad_request},
      {errc::server_error, StatusCode::unknown, Status::server_error, CallCode::server_error},
      {errc::cancelled, StatusCode::cancelled, Status::server_error, CallCode::cancelled},
      {errc::too_many_pending, StatusCode::resource_exhausted, Status::overloaded, CallCode::too_many_pending},
      {errc::resource_exhausted, StatusCode::resource_exhausted, Status::overloaded, CallCode::resource_exhausted},
      {errc::message_timeout, StatusCode::deadline_exceeded, code_byte(StatusCode::deadline_exceeded),
       CallCode::timeout},
      {errc::write_stall, StatusCode::deadline_exceeded, code_byte(StatusCode::deadline_exceeded), CallCode::timeout},
      {errc::first_message_timeout, StatusCode::deadline_exceeded, code_byte(StatusCode::deadline_exceeded),
       CallCode::timeout},
      {errc::stream_closed, StatusCode::failed_precondition, code_byte(StatusCode::failed_precondition),
       CallCode::stream_misuse},
      {errc::stream_half_closed, StatusCode::failed_precondition, code_byte(StatusCode::failed_precondition),
       CallCode::stream_misuse},
      {errc::read_pending, StatusCode::failed_precondition, code_byte(StatusCode::failed_precondition),
       CallCode::stream_misuse},
      {errc::write_pending, StatusCode::failed_precondition, code_byte(StatusCode::failed_precondition),
       CallCode::stream_misuse},
  };
  for (const Row& r : rows) {
    const auto ec = make_error_code(r.e);
    SCOPED_TRACE(ec.message());
    EXPECT_EQ(status_code_of(ec), r.code);
    EXPECT_EQ(wheelrpc::rpc::error_status(ec), r.wire);
    EXPECT_EQ(wheelrpc::rpc::error_status(r.e), r.wire);
    EXPECT_EQ(wheelrpc::rpc::call_code(ec), r.counted);
    // The metrics' `code` label is the row's status: no errc counts under another.
    EXPECT_EQ(wheelrpc::rpc::call_status(r.counted), r.code);
    EXPECT_FALSE(ec.message().empty());
    EXPECT_EQ(ec.message().find("unknown"), std::string::npos);
  }
}

TEST(ErrcTable, ValuesOutsideTheTableAreUnknownNotAnotherRow) {
  const boost::system::error_code past(99, wheelrpc::rpc::rpc_category());
  EXPECT_EQ(status_code_of(past), StatusCode::unknown);
  EXPECT_EQ(wheelrpc::rpc::error_status(past), Status::server_error);
  EXPECT_EQ(wheelrpc::rpc::call_code(past), CallCode::other);
  EXPECT_NE(past.message().find("unknown wheelrpc.rpc error 99"), std::string::npos);
}

TEST(ErrcTable, AStatusCodeGoesOnTheNativeWireAsFirstCodePlusItAndComesBackAsItself) {
  for (int v = 1; v < wheelrpc::rpc::kStatusCodes; ++v) {
    const auto code = static_cast<StatusCode>(v);
    EXPECT_EQ(wheelrpc::rpc::detail::status_byte(code), code_byte(code));
    EXPECT_EQ(wheelrpc::rpc::error_status(make_error_code(code)), code_byte(code));
    EXPECT_EQ(status_code_of(wheelrpc::rpc::status_error(code_byte(code))), code);
  }
  // OK is no failure: a failure said with it (or a code out of range) answers UNKNOWN.
  EXPECT_EQ(wheelrpc::rpc::detail::status_byte(StatusCode::ok), code_byte(StatusCode::unknown));
  EXPECT_EQ(wheelrpc::rpc::detail::status_byte(static_cast<StatusCode>(40)), code_byte(StatusCode::unknown));
  EXPECT_EQ(wheelrpc::rpc::call_code(boost::asio::error::operation_aborted), CallCode::aborted);
  EXPECT_EQ(status_code_of(boost::asio::error::operation_aborted), StatusCode::cancelled);
}

}  // namespace
