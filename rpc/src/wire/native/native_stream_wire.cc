#include "wire/native/native_stream_wire.h"

#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>

#include "wire/native/native_stream_frames.h"

namespace wheelrpc::rpc::detail {
using boost::system::error_code;

error_code NativeStreamWire::send_message(std::uint64_t id, std::string& payload, std::uint8_t encoding,
                                          transport::Attachments& initial) {
  auto f = make_stream_frame(StreamOp::message, id, client_);
  f.header.encoding = encoding;
  f.payload = std::move(payload);
  f.attachments = std::move(initial);
  const error_code ec = channel_->send(f);
  payload = std::move(f.payload);
  return ec;
}

error_code NativeStreamWire::send_half_close(std::uint64_t id) {
  auto f = make_stream_frame(StreamOp::half_close, id, true);
  return channel_->send(f);
}

error_code NativeStreamWire::send_credit(std::uint64_t id, std::uint32_t bytes) {
  auto f = make_stream_frame(StreamOp::credit, id, client_);
  f.header.deadline_ms = bytes;
  return channel_->send(f);
}

error_code NativeStreamWire::send_end(std::uint64_t id, const error_code& ec, std::string& message,
                                      transport::Attachments& metadata) {
  auto f = make_stream_frame(StreamOp::end, id, false);
  f.header.status = static_cast<std::uint8_t>(ec ? error_status(ec) : Status::ok);
  f.payload = std::move(message);
  f.attachments = std::move(metadata);
  return channel_->send(f);
}

error_code NativeStreamWire::send_reset(std::uint64_t id) {
  auto f = make_stream_frame(StreamOp::reset, id, true);
  return channel_->send(f);
}

error_code NativeStreamWire::send_open_answer(std::uint64_t id, const error_code& ec, std::string& message) {
  auto f = make_stream_frame(StreamOp::open, id, false);
  f.header.status = static_cast<std::uint8_t>(ec ? error_status(ec) : Status::ok);
  f.payload = std::move(message);
  return channel_->send(f);
}

void deliver_stream_frame(StreamCore& stream, transport::Frame& f) {
  switch (stream_op(f)) {
    case StreamOp::message: {
      stream.on_message(f.payload, f.header.encoding, &f.attachments);
      break;
    }
    case StreamOp::credit: stream.on_credit(f.header.deadline_ms); break;
    case StreamOp::half_close: stream.on_half_close(); break;
    case StreamOp::end: {
      const auto status = static_cast<Status>(f.header.status);
      stream.on_end(status == Status::ok ? error_code{} : status_error(status), std::move(f.payload), f.attachments);
      break;
    }
    case StreamOp::reset: stream.on_reset(); break;
    default: stream.on_bad_operation(fmt::format("unknown stream frame op {}", f.header.stream_op)); break;
  }
}

}  // namespace wheelrpc::rpc::detail
