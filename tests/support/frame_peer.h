#pragma once
// A blocking raw connection that speaks frames to a server: its own HELLO
// (with the attachments a test chooses), any frame, and reads frames back.
// Every read is bounded by a 10 s socket timeout: no test hangs.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::test {

class FramePeer {
 public:
  explicit FramePeer(const boost::asio::ip::tcp::endpoint& ep) : socket_(io_) {
    socket_.connect(ep);
    timeval tv{10, 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  /// Sends a HELLO with `extra` attachments (e.g. accept_encoding) and
  /// returns the server's HELLO reply.
  std::optional<transport::Frame> hello(transport::Attachments extra = {}) {
    transport::Frame f;
    f.header.flags = transport::kFlagEvent | transport::kFlagRequest | transport::kFlagTwoWay;
    f.header.request_id = 1;
    f.method = "hello";
    f.attachments = {{"version", "1"}, {"heartbeat_ms", "15000"}};
    for (auto& a : extra) f.attachments.push_back(std::move(a));
    send(f);
    return read();
  }

  void send(const transport::Frame& f) {
    std::string out;
    transport::encode_frame(f, out);
    send_bytes(out);
  }
  void send_bytes(const std::string& bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }

  /// The bytes of a two-way request, as request() sends them.
  static std::string request_bytes(std::uint64_t id, std::string method, std::string payload, std::uint8_t encoding = 0,
                                   std::uint8_t reply_encoding = 0) {
    transport::Frame f;
    f.header.flags = transport::kFlagRequest | transport::kFlagTwoWay;
    f.header.request_id = id;
    f.header.encoding = encoding;
    f.header.reply_encoding = reply_encoding;
    f.method = std::move(method);
    f.payload = std::move(payload);
    std::string out;
    transport::encode_frame(f, out);
    return out;
  }

  /// A two-way request of `method` whose payload is sent as given, with the
  /// header's encoding and reply_encoding bytes set as the test says.
  void request(std::uint64_t id, std::string method, std::string payload, std::uint8_t encoding = 0,
               std::uint8_t reply_encoding = 0) {
    send_bytes(request_bytes(id, std::move(method), std::move(payload), encoding, reply_encoding));
  }

  /// The next frame, skipping the server's heartbeats; std::nullopt when
  /// the connection closed or nothing came within 10 s.
  std::optional<transport::Frame> read() {
    for (;;) {
      transport::Frame f;
      std::size_t used = 0;
      const auto r = decoder_.decode(reinterpret_cast<const std::uint8_t*>(pending_.data()), pending_.size(), f, used);
      if (r == transport::FrameDecoder::Result::error) return std::nullopt;
      if (r == transport::FrameDecoder::Result::frame) {
        pending_.erase(0, used);
        if (f.header.is_event() && f.header.is_request() && f.method.empty()) continue;  // a heartbeat
        return f;
      }
      boost::system::error_code ec;
      const auto n = socket_.read_some(boost::asio::buffer(buf_), ec);
      if (ec) return std::nullopt;
      pending_.append(buf_.data(), n);
    }
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  transport::FrameDecoder decoder_{1u << 30};
  std::string pending_;
  std::array<char, 65536> buf_{};
};

}  // namespace wheelrpc::test
