#pragma once
// A stream on the native wire (docs/protocol.md, "Streams"): its operations
// said as frames on the connection's channel (NativeStreamWire), and the
// frames that come turned back into operations (deliver_stream_frame).

#include <cstdint>
#include <memory>
#include <string>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/frame.h>

#include "stream/stream_core.h"
#include "stream/stream_wire.h"

namespace wheelrpc::rpc::detail {

/// The StreamWire of a native connection's streams (one, shared by the
/// streams open on it: StreamTable::wire): each operation one frame queued on
/// `channel`. Holds the channel while a stream is carried (each lets go of it
/// when it ends). Thread-safe as Channel::send is.
class NativeStreamWire final : public StreamWire {
 public:
  /// `client`: the side this is (its frames carry the request bit).
  NativeStreamWire(std::shared_ptr<transport::Channel> channel, bool client)
      : channel_(std::move(channel)), client_(client) {}

  boost::system::error_code send_message(std::uint64_t id, std::string& payload, std::uint8_t encoding,
                                         transport::Attachments& initial) override;
  boost::system::error_code send_half_close(std::uint64_t id) override;
  boost::system::error_code send_credit(std::uint64_t id, std::uint32_t bytes) override;
  boost::system::error_code send_end(std::uint64_t id, const boost::system::error_code& ec, std::string& message,
                                     transport::Attachments& metadata) override;
  boost::system::error_code send_reset(std::uint64_t id) override;
  boost::system::error_code send_open_answer(std::uint64_t id, const boost::system::error_code& ec,
                                             std::string& message) override;

 private:
  const std::shared_ptr<transport::Channel> channel_;
  const bool client_;
};

/// A stream frame that came (not an OPEN) as the operation it stands for,
/// told to `stream`. The connection's strand; `frame` may be moved from.
void deliver_stream_frame(StreamCore& stream, transport::Frame& frame);

}  // namespace wheelrpc::rpc::detail
